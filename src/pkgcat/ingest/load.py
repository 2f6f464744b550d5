"""The transactional writer of an import: records in, the catalogue's packages refreshed.

Runs inside the caller's transaction (:func:`pkgcat.ingest.pipeline.import_repository`
opens it), so an import that fails anywhere leaves the catalogue as it was.

1. The source's records are loaded once, as (key, fingerprint) pairs. A
   stanza whose fingerprint is known is unchanged: it is neither parsed nor
   written. Every other stanza is parsed (:mod:`pkgcat.ingest.workers`, on
   several cores for a large index) into a new record, or an update of the
   record with its (package, version, architecture).
2. Then, and only then, the writes: one ``executemany`` for the new records
   and one for the changed ones. Reading and parsing come first so that the
   database's write lock is held for the shortest time (the server's usage
   counter waits on it).
3. Each package's best record (:mod:`pkgcat.ingest.versions`) is compared with
   the one its ``packages`` row shows; new and changed ones are copied into
   ``packages`` by two set-based statements (INSERT ... SELECT and
   UPDATE ... FROM). Prices and statistics are never touched. A package with
   no record left is set offline, never deleted: purchases refer to it.
4. Records the indexes no longer have are deleted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from sqlalchemy import (
    Boolean,
    Column,
    MetaData,
    String,
    Table,
    and_,
    bindparam,
    delete,
    false,
    insert,
    literal,
    select,
    true,
    update,
)
from sqlalchemy.engine import Connection

from pkgcat.ingest.bulk import executemany
from pkgcat.ingest.control import RECORD_COLUMNS, Record, iter_stanzas
from pkgcat.ingest.depictions import Depictions
from pkgcat.ingest.repository import Index
from pkgcat.ingest.versions import Preference, best
from pkgcat.ingest.workers import Mapped, map_stanzas
from pkgcat.storage import schema as t

MAPPING_VERSION = b"pkgcat-records-1"
"""Part of every fingerprint: change it when the mapping changes, so every record is re-read."""

Key = tuple[str, str, str]
"""(package, version, architecture)"""
Progress = Callable[[int], None]
"""Called with the number of stanzas just parsed."""

_COPIED = (
    "name", "version", "architecture", "author", "section", "description",
    "long_description", "pre_depends", "depends", "conflicts", "replaces", "size",
    "md5sum", "sha256", "compatible", "commercial", "icon", "screenshots", "url",
)  # fmt: skip
"""Columns of ``packages`` copied from the record it shows."""

_best = Table(
    "pkgcat_import_best",
    MetaData(),
    Column("package", String(255), primary_key=True),
    Column("version", String(255), nullable=False),
    Column("architecture", String(64), nullable=False),
    Column("is_new", Boolean, nullable=False),
    prefixes=["TEMPORARY"],
)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A stanza the import left out, and why."""

    index: str
    line: int
    package: str
    reason: str


@dataclass(slots=True)
class Outcome:
    """What one load did."""

    records_read: int = 0
    records_added: int = 0
    records_updated: int = 0
    records_unchanged: int = 0
    records_removed: int = 0
    packages_added: int = 0
    packages_updated: int = 0
    packages_unchanged: int = 0
    packages_set_offline: int = 0
    skipped: list[Skipped] = field(default_factory=list)


def fingerprint_key(base_url: str, depictions: str) -> bytes:
    """The blake2b key of a repository's fingerprints: what else the mapping depends on."""
    context = b"\0".join((MAPPING_VERSION, base_url.encode(), depictions.encode()))
    return hashlib.blake2b(context, digest_size=32).digest()


class Loader:
    """Loads one repository's indexes into one source, inside the caller's transaction."""

    def __init__(
        self,
        db: Connection,
        source_id: int,
        base_url: str,
        depictions: Depictions,
        preference: Preference,
        *,
        now: int,
        first_seen: int,
        refresh: bool = False,
        jobs: int = 1,
    ) -> None:
        self.db = db
        self.source_id = source_id
        self.base_url = base_url
        self.depictions = depictions
        self.preference = preference
        self.now = now
        self.first_seen = first_seen
        self.refresh = refresh
        self.jobs = jobs
        self.key = fingerprint_key(base_url, depictions.mode)
        self.outcome = Outcome()
        r = t.package_records
        rows = db.execute(
            select(r.c.id, r.c.package, r.c.version, r.c.architecture, r.c.fingerprint).where(
                r.c.source_id == source_id
            )
        ).all()
        self._ids: dict[Key, int] = {(p, v, a): i for i, p, v, a, _ in rows}
        self._known: dict[str, Key] = {fp: (p, v, a) for _, p, v, a, fp in rows}
        p = t.packages
        self._owned: dict[str, tuple[int, int | None, bool]] = {
            package: (row_id, record_id, bool(online))
            for row_id, package, record_id, online in db.execute(
                select(p.c.id, p.c.package, p.c.record_id, p.c.online).where(
                    p.c.source_id == source_id
                )
            )
        }
        self._others: dict[str, str] = dict(
            db.execute(
                select(p.c.package, t.sources.c.name)
                .join(t.sources, t.sources.c.id == p.c.source_id)
                .where(p.c.source_id != source_id)
            ).all()
        )
        self._seen_fingerprints: dict[str, str] = {}
        self._current: dict[Key, str] = {}
        """Every record of the indexes read so far: key to where it was read."""
        self._changed: set[Key] = set()
        self._indexes: list[Index] = []
        self._stanzas: list[tuple[int, int, int, int, str, Key | None]] = []
        """Every stanza read: its index's number, line, offsets, fingerprint, key if unchanged."""
        self.to_parse = 0
        """Stanzas :meth:`finish` will parse: the new and changed ones."""
        self._inserts: list[tuple[Record, str]] = []
        self._updates: list[tuple[Record, str, int]] = []

    # Records ---------------------------------------------------------------------------

    def read(self, index: Index) -> None:
        """Cut one index into stanzas and fingerprint them; nothing is parsed yet."""
        number = len(self._indexes)
        self._indexes.append(index)
        data = memoryview(index.data)
        for line, start, end in iter_stanzas(index.data):
            self.outcome.records_read += 1
            where = f"{index.name}:{line}"
            fingerprint = hashlib.blake2b(data[start:end], digest_size=16, key=self.key).hexdigest()
            first = self._seen_fingerprints.setdefault(fingerprint, where)
            if first != where:
                raw = index.data[start:end]
                self._skip(index, line, _package_of(raw), f"duplicate of the stanza at {first}")
                continue
            known = None if self.refresh else self._known.get(fingerprint)
            self._stanzas.append((number, line, start, end, fingerprint, known))
            if known is None:
                self.to_parse += 1

    def _parse(self, progress: Progress | None) -> list[Mapped]:
        """Map every stanza that is not known unchanged, in index order."""
        slices = [
            (number, start, end)
            for number, _, start, end, _, known in self._stanzas
            if known is None
        ]
        data = [index.data for index in self._indexes]
        return map_stanzas(self.base_url, data, slices, self.jobs, progress)

    def _sort(self, mapped: list[Mapped]) -> None:
        """Walk the stanzas in index order: unchanged, new, changed, or skipped and why."""
        out = self.outcome
        results = iter(mapped)
        for number, line, start, end, fingerprint, known in self._stanzas:
            index = self._indexes[number]
            where = f"{index.name}:{line}"
            if known is not None:
                if known in self._current:
                    reason = f"same Package, Version and Architecture as the stanza at {self._current[known]}"
                    self._skip(index, line, known[0], reason)
                else:
                    self._current[known] = where
                    out.records_unchanged += 1
                continue
            record = next(results)
            if isinstance(record, str):
                self._skip(index, line, _package_of(index.data[start:end]), record)
                continue
            key = (record.package, record.version, record.architecture)
            if key in self._current:
                reason = (
                    f"same Package, Version and Architecture as the stanza at {self._current[key]}"
                )
                self._skip(index, line, record.package, reason)
                continue
            owner = self._others.get(record.package)
            if owner is not None:
                self._skip(index, line, record.package, f"package belongs to source {owner!r}")
                continue
            self._current[key] = where
            self._changed.add(key)
            record_id = self._ids.get(key)
            if record_id is None:
                self._inserts.append((record, fingerprint))
            else:
                self._updates.append((record, fingerprint, record_id))
        self._stanzas = []

    def _skip(self, index: Index, line: int, package: str, reason: str) -> None:
        self.outcome.skipped.append(Skipped(index.name, line, package, reason))

    def _with_screenshots(self, records: list[Record]) -> list[Record]:
        shots = self.depictions.screenshots(r.depiction for r in records if r.depiction)
        if not shots:
            return records
        return [
            r._replace(screenshots=orjson.dumps(shots[r.depiction]).decode())
            if shots.get(r.depiction)
            else r
            for r in records
        ]

    def _flush(self) -> None:
        r = t.package_records
        if self._inserts:
            records = self._with_screenshots([record for record, _ in self._inserts])
            # In the table's column order, so the driver takes the tuples as they are.
            names = ("source_id", *RECORD_COLUMNS, "fingerprint", "first_seen", "updated_at")
            executemany(
                self.db,
                insert(r).values({name: bindparam(f"p_{name}") for name in names}),
                names,
                [
                    (self.source_id, *record, fp, self.first_seen, self.now)
                    for record, (_, fp) in zip(records, self._inserts, strict=True)
                ],
            )
            self.outcome.records_added += len(records)
        if self._updates:
            records = self._with_screenshots([record for record, _, _ in self._updates])
            changed = (*RECORD_COLUMNS, "fingerprint", "updated_at", "id")
            executemany(
                self.db,
                update(r)
                .where(r.c.id == bindparam("p_id"))
                .values({name: bindparam(f"p_{name}") for name in changed[:-1]}),
                changed,
                [
                    (*record, fp, self.now, record_id)
                    for record, (_, fp, record_id) in zip(records, self._updates, strict=True)
                ],
            )
            self.outcome.records_updated += len(records)
        self._inserts, self._updates = [], []

    # Packages --------------------------------------------------------------------------

    def finish(self, progress: Progress | None = None) -> Outcome:
        """Parse, write the new and changed records, refresh ``packages``, delete the gone."""
        self._sort(self._parse(progress))
        self._flush()
        out = self.outcome
        gone = [record_id for key, record_id in self._ids.items() if key not in self._current]
        out.records_removed = len(gone)
        by_package: dict[str, list[tuple[str, str]]] = {}
        for package, version, architecture in self._current:
            by_package.setdefault(package, []).append((version, architecture))
        rows: list[tuple[str, str, str, bool]] = []
        for package, records in by_package.items():
            version, architecture = best(records, self.preference)
            key = (package, version, architecture)
            owned = self._owned.get(package)
            if owned is None:
                rows.append((*key, True))
                out.packages_added += 1
            elif key in self._changed or not owned[2] or owned[1] != self._ids.get(key):
                rows.append((*key, False))
                out.packages_updated += 1
            else:
                out.packages_unchanged += 1
        offline = [
            (False, None, self.now, row_id)
            for package, (row_id, _, online) in self._owned.items()
            if package not in by_package and online
        ]
        out.packages_set_offline = len(offline)
        if rows:
            self._copy(rows)
        p = t.packages
        names = ("online", "record_id", "updated_at", "id")
        executemany(
            self.db,
            update(p)
            .where(p.c.id == bindparam("p_id"))
            .values({name: bindparam(f"p_{name}") for name in names[:-1]}),
            names,
            offline,
        )
        # Last: no package row points at these any more.
        executemany(
            self.db,
            delete(t.package_records).where(t.package_records.c.id == bindparam("p_id")),
            ("id",),
            [(record_id,) for record_id in gone],
        )
        return out

    def _copy(self, rows: list[tuple[str, str, str, bool]]) -> None:
        """Copy each chosen record into its package row: new rows inserted, others updated."""
        db, r, p, b = self.db, t.package_records, t.packages, _best
        _best.drop(db, checkfirst=True)
        _best.create(db)
        executemany(
            db,
            insert(b).values({c.name: bindparam(f"p_{c.name}") for c in b.columns}),
            [c.name for c in b.columns],
            rows,
        )
        chosen = and_(
            r.c.source_id == self.source_id,
            r.c.package == b.c.package,
            r.c.version == b.c.version,
            r.c.architecture == b.c.architecture,
        )
        copied = {name: r.c[name] for name in _COPIED}
        new_rows = {
            "package": r.c.package,
            "source_id": literal(self.source_id),
            **copied,
            "record_id": r.c.id,
            "released_at": r.c.first_seen,
            "online": true(),
            "created_at": literal(self.now),
            "updated_at": literal(self.now),
        }
        db.execute(
            insert(p).from_select(
                list(new_rows),
                select(*new_rows.values())
                .select_from(r.join(b, chosen))
                .where(b.c.is_new == true()),
            )
        )
        db.execute(
            update(p)
            .values(
                copied
                | {
                    "record_id": r.c.id,
                    "released_at": r.c.first_seen,
                    "online": True,
                    "updated_at": self.now,
                }
            )
            .where(p.c.source_id == self.source_id, p.c.package == b.c.package)
            .where(chosen, b.c.is_new == false())
        )
        _best.drop(db)


def _package_of(raw: bytes) -> str:
    """The Package field of a stanza, for reports, read without parsing the stanza."""
    for line in raw.split(b"\n", 40)[:40]:
        if line[:8].lower() == b"package:":
            return line[8:].strip().decode("utf-8", "replace")[:255]
    return ""
