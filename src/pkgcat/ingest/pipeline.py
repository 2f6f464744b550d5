"""``import_repository``: from LOCATION to an up-to-date catalogue, reading first, writing last.

1. Read: LOCATION's Release and indexes (hashes checked, decompressed), and
   what the source holds, in one short read of the database
   (:func:`pkgcat.storage.writes.imports.read_source`).
2. Plan: fingerprint, parse, sort, choose each package's best record, read
   the depictions (:mod:`pkgcat.ingest.load`). A repository that cannot be
   read or verified, or any other error up to here, changes nothing.
3. Write: the plan, in short transactions
   (:func:`pkgcat.storage.writes.imports.apply_import`, whose docstring
   states what an interrupted import leaves: a consistent catalogue that the
   next import of the repository completes). The database's write lock is
   never held while the network or the parser works.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from pkgcat.config import DEFAULT_ARCHITECTURES
from pkgcat.ingest.control import base_address, quiet_python_debian
from pkgcat.ingest.depictions import DepictionMode, Depictions
from pkgcat.ingest.errors import IngestError
from pkgcat.ingest.fetch import fetcher, is_address
from pkgcat.ingest.limits import ImportLimits
from pkgcat.ingest.load import Loader, Outcome
from pkgcat.ingest.repository import Repository, Selection, open_repository
from pkgcat.ingest.workers import default_jobs
from pkgcat.net.fetcher import Policy
from pkgcat.storage.writes.imports import (
    ImportPlan,
    SourceRow,
    SourceWrite,
    apply_import,
    read_source,
)
from pkgcat.storage.writes.sources import AdminError, check_address, check_name
from pkgcat.versions import Preference

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
    fetch: Policy = field(default_factory=Policy)
    """How addresses are fetched: which private ones are allowed (none by default), the timeout."""
    limits: ImportLimits = field(default_factory=ImportLimits)
    """The caps and deadlines of the import's files, stanzas and depictions."""


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
    """Pause the cyclic garbage collector while records are made and written.

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
    options: ImportOptions, repo: Repository, location: str, found: SourceRow | None
) -> tuple[SourceWrite, str, bool]:
    """What to write to the source, its repository address, and whether it is new.

    A new source takes ``--url``, or LOCATION when it is an address. An existing
    source keeps its URL unless ``--url`` gives another: importing from a
    mirror does not move it. The Release's label and origin are kept up to date.
    """
    release = repo.release
    named: dict[str, str] = {}
    if release is not None:
        named = {"label": release.label or release.origin, "origin": release.origin}
    if found is None:
        url = options.url or (repo.reader.root if is_address(location) else None)
        if url is None:
            raise IngestError(
                f"no source named {options.source!r}; give --url, the repository's public "
                "address, to create it"
            )
        _check(check_address, url, "--url" if options.url else "LOCATION")
        return SourceWrite(options.source, None, url=url, **named), url, True
    changes = {k: v for k, v in named.items() if getattr(found, k) != v}
    if options.url is not None and options.url != found.url:
        changes["url"] = options.url
    return SourceWrite(found.name, found.id, **changes), options.url or found.url, False


def _check(rule: Callable[..., None], *args: str) -> None:
    """Apply one of the rules of sources before anything is written: an import error if broken."""
    try:
        rule(*args)
    except AdminError as error:
        raise IngestError(str(error)) from None


def _plan(
    engine: Engine,
    location: str,
    options: ImportOptions,
    now: int,
    progress: OnProgress | None,
) -> tuple[ImportPlan, Loader, Repository, Depictions, str, bool]:
    """Everything an import reads, network included, and the plan of its writes."""
    with quiet_python_debian(), fetcher(options.fetch) as client:
        repo = open_repository(
            location, client, options.selection, verify=options.verify, limits=options.limits
        )
        published = repo.release.date if repo.release is not None else None
        state = read_source(engine, options.source)  # one short read; no lock is kept
        source, base_url, created = _source(options, repo, location, state.source)
        depictions = Depictions(options.depictions, base_url, repo.reader, client, options.limits)
        loader = Loader(
            state,
            source,
            base_address(base_url),
            depictions,
            Preference(options.architectures),
            now=now,
            # A version first seen in this index was published at the latest on its date.
            first_seen=min(now, published) if published else now,
            refresh=options.refresh,
            jobs=options.jobs,
            limits=options.limits,
        )
        del state  # the loader keeps what it needs: the rest is freed before parsing
        for index in repo.indexes:
            loader.read(index)
        done = 0

        def advance(stanzas: int) -> None:
            nonlocal done
            done = min(done + stanzas, loader.to_parse)
            if progress is not None:
                progress(done, loader.to_parse)

        with _without_cycle_collection():
            plan = loader.finish(advance)
        if progress is not None:
            progress(loader.to_parse, loader.to_parse)
    return plan, loader, repo, depictions, base_url, created


def import_repository(
    engine: Engine,
    location: str,
    options: ImportOptions,
    *,
    progress: OnProgress | None = None,
    clock: Callable[[], float] = time.time,
) -> ImportSummary:
    """Import LOCATION into the catalogue; :class:`IngestError` when it cannot be done."""
    _check(check_name, options.source)
    if options.url is not None:
        _check(check_address, options.url, "--url")
    now = int(clock())
    plan, loader, repo, depictions, base_url, created = _plan(
        engine, location, options, now, progress
    )
    # Everything is read, the network included: only now does the import write.
    try:
        with _without_cycle_collection():
            apply_import(engine, plan)
    except AdminError as error:
        # The source is the first write: another command created one of the same name since.
        raise IngestError(str(error)) from None
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
        outcome=loader.outcome,
        warnings=warnings,
    )
