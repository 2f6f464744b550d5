"""A published .deb's database side: its file row, its catalogue record and its package row.

One transaction writes all three, so the catalogue never shows a published
version whose file is not listed, nor lists a file without its record:

- ``deb_files``: the file (digests, control paragraph), unique per
  (package, version, architecture);
- ``package_records``: the record its control file makes, as an import would
  write it (a record of the same key, imported earlier, is updated in place);
- ``packages``: the package's row copied from its best record (newest version,
  then the preferred architecture), created online if the package is new. Its
  price and statistics are never touched.

Triggers move the catalogue generation in the same transaction: details, and
the served repository's indexes, follow.

Package ids and versions are compared as apt and dpkg compare them, not as
strings: a package id without regard to letter case (apt's pkgCache hashes and
matches names case-insensitively; Debian policy 5.6.1 allows lower case only),
a version by dpkg's order (``0:1.0`` is ``1.0``). The transaction checks both
again under a lock (:func:`check_key`), and the unique index of migration 0011
on ``lower(package)`` makes the database refuse a second source's package of the
same id in any letter case, whatever races it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import NamedTuple

from debian.debian_support import Version
from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.events import package_event
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.records import RECORD_COLUMNS, Record
from pkgcat.storage.shop.pages import apply_pages
from pkgcat.storage.shop.versions import listed, listing, unpin_for
from pkgcat.storage.writes import outbox
from pkgcat.storage.writes.imports import _copy_statements
from pkgcat.versions import Preference, best


@dataclass(frozen=True, slots=True)
class Owner:
    """What the catalogue already says about a file about to be published."""

    package_source: str | None
    """The name of the source that owns the package already (in any letter case), if any."""
    package: str | None
    """The package's id as that source holds it (its letter case may differ)."""
    stored: str | None
    """The SHA-256 of the file already published for this package, an equal version and the
    architecture."""
    stored_version: str | None
    """That file's version, as it was spelt when published (``1.0`` for a ``0:1.0`` sent)."""


def source_address(engine: Engine, name: str) -> tuple[int, str] | None:
    """The id and address of the source ``name``, or None when there is none."""
    s = t.sources
    with engine.connect() as db:
        found = db.execute(select(s.c.id, s.c.url).where(s.c.name == name)).first()
    return None if found is None else (found.id, found.url)


def read_owner(engine: Engine, package: str, version: str, architecture: str) -> Owner:
    """The package's owner and the file published under an equal key, in one short read."""
    with engine.connect() as db:
        return _owner(db, package, version, architecture)


def _owner(
    db: Connection, package: str, version: str, architecture: str, *, lock: bool = False
) -> Owner:
    s, p, d = t.sources, t.packages, t.deb_files
    query = (
        select(s.c.name, p.c.package)
        .join(p, p.c.source_id == s.c.id)
        .where(func.lower(p.c.package) == package.lower())
        .order_by(p.c.id)
        .limit(1)
    )
    if lock and db.dialect.name == "postgresql":
        # Publishes of one package wait for each other here, so that the second one's
        # read of deb_files below sees the first one's file once it has committed.
        query = query.with_for_update(of=p)
    owner = db.execute(query).first()
    wanted = Version(version)
    stored = next(
        (
            (row.sha256, row.version)
            for row in db.execute(
                # A package's files are under its id as its row spells it (one spelling per
                # package: the index of migration 0011), found through uq_deb_files_key.
                select(d.c.sha256, d.c.version)
                .where(
                    d.c.package == (package if owner is None else owner.package),
                    d.c.architecture == architecture,
                )
                .order_by(d.c.stored_at, d.c.sha256)
            )
            if Version(row.version) == wanted
        ),
        (None, None),
    )
    return Owner(
        package_source=None if owner is None else owner.name,
        package=None if owner is None else owner.package,
        stored=stored[0],
        stored_version=stored[1],
    )


class KeyTaken(Exception):
    """The package belongs to another source, or an equal version holds other bytes."""

    def __init__(self, owner: Owner) -> None:
        super().__init__(owner)
        self.owner = owner


def check_key(owner: Owner, source: str, package: str, sha256: str) -> bool:
    """Whether the file is new; :class:`KeyTaken` when it may not be published to ``source``."""
    if owner.package_source is not None and (
        owner.package_source != source or owner.package != package
    ):
        raise KeyTaken(owner)
    if owner.stored is not None and owner.stored != sha256:
        raise KeyTaken(owner)
    return owner.stored is None


def fingerprint(control: str) -> str:
    """The record's fingerprint: of its control paragraph (32 hex digits, as imports make them)."""
    return hashlib.blake2b(control.encode(), digest_size=16).hexdigest()


def write_published(
    engine: Engine,
    *,
    source_id: int,
    source: str,
    record: Record,
    control: str,
    digests: tuple[int, str, str, str, str],
    preference: Preference,
    now: int,
) -> bool:
    """Write the file, its record and its package row in one transaction; whether new.

    ``digests``: size, MD5, SHA-1, SHA-256 and SHA-512 of the file. The owner and
    the stored file are read again first, under the write lock (SQLite) or the
    package row's lock (PostgreSQL): :class:`KeyTaken` when another publish made
    the file unfit meanwhile, False (nothing written) when it published these very
    bytes. Raises SQLAlchemy's ``IntegrityError`` when another publish took the
    same package or key first.
    """
    with write_transaction(engine) as db:
        key = (record.package, record.version, record.architecture)
        owner = _owner(db, *key, lock=True)
        if not check_key(owner, source, record.package, digests[3]):
            return False
        _insert_file(db, FileRow(source_id, key, control, digests, now))
        _write_record(db, source_id, record, fingerprint(control), now)
        unpin_for(db, _package_id(db, source_id, record.package), record.version)
        new = _show_best(db, source_id, record.package, preference, now)
        if source_id in outbox.listening(db, (source_id,)):
            outbox.emit(db, [package_event(new, source_id, *key)], now=now)
    return True


def _write_record(db: Connection, source_id: int, record: Record, print_: str, now: int) -> None:
    r = t.package_records
    values = dict(zip(RECORD_COLUMNS, record, strict=True))
    existing = db.execute(
        select(r.c.id).where(
            r.c.source_id == source_id,
            r.c.package == record.package,
            r.c.version == record.version,
            r.c.architecture == record.architecture,
        )
    ).scalar()
    if existing is None:
        db.execute(
            insert(r).values(
                source_id=source_id, **values, fingerprint=print_, first_seen=now, updated_at=now
            )
        )
    else:
        db.execute(
            update(r).where(r.c.id == existing).values(**values, fingerprint=print_, updated_at=now)
        )


def _package_id(db: Connection, source_id: int, package: str) -> int | None:
    p = t.packages
    found = db.execute(
        select(p.c.id).where(p.c.source_id == source_id, p.c.package == package)
    ).scalar()
    return None if found is None else int(found)


def reshow(db: Connection, source_id: int, package: str, preference: Preference, now: int) -> None:
    """Show the package row's best listed record again (a version released, rolled back to or
    withdrawn), with its page over it."""
    _show_best(db, source_id, package, preference, now)


def _show_best(
    db: Connection, source_id: int, package: str, preference: Preference, now: int
) -> bool:
    """The package row shows its best listed record (not withdrawn, not newer than the
    version its seller rolled back to), as after an import, with its page's values over
    it; whether the row is new."""
    r = t.package_records
    row = _package_id(db, source_id, package)
    withdrawn, pin = listing(db, row)
    records = [
        (version, architecture)
        for version, architecture in db.execute(
            select(r.c.version, r.c.architecture).where(
                r.c.source_id == source_id, r.c.package == package
            )
        )
    ]
    version, architecture = best(
        [one for one in records if listed(one[0], withdrawn, pin)] or records, preference
    )
    insert_row, update_row = _copy_statements()
    db.execute(
        insert_row if row is None else update_row,
        {
            "p_source_id": source_id,
            "p_package": package,
            "p_version": version,
            "p_architecture": architecture,
            "p_now": now,
        },
    )
    g = t.package_pages
    apply_pages(db, (g.c.source_id == source_id) & (g.c.package_id == row))
    return row is None


def source_name(engine: Engine, source_id: int) -> str | None:
    """The name of the source with this id, or None when there is none (any more)."""
    with engine.connect() as db:
        return db.execute(select(t.sources.c.name).where(t.sources.c.id == source_id)).scalar()


def imported_keys(engine: Engine, source_id: int) -> set[tuple[str, str, str]]:
    """The (package, version, architecture) of every record the source holds."""
    r = t.package_records
    with engine.connect() as db:
        found = db.execute(
            select(r.c.package, r.c.version, r.c.architecture).where(r.c.source_id == source_id)
        )
        return {(row.package, row.version, row.architecture) for row in found}


def stored_file(engine: Engine, package: str, version: str, architecture: str) -> str | None:
    """The SHA-256 of the file held for this (package, version, architecture), if any."""
    d = t.deb_files
    with engine.connect() as db:
        return db.execute(
            select(d.c.sha256).where(
                d.c.package == package, d.c.version == version, d.c.architecture == architecture
            )
        ).scalar()


class FileRow(NamedTuple):
    """A stored .deb's row of ``deb_files``."""

    source_id: int
    key: tuple[str, str, str]
    """Its package, version and architecture."""
    control: str
    digests: tuple[int, str, str, str, str]
    """Size, MD5, SHA-1, SHA-256 and SHA-512 of the file."""
    now: int


def write_mirrored(engine: Engine, row: FileRow) -> None:
    """The file row of a .deb copied from an imported repository; its record is the import's.

    Raises SQLAlchemy's ``IntegrityError`` when a file of the same key was stored meanwhile.
    """
    with engine.begin() as db:
        _insert_file(db, row)


def _insert_file(db: Connection, row: FileRow) -> None:
    size, md5sum, sha1, sha256, sha512 = row.digests
    package, version, architecture = row.key
    db.execute(
        insert(t.deb_files).values(
            sha256=sha256,
            source_id=row.source_id,
            package=package,
            version=version,
            architecture=architecture,
            size=size,
            md5sum=md5sum,
            sha1=sha1,
            sha512=sha512,
            control=row.control,
            stored_at=row.now,
        )
    )
