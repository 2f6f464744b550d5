"""The published index sets: one worker among all hosts publishes, every worker serves.

The publisher is whoever holds the lease (:func:`hold`, a row of ``index_publisher``
renewed while it runs, in the database's clock). A publication (:func:`publish`) is one
row, numbered one above the highest before, holding the signed files whole and the
Packages files by SHA-256 (their bytes are in the blob store, put there before the row is
written), and a row of ``index_blobs`` for each by-hash name it lists. A worker serves the
highest numbered publication it has read (:func:`newest`), and any by-hash file named by a
publication of the last :data:`KEEP_MS` (:func:`by_hash`), so what a Release handed out by
any worker of any host names is found on every other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from pkgcat.storage import schema as t
from pkgcat.storage.webhook_leases import now_ms, unflushed

KEEP_MS = 3600 * 1000
"""How long a by-hash file stays served after the last publication that named it was
superseded: apt keeps a Release and fetches what it names later; an update takes far
less than this."""
KEPT_PUBLICATIONS = 3
"""Publications kept as rows (a worker needs only the newest; a few for an operator)."""


@dataclass(frozen=True, slots=True)
class Publication:
    number: int
    generation: int
    period: int
    made_from: str
    made_ms: int
    files: bytes


@dataclass(frozen=True, slots=True)
class Named:
    """A by-hash file: its by-hash name (``SHA512/<hex>``), its blob, size and media type."""

    digest: str
    sha256: str
    size: int
    media_type: str


def hold(engine: Engine, owner: str, lease_ms: int) -> bool:
    """Take or renew the publisher's lease for ``owner``; whether it holds it now."""
    p = t.index_publisher
    with engine.connect() as db:
        found = db.execute(select(p.c.owner, p.c.until_ms >= now_ms(db))).first()
    if found is not None and found[0] != owner and found[1]:
        return False  # another's, running: no write (on SQLite, no write lock taken)
    with engine.begin() as db:
        unflushed(db)
        until = now_ms(db) + lease_ms
        taken = db.execute(
            update(p)
            .where(p.c.id == 1, (p.c.owner == owner) | (p.c.until_ms < now_ms(db)))
            .values(owner=owner, until_ms=until)
        )
        if taken.rowcount:
            return True
        if db.execute(select(p.c.id)).first() is not None:
            return False
        try:
            with db.begin_nested():
                db.execute(insert(p).values(id=1, owner=owner, until_ms=until))
        except IntegrityError:
            return False  # another worker's first lease, at the same moment
        return True


def let_go(engine: Engine, owner: str) -> None:
    """``owner`` stops: another worker may publish at once."""
    p = t.index_publisher
    with engine.begin() as db:
        db.execute(update(p).where(p.c.owner == owner).values(until_ms=0))


def newest_number(engine: Engine) -> int:
    """The highest publication's number (0: none yet)."""
    with engine.connect() as db:
        found = db.execute(select(func.max(t.index_publications.c.number))).scalar()
        return int(found or 0)


def newest(engine: Engine, above: int = 0, *, files: bool = True) -> Publication | None:
    """The highest publication, when its number is above ``above`` (without ``files``: its
    files left out, as ``b""``)."""
    i = t.index_publications
    columns = [i.c.number, i.c.generation, i.c.period, i.c.made_from, i.c.made_ms]
    if files:
        columns.append(i.c.files)
    with engine.connect() as db:
        row = db.execute(
            select(*columns).where(i.c.number > above).order_by(i.c.number.desc()).limit(1)
        ).first()
    if row is None:
        return None
    return Publication(
        int(row.number),
        int(row.generation),
        int(row.period),
        row.made_from,
        int(row.made_ms),
        bytes(row.files) if files else b"",
    )


def by_hash(engine: Engine, digest: str) -> Named | None:
    """The blob of a by-hash file published lately (``digest``: ``SHA256/<hex>``...)."""
    b = t.index_blobs
    with engine.connect() as db:
        row = db.execute(select(b).where(b.c.digest == digest)).first()
    if row is None:
        return None
    return Named(row.digest, row.sha256, int(row.size), row.media_type)


def publish(
    engine: Engine,
    owner: str,
    fields: dict[str, Any],
    named: list[Named],
) -> tuple[int | None, list[str]]:
    """Publish one index set as the next number, if ``owner`` holds the lease and no newer
    catalogue generation was published; its number (None: not published) and the blobs no
    longer named by any publication of the last :data:`KEEP_MS` (to delete from the store).

    ``fields``: ``generation``, ``period``, ``made_from``, ``files``; every blob ``named``
    lists is in the store already.
    """
    p, i, b = t.index_publisher, t.index_publications, t.index_blobs
    with engine.begin() as db:
        # Renewing the lease locks its row: publications are written one after another.
        held = db.execute(
            update(p)
            .where(p.c.id == 1, p.c.owner == owner, p.c.until_ms >= now_ms(db))
            .values(until_ms=p.c.until_ms)
        )
        if not held.rowcount:
            return None, []
        last = db.execute(
            select(i.c.number, i.c.generation, i.c.made_ms).order_by(i.c.number.desc()).limit(1)
        ).first()
        if last is not None and int(last.generation) > fields["generation"]:
            return None, []  # built from an older snapshot than one published already
        number = 1 if last is None else int(last.number) + 1
        made = db.execute(select(now_ms(db))).scalar_one()
        db.execute(insert(i).values(number=number, made_ms=made, **fields))
        if last is not None:
            # What the publication before named (its rows carry its time) was served until
            # now: kept from now on, dated a millisecond before this publication's own rows.
            db.execute(update(b).where(b.c.named_ms == last.made_ms).values(named_ms=made - 1))
        digests = [one.digest for one in named]
        db.execute(update(b).where(b.c.digest.in_(digests)).values(named_ms=made))
        known = set(db.execute(select(b.c.digest).where(b.c.digest.in_(digests))).scalars())
        new = [one for one in named if one.digest not in known]
        if new:
            db.execute(
                insert(b),
                [
                    {
                        "digest": one.digest,
                        "sha256": one.sha256,
                        "size": one.size,
                        "media_type": one.media_type,
                        "named_ms": made,
                    }
                    for one in new
                ],
            )
        return number, _forget(db, number, made)


def _forget(db: Connection, number: int, now: int) -> list[str]:
    """Drop what no publication named for :data:`KEEP_MS`; the blobs no row names any more."""
    i, b = t.index_publications, t.index_blobs
    db.execute(delete(i).where(i.c.number <= number - KEPT_PUBLICATIONS))
    old = set(db.execute(select(b.c.sha256).where(b.c.named_ms < now - KEEP_MS)).scalars())
    if not old:
        return []
    db.execute(delete(b).where(b.c.named_ms < now - KEEP_MS))
    named = set(db.execute(select(b.c.sha256).where(b.c.sha256.in_(old))).scalars())
    debs = set(
        db.execute(select(t.deb_files.c.sha256).where(t.deb_files.c.sha256.in_(old))).scalars()
    )
    return sorted(old - named - debs)
