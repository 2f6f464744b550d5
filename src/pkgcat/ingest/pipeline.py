"""``import_repository``: from LOCATION to an up-to-date catalogue, in one transaction.

Reading LOCATION (Release, index, hashes, decompression) happens before the
transaction opens; a repository that cannot be read or verified changes
nothing. Inside it: the source (created when it is new), the records and the
packages (:mod:`pkgcat.ingest.load`). Any error rolls the whole import back.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.config import DEFAULT_ARCHITECTURES
from pkgcat.ingest.control import base_address, quiet_python_debian
from pkgcat.ingest.depictions import DepictionMode, Depictions
from pkgcat.ingest.errors import IngestError
from pkgcat.ingest.fetch import http_client, is_address
from pkgcat.ingest.load import Loader, Outcome
from pkgcat.ingest.release import Release
from pkgcat.ingest.repository import Repository, Selection, open_repository
from pkgcat.ingest.versions import Preference
from pkgcat.ingest.workers import default_jobs
from pkgcat.storage import schema as t

OnProgress = Callable[[int, int], None]
"""Called with (stanzas parsed so far, stanzas to parse)."""


@dataclass(frozen=True, slots=True)
class ImportOptions:
    source: str
    """Name of the source the packages belong to; created when it does not exist."""
    url: str | None = None
    """Public address of the repository: the source's url, and the base of relative addresses."""
    selection: Selection = field(default_factory=Selection)
    verify: bool = True
    depictions: DepictionMode = "repo"
    refresh: bool = False
    """Re-read every record, even those whose stanza is unchanged."""
    architectures: tuple[str, ...] = tuple(DEFAULT_ARCHITECTURES.split(","))
    """Architecture preference for the record details shows."""
    jobs: int = field(default_factory=default_jobs)
    """Processes that parse a large index (:mod:`pkgcat.ingest.workers`)."""


@dataclass(frozen=True, slots=True)
class ImportSummary:
    source: str
    source_created: bool
    url: str
    indexes: list[dict[str, Any]]
    outcome: Outcome
    warnings: list[str]

    def as_dict(self) -> dict[str, Any]:
        """The summary as ``--json`` prints it."""
        o = self.outcome
        return {
            "source": self.source,
            "source_created": self.source_created,
            "url": self.url,
            "indexes": self.indexes,
            "records": {
                "read": o.records_read,
                "added": o.records_added,
                "updated": o.records_updated,
                "unchanged": o.records_unchanged,
                "removed": o.records_removed,
                "skipped": len(o.skipped),
            },
            "packages": {
                "added": o.packages_added,
                "updated": o.packages_updated,
                "unchanged": o.packages_unchanged,
                "set_offline": o.packages_set_offline,
            },
            "skipped": [
                {"index": s.index, "line": s.line, "package": s.package, "reason": s.reason}
                for s in o.skipped
            ],
            "warnings": self.warnings,
        }


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while records are made.

    An import builds tens of thousands of long-lived tuples and no reference
    cycles to speak of; the collector would walk them all again and again,
    about a sixth of a large import's time. Reference counting still frees
    everything as usual, and the collector resumes (and runs) afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _source(
    db: Connection, options: ImportOptions, repo: Repository, location: str, now: int
) -> tuple[int, str, bool]:
    """The source's id and repository address, and whether it was created.

    A new source takes ``--url``, or LOCATION when it is an address. An existing
    source keeps its URL unless ``--url`` gives another: importing from a
    mirror does not move it.
    """
    s = t.sources
    release: Release | None = repo.release
    named: dict[str, str] = {}
    if release is not None:
        named = {"label": release.label or release.origin, "origin": release.origin}
    row = db.execute(
        select(s.c.id, s.c.url, s.c.label, s.c.origin).where(s.c.name == options.source)
    ).first()
    if row is None:
        url = options.url or (repo.reader.root if is_address(location) else None)
        if url is None:
            raise IngestError(
                f"no source named {options.source!r}; give --url, the repository's public "
                "address, to create it"
            )
        created = db.execute(
            insert(s).values(name=options.source, url=url, created_at=now, **named)
        ).inserted_primary_key
        assert created is not None
        return created[0], url, True
    changes = {k: v for k, v in named.items() if getattr(row, k) != v}
    if options.url is not None and options.url != row.url:
        changes["url"] = options.url
    if changes:
        db.execute(update(s).where(s.c.id == row.id).values(**changes))
    return row.id, options.url or row.url, False


def import_repository(
    engine: Engine,
    location: str,
    options: ImportOptions,
    *,
    progress: OnProgress | None = None,
    clock: Callable[[], float] = time.time,
) -> ImportSummary:
    """Import LOCATION into the catalogue; :class:`IngestError` when it cannot be done."""
    if options.url is not None and not is_address(options.url):
        raise IngestError(f"--url: {options.url!r} is not an http:// or https:// address")
    now = int(clock())
    with quiet_python_debian(), http_client() as client:
        repo = open_repository(location, client, options.selection, verify=options.verify)
        published = repo.release.date if repo.release is not None else None
        with engine.begin() as db:
            source_id, base_url, created = _source(db, options, repo, location, now)
            depictions = Depictions(options.depictions, base_url, repo.reader, client)
            loader = Loader(
                db,
                source_id,
                base_address(base_url),
                depictions,
                Preference(options.architectures),
                now=now,
                # A version first seen in this index was published at the latest on its date.
                first_seen=min(now, published) if published else now,
                refresh=options.refresh,
                jobs=options.jobs,
            )
            for index in repo.indexes:
                loader.read(index)
            done = 0

            def advance(stanzas: int) -> None:
                nonlocal done
                done = min(done + stanzas, loader.to_parse)
                if progress is not None:
                    progress(done, loader.to_parse)

            with _without_cycle_collection():
                outcome = loader.finish(advance)
            if progress is not None:
                progress(loader.to_parse, loader.to_parse)
    warnings = list(repo.warnings)
    if depictions.failures:
        warnings.append(
            f"screenshots: {len(depictions.failures)} depiction(s) could not be read, "
            f"e.g. {depictions.failures[0]}"
        )
    if depictions.outside:
        warnings.append(
            f"screenshots: {len(depictions.outside)} depiction(s) outside the repository "
            "were not read (--depictions all fetches them)"
        )
    return ImportSummary(
        source=options.source,
        source_created=created,
        url=base_url,
        indexes=[
            {"name": index.name, "bytes": len(index.data), "verified": index.verified or None}
            for index in repo.indexes
        ],
        outcome=outcome,
        warnings=warnings,
    )
