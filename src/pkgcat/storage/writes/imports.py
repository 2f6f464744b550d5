"""A repository import's database side: one short read first, the plan's writes last.

:mod:`pkgcat.ingest` reads a repository, verifies it, parses it and fetches
its depictions while the database is only read: :func:`read_source` takes
what the source holds (its records' keys and fingerprints, its package rows,
and which packages other sources own) in one short read. From that, the
import builds an :class:`ImportPlan`; only then does :func:`apply_import`
write, in short transactions, so the database's write lock is never held
while the network or the parser works, nor for long while the writes go in.
A server counting requests on the same SQLite file waits for one of them at
most (see :data:`TRANSACTION_SECONDS` and :data:`PAUSE_SECONDS`).

Consistency:

- **A bad repository changes nothing.** The whole input is read, verified
  and parsed before the first write; any error until then writes nothing.
- **Each transaction leaves a consistent catalogue.** The source is created
  (or its url, label and origin updated) at the start of the first
  transaction. Then come the packages, in chunks of about :data:`CHUNK_ROWS`
  rows, each package whole in one chunk and each chunk whole in one
  transaction: its new and changed records first, then its ``packages`` row
  copied from its best record (or set offline). A package row therefore only
  ever points at a record that exists and shows what that record holds. The
  records the index no longer has are deleted last, when no package row
  points at them any more.
- **An interrupted import is completed by the next.** If the process dies
  during the writes, the catalogue holds a consistent prefix: some packages
  written whole, the others as they were, and perhaps records no longer in
  the index. Each record keeps the fingerprint of its stanza, so the next
  import of the same repository finds the written ones unchanged and
  their package rows up to date, writes the rest, and deletes what is gone.
  Were records and package rows written in separate transactions, a record
  updated in place (same id, new fingerprint) would look unchanged to the
  next import while its package row still showed the old one.

Two imports of the same source at the same time are not supported: the second
one's plan is out of date once the first writes, and its writes may fail.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy import (
    BigInteger,
    Engine,
    Integer,
    String,
    and_,
    bindparam,
    delete,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.dml import UpdateBase

from pkgcat.events import package_event
from pkgcat.storage import schema as t
from pkgcat.storage.shop.pages import apply_pages
from pkgcat.storage.writes import outbox, sources
from pkgcat.storage.writes.bulk import Prepared, prepare, run

CHUNK_ROWS = 500
"""Rows (records and package rows, of whole packages) written together: the unit of a transaction.

Small enough that a transaction ends close to :data:`TRANSACTION_SECONDS`
even on a slow machine (500 rows take 10 to 50 ms), large enough that the
fixed cost of a chunk (five driver calls) is small beside its rows.
"""
TRANSACTION_SECONDS = 0.2
"""A transaction takes chunks until it has held the write lock this long, then commits.

Measured on a 2-vCPU machine, importing Debian's main index (63,440 records)
while another connection committed a count every 20 ms: the import wrote in
10 to 14 transactions, and no count waited more than 0.25 s. In one
transaction, as before, the writes alone held the lock 2.4 s, and a new
source's import 9.5 s. Shorter transactions would add pauses (each one costs
the import :data:`PAUSE_SECONDS`) for little gain: the server's commits wait
up to 10 s before a request fails.
"""
PAUSE_SECONDS = 0.05
"""After each commit on SQLite, the lock is left free this long before the next transaction.

SQLite has one write lock and no queue for it: a connection that finds it
taken sleeps and tries again (SQLite's busy handler sleeps up to 50 ms
between tries in its first third of a second, the server's group commit up to
50 ms), so an import that began its next transaction at once (a few
milliseconds later) would keep the lock nearly all the time, and a waiting
count could miss the gaps for seconds: measured, up to 1.1 s behind
transactions of 0.1 s. A pause as long as their longest sleep lets every
waiting count in at the next one, as long as a transaction is shorter than
that third of a second: none waits much more than one transaction.
PostgreSQL locks rows, not the database: no pause there.
"""

_COPIED = (
    "name", "version", "architecture", "author", "section", "description",
    "long_description", "pre_depends", "depends", "conflicts", "replaces", "size",
    "md5sum", "sha256", "compatible", "commercial", "icon", "screenshots", "url",
)  # fmt: skip
"""Columns of ``packages`` copied from the record it shows."""

# What a source holds ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceRow:
    id: int
    name: str
    url: str
    label: str
    origin: str


@dataclass(frozen=True, slots=True)
class SourceState:
    """What one source holds before an import: everything its plan is made from."""

    source: SourceRow | None
    """None: no source has the name yet."""
    records: list[tuple[int, str, str, str, str]]
    """Each record as (id, package, version, architecture, fingerprint)."""
    owned: dict[str, tuple[int, int | None, bool]]
    """Each package row of the source: package to (row id, record id, online)."""
    others: dict[str, str]
    """Each package of another source: package to that source's name."""


def read_source(engine: Engine, name: str) -> SourceState:
    """What the source ``name`` holds, in one short read (nothing written, no lock kept)."""
    s, r, p = t.sources, t.package_records, t.packages
    with engine.connect() as db:
        row = db.execute(
            select(s.c.id, s.c.name, s.c.url, s.c.label, s.c.origin).where(s.c.name == name)
        ).first()
        if row is None:
            source = None
            records: list[tuple[int, str, str, str, str]] = []
            owned: dict[str, tuple[int, int | None, bool]] = {}
            others_query = select(p.c.package, s.c.name).join(s, s.c.id == p.c.source_id)
        else:
            source = SourceRow(row.id, row.name, row.url, row.label, row.origin)
            records = [
                (i, package, version, architecture, fingerprint)
                for i, package, version, architecture, fingerprint in db.execute(
                    select(
                        r.c.id, r.c.package, r.c.version, r.c.architecture, r.c.fingerprint
                    ).where(r.c.source_id == source.id)
                )
            ]
            owned = {
                package: (row_id, record_id, bool(online))
                for row_id, package, record_id, online in db.execute(
                    select(p.c.id, p.c.package, p.c.record_id, p.c.online).where(
                        p.c.source_id == source.id
                    )
                )
            }
            others_query = (
                select(p.c.package, s.c.name)
                .join(s, s.c.id == p.c.source_id)
                .where(p.c.source_id != source.id)
            )
        others: dict[str, str] = dict(db.execute(others_query).all())
    return SourceState(source, records, owned, others)


# The plan --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceWrite:
    """The source an import writes to: a new one (``id`` None), or changes to an existing one.

    For a new source, ``url`` is required and ``origin`` and ``label`` default
    to empty; for an existing one, each field that is not None is set.
    """

    name: str
    id: int | None
    url: str | None = None
    origin: str | None = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class ImportPlan:
    """Every change an import makes, decided before the first write."""

    source: SourceWrite
    columns: tuple[str, ...]
    """The ``package_records`` column of each value of a record, ``package`` among them."""
    now: int
    """When the import runs: the ``updated_at`` of what it writes."""
    first_seen: int
    """The ``first_seen`` of the records it adds."""
    inserts: Sequence[tuple[tuple[Any, ...], str]] = ()
    """New records: (values, fingerprint)."""
    updates: Sequence[tuple[tuple[Any, ...], str, int]] = ()
    """Changed records, updated in place: (values, fingerprint, record id)."""
    shown: Sequence[tuple[str, str, str, bool]] = ()
    """Package rows to copy from their best record: (package, version, architecture, is new)."""
    offline: Sequence[tuple[str, int]] = ()
    """Package rows with no record left, set offline: (package, row id)."""
    gone: Sequence[int] = ()
    """Records the indexes no longer have, deleted last."""


@dataclass(slots=True)
class _Chunk:
    """The writes of some whole packages, never split between two transactions."""

    inserts: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)
    updates: list[tuple[tuple[Any, ...], str, int]] = field(default_factory=list)
    shown: list[tuple[str, str, str, bool]] = field(default_factory=list)
    offline: list[tuple[str, int]] = field(default_factory=list)


def _chunks(plan: ImportPlan, size: int) -> list[_Chunk]:
    """The plan's package writes cut into chunks of about ``size`` rows, never splitting a package.

    A package with more rows than ``size`` makes a chunk of its own.
    """
    package = plan.columns.index("package")
    names: list[str] = [values[package] for values, _ in plan.inserts]
    names += [values[package] for values, _, _ in plan.updates]
    names += [shown[0] for shown in plan.shown]
    names += [offline[0] for offline in plan.offline]
    rows = Counter(names)  # in the order first met: the index's order, roughly
    number: dict[str, int] = {}
    count = filled = 0
    for name, weight in rows.items():
        if filled and filled + weight > size:
            count, filled = count + 1, 0
        number[name] = count
        filled += weight
    chunks = [_Chunk() for _ in range(count + 1 if rows else 0)]
    for insert_row in plan.inserts:
        chunks[number[insert_row[0][package]]].inserts.append(insert_row)
    for update_row in plan.updates:
        chunks[number[update_row[0][package]]].updates.append(update_row)
    for shown in plan.shown:
        chunks[number[shown[0]]].shown.append(shown)
    for offline in plan.offline:
        chunks[number[offline[0]]].offline.append(offline)
    return chunks


def _batches(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# The writes ------------------------------------------------------------------------------------


def apply_import(engine: Engine, plan: ImportPlan) -> int:
    """Write ``plan`` in short transactions (see the module's docstring); the source's id.

    Raises :class:`~pkgcat.storage.writes.sources.AdminError` when the source
    breaks the rule of sources (another command created one of the same name
    since the import read it, say): that is the first write, so nothing is written.
    """
    # Read when called, not when defined: the tests make them small.
    size, budget = CHUNK_ROWS, TRANSACTION_SECONDS
    pause = PAUSE_SECONDS if engine.dialect.name == "sqlite" else 0.0
    sql = _Statements.prepare(engine.dialect, plan.columns)
    steps: list[Callable[[Connection, int], None]] = [
        partial(_write_packages, sql=sql, plan=plan, chunk=chunk) for chunk in _chunks(plan, size)
    ]
    # Last: once the package rows above are written, none points at these any more.
    steps += [partial(_delete, sql=sql, ids=ids) for ids in _batches(plan.gone, size)]
    # The sellers' pages over what the repository says (one statement: sources with none
    # update no row).
    steps.append(_pages_again)
    source_id: int | None = None
    done = 0
    while source_id is None or done < len(steps):
        if source_id is not None and pause:
            time.sleep(pause)
        with engine.begin() as db:
            started = time.monotonic()
            if source_id is None:
                source_id = _write_source(db, plan.source, plan.now)
            while done < len(steps):
                steps[done](db, source_id)
                done += 1
                if time.monotonic() - started >= budget:
                    break
    return source_id


@dataclass(frozen=True, slots=True)
class _Statements:
    """Every statement of an import's writes, compiled once for all its chunks."""

    insert_records: Prepared
    update_records: Prepared
    insert_packages: Prepared
    update_packages: Prepared
    set_offline: Prepared
    delete_records: Prepared

    @classmethod
    def prepare(cls, dialect: Dialect, columns: Sequence[str]) -> _Statements:
        r, p = t.package_records, t.packages
        # In the table's column order, so the driver takes the tuples as they are.
        added = ("source_id", *columns, "fingerprint", "first_seen", "updated_at")
        changed = (*columns, "fingerprint", "updated_at", "id")
        offline = ("online", "record_id", "updated_at", "id")
        chosen = ("source_id", "package", "version", "architecture", "now")
        insert_packages, update_packages = _copy_statements()
        return cls(
            insert_records=prepare(
                dialect, insert(r).values({n: bindparam(f"p_{n}") for n in added}), added
            ),
            update_records=prepare(
                dialect,
                update(r)
                .where(r.c.id == bindparam("p_id"))
                .values({n: bindparam(f"p_{n}") for n in changed[:-1]}),
                changed,
            ),
            insert_packages=prepare(dialect, insert_packages, chosen),
            update_packages=prepare(dialect, update_packages, chosen),
            set_offline=prepare(
                dialect,
                update(p)
                .where(p.c.id == bindparam("p_id"))
                .values({n: bindparam(f"p_{n}") for n in offline[:-1]}),
                offline,
            ),
            delete_records=prepare(dialect, delete(r).where(r.c.id == bindparam("p_id")), ("id",)),
        )


def _copy_statements() -> tuple[UpdateBase, UpdateBase]:
    """How a package row is copied from its chosen record: a new row inserted, or updated.

    One INSERT ... SELECT or UPDATE ... FROM per package row: the records'
    columns never travel through Python, an unchanged record chosen anew
    (another architecture preference) needs no parsing, and each statement
    finds its record and its row by their unique keys, so a chunk costs the
    same however large the source (a join with a table of the chunk's keys
    lets SQLite's planner walk all the source's records for every chunk).
    Prices and statistics are never touched.
    """
    r, p = t.package_records, t.packages
    source = bindparam("p_source_id", type_=Integer)
    chosen = and_(
        r.c.source_id == source,
        r.c.package == bindparam("p_package", type_=String),
        r.c.version == bindparam("p_version", type_=String),
        r.c.architecture == bindparam("p_architecture", type_=String),
    )
    now = bindparam("p_now", type_=BigInteger)
    copied = {name: r.c[name] for name in _COPIED}
    new_rows: Mapping[str, Any] = {
        "package": r.c.package,
        "source_id": r.c.source_id,
        **copied,
        "record_id": r.c.id,
        "released_at": r.c.first_seen,
        "online": true(),
        "created_at": now,
        "updated_at": now,
    }
    shown = {
        "record_id": r.c.id,
        "released_at": r.c.first_seen,
        "online": true(),
        "updated_at": now,
    }
    return (
        insert(p).from_select(list(new_rows), select(*new_rows.values()).where(chosen)),
        update(p)
        .values(copied | shown)
        .where(p.c.source_id == source, p.c.package == r.c.package, chosen),
    )


def _write_source(db: Connection, source: SourceWrite, now: int) -> int:
    if source.id is None:
        assert source.url is not None, "a new source needs a url"
        created = sources.add_source(
            db,
            source.name,
            source.url,
            now=now,
            origin=source.origin or "",
            label=source.label or "",
        )
        return created.id
    sources.update_source(db, source.id, url=source.url, origin=source.origin, label=source.label)
    return source.id


def _write_packages(
    db: Connection, source_id: int, *, sql: _Statements, plan: ImportPlan, chunk: _Chunk
) -> None:
    """Some packages whole: their new and changed records, then their package rows."""
    now = plan.now
    run(
        db,
        sql.insert_records,
        [(source_id, *values, fp, plan.first_seen, now) for values, fp in chunk.inserts],
    )
    run(
        db,
        sql.update_records,
        [(*values, fp, now, record_id) for values, fp, record_id in chunk.updates],
    )
    run(
        db,
        sql.insert_packages,
        [(source_id, package, v, a, now) for package, v, a, new in chunk.shown if new],
    )
    run(
        db,
        sql.update_packages,
        [(source_id, package, v, a, now) for package, v, a, new in chunk.shown if not new],
    )
    run(db, sql.set_offline, [(False, None, now, row_id) for _, row_id in chunk.offline])
    if chunk.shown and source_id in outbox.listening(db, (source_id,)):
        events = [
            package_event(new, source_id, package, version, architecture)
            for package, version, architecture, new in chunk.shown
        ]
        outbox.emit(db, events, now=now)


def _pages_again(db: Connection, source_id: int) -> None:
    apply_pages(db, t.package_pages.c.source_id == source_id)


def _delete(db: Connection, _source_id: int, *, sql: _Statements, ids: Sequence[int]) -> None:
    run(db, sql.delete_records, [(record_id,) for record_id in ids])
