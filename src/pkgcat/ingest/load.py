"""The plan of an import: records in, every change decided before anything is written.

Nothing here writes. :func:`pkgcat.storage.writes.imports.read_source` reads
what the source holds; from it and the indexes, :class:`Loader` makes the
:class:`~pkgcat.storage.writes.imports.ImportPlan` that
:func:`~pkgcat.storage.writes.imports.apply_import` writes afterwards.

1. A stanza whose fingerprint the source knows is unchanged: it is neither
   parsed nor written. Every other stanza is parsed (:mod:`pkgcat.ingest.workers`,
   on several cores for a large index) into a new record, or an update of the
   record with its (package, version, architecture).
2. The depictions of the new and changed records are read for their
   screenshots (:mod:`pkgcat.ingest.depictions`), over the network if need be.
3. Each package's best record (:mod:`pkgcat.versions`) is compared with
   the one its ``packages`` row shows: new and changed ones are to be copied
   into ``packages``. A package with no record left is to be set offline,
   never deleted: purchases refer to it.
4. Records the indexes no longer have are to be deleted.

Indexes that hold stanzas of which none makes a record are refused whole: read
that way, a damaged or hostile index would set every package of the source offline.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain

import orjson

from pkgcat.ingest.control import iter_stanzas
from pkgcat.ingest.depictions import Depictions
from pkgcat.ingest.errors import IngestError
from pkgcat.ingest.limits import ImportLimits
from pkgcat.ingest.repository import Index
from pkgcat.ingest.workers import Mapped, map_stanzas
from pkgcat.storage.records import RECORD_COLUMNS, Record
from pkgcat.storage.writes.imports import ImportPlan, SourceState, SourceWrite
from pkgcat.versions import Preference, best

MAPPING_VERSION = b"pkgcat-records-2"
"""Part of every fingerprint: change it when the mapping changes, so every record is re-read."""

Key = tuple[str, str, str]
"""(package, version, architecture)"""
Progress = Callable[[int], None]
"""Called with the number of stanzas just parsed."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A stanza the import left out, and why."""

    index: str
    line: int
    package: str
    reason: str


@dataclass(slots=True)
class Outcome:
    """What one import does."""

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
    """Plans the import of one repository's indexes into one source; writes nothing."""

    def __init__(
        self,
        state: SourceState,
        source: SourceWrite,
        base_url: str,
        depictions: Depictions,
        preference: Preference,
        *,
        now: int,
        first_seen: int,
        refresh: bool = False,
        jobs: int = 1,
        limits: ImportLimits | None = None,
    ) -> None:
        self.source = source
        self.base_url = base_url
        self.depictions = depictions
        self.preference = preference
        self.now = now
        self.first_seen = first_seen
        self.refresh = refresh
        self.jobs = jobs
        self.limits = limits or ImportLimits()
        self.key = fingerprint_key(base_url, depictions.mode)
        self.outcome = Outcome()
        self._ids: dict[Key, int] = {(p, v, a): i for i, p, v, a, _ in state.records}
        self._known: dict[str, Key] = {fp: (p, v, a) for _, p, v, a, fp in state.records}
        self._owned = state.owned
        # apt reads package names without regard to case: by the id in lower case, who holds
        # it (another source, then its spelling), and how this source spells it.
        self._others = {
            package.lower(): (owner, package) for package, owner in state.others.items()
        }
        self._spelt = {package.lower(): package for package in state.owned}
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
        return map_stanzas(self.base_url, self.limits, data, slices, self.jobs, progress)

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
            taken = self._taken(record.package)
            if taken is not None:
                self._skip(index, line, record.package, taken)
                continue
            self._current[key] = where
            self._changed.add(key)
            record_id = self._ids.get(key)
            if record_id is None:
                self._inserts.append((record, fingerprint))
            else:
                self._updates.append((record, fingerprint, record_id))
        self._stanzas = []

    def _taken(self, package: str) -> str | None:
        """Why the package id is not this source's to hold (None: it is).

        One package row per id in any letter case (migration 0011): a stanza whose id
        another source holds in any case is skipped, and so is one that differs only in
        case from an id this source holds already or read earlier in this import.
        """
        if package in self._owned:
            return None
        folded = package.lower()
        other = self._others.get(folded)
        if other is not None:
            owner, spelt = other
            if spelt == package:
                return f"package belongs to source {owner!r}"
            return f"package belongs to source {owner!r} (as {spelt!r}, in another letter case)"
        spelt = self._spelt.setdefault(folded, package)
        if spelt != package:
            return f"same package as {spelt!r} in another letter case"
        return None

    def _skip(self, index: Index, line: int, package: str, reason: str) -> None:
        self.outcome.skipped.append(Skipped(index.name, line, package, reason))

    def _screenshots(self) -> None:
        """Give each new and changed record the screenshots of its depiction (read once each)."""
        records = chain((r for r, _ in self._inserts), (r for r, _, _ in self._updates))
        shots = self.depictions.screenshots(r.depiction for r in records if r.depiction)
        if not shots:
            return

        def with_shots(record: Record) -> Record:
            found = shots.get(record.depiction)
            return record._replace(screenshots=orjson.dumps(found).decode()) if found else record

        self._inserts = [(with_shots(record), fp) for record, fp in self._inserts]
        self._updates = [(with_shots(record), fp, i) for record, fp, i in self._updates]

    # Packages --------------------------------------------------------------------------

    def finish(self, progress: Progress | None = None) -> ImportPlan:
        """Parse, read the depictions, and decide every write; :attr:`outcome` counts them."""
        self._sort(self._parse(progress))
        out = self.outcome
        if out.skipped and not self._current:
            # A bombed or broken index would otherwise set every package of the source offline.
            first = out.skipped[0]
            raise IngestError(
                f"none of the {out.records_read} stanzas read makes a record "
                f"(the first, {first.index}:{first.line}: {first.reason})"
            )
        self._screenshots()
        out.records_added = len(self._inserts)
        out.records_updated = len(self._updates)
        gone = [record_id for key, record_id in self._ids.items() if key not in self._current]
        out.records_removed = len(gone)
        by_package: dict[str, list[tuple[str, str]]] = {}
        for package, version, architecture in self._current:
            by_package.setdefault(package, []).append((version, architecture))
        shown: list[tuple[str, str, str, bool]] = []
        for package, records in by_package.items():
            version, architecture = best(records, self.preference)
            key = (package, version, architecture)
            owned = self._owned.get(package)
            if owned is None:
                shown.append((*key, True))
                out.packages_added += 1
            elif key in self._changed or not owned[2] or owned[1] != self._ids.get(key):
                shown.append((*key, False))
                out.packages_updated += 1
            else:
                out.packages_unchanged += 1
        offline = [
            (package, row_id)
            for package, (row_id, _, online) in self._owned.items()
            if package not in by_package and online
        ]
        out.packages_set_offline = len(offline)
        plan = ImportPlan(
            source=self.source,
            columns=RECORD_COLUMNS,
            now=self.now,
            first_seen=self.first_seen,
            inserts=self._inserts,
            updates=self._updates,
            shown=shown,
            offline=offline,
            gone=gone,
        )
        self._inserts, self._updates = [], []
        return plan


def _package_of(raw: bytes) -> str:
    """The Package field of a stanza, for reports, read without parsing the stanza."""
    for line in raw.split(b"\n", 40)[:40]:
        if line[:8].lower() == b"package:":
            return line[8:].strip().decode("utf-8", "replace")[:255]
    return ""
