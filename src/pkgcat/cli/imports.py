"""``pkgcat import-repo`` and the operator's ``import-purchases``, ``import-stats``, ``import-prices``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, Protocol

import anyio
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from sqlalchemy import Engine

from pkgcat.cli._common import admin, fail, load_settings, print_json, stderr, stdout
from pkgcat.cli._safe import visible
from pkgcat.ingest import (
    DEPICTION_MODES,
    ImportOptions,
    ImportSummary,
    IngestError,
    OperatorDataError,
    Selection,
    VerificationError,
    import_repository,
)
from pkgcat.ingest.fetch import fetcher
from pkgcat.ingest.limits import ImportLimits, fetch_policy
from pkgcat.ingest.operator_data import Written, import_prices, import_purchases, import_stats
from pkgcat.ingest.repository import open_repository
from pkgcat.ingest.workers import default_jobs
from pkgcat.repository.debs import DebLimits
from pkgcat.repository.mirror import MirrorSummary, mirror
from pkgcat.storage.backends import open_blobs


@contextmanager
def _progress(
    shown: bool, doing: str = "parsing", things: str = "stanzas"
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr when it is a terminal, else no callback at all."""
    if not shown:
        yield None
        return
    columns = (
        TextColumn(doing),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(things),
        TimeRemainingColumn(),
    )
    # Refreshed by the import's own calls, not by a thread of its own: a large import forks
    # parser processes, and forking a process that runs other threads can deadlock the child.
    with Progress(*columns, console=stderr, transient=True, auto_refresh=False) as bar:
        task = bar.add_task(doing, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            bar.refresh()

        yield advance


def _print_summary(summary: ImportSummary) -> None:
    data = summary.as_dict()
    for index in data["indexes"]:
        check = f"verified with {index['verified']}" if index["verified"] else "not verified"
        stdout.print(
            visible(f"read {index['name']} ({index['bytes']} bytes, {check})"),
            highlight=False,
            markup=False,
        )
    created = " (created)" if summary.source_created else ""
    stdout.print(
        visible(f"source {summary.source!r}{created}, {summary.url}"),
        highlight=False,
        markup=False,
    )
    r, p = data["records"], data["packages"]
    stdout.print(
        f"records: {r['read']} read, {r['added']} added, {r['updated']} updated, "
        f"{r['unchanged']} unchanged, {r['removed']} removed, {r['skipped']} skipped",
        highlight=False,
        markup=False,
    )
    stdout.print(
        f"packages: {p['added']} added, {p['updated']} updated, {p['unchanged']} unchanged, "
        f"{p['set_offline']} set offline",
        highlight=False,
        markup=False,
    )
    for skip in data["skipped"]:
        package = f" {skip['package']}" if skip["package"] else ""
        stdout.print(
            visible(f"  skipped {skip['index']}:{skip['line']}{package}: {skip['reason']}"),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def import_repo(
    location: Annotated[
        str,
        typer.Argument(
            help="Repository root (a directory or an http(s) address), or one Packages file."
        ),
    ],
    source: Annotated[
        str, typer.Option("--source", help="Source the packages belong to; created if it is new.")
    ],
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Public address of the repository: the source's url and the base of relative "
            "addresses (default: LOCATION when it is an address).",
        ),
    ] = None,
    suite: Annotated[
        str | None, typer.Option("--suite", help="Suite of a dists/ tree (dists/SUITE/).")
    ] = None,
    component: Annotated[
        list[str] | None,
        typer.Option("--component", help="Component of a dists/ tree (repeatable; default: all)."),
    ] = None,
    architecture: Annotated[
        list[str] | None,
        typer.Option(
            "--architecture", help="binary-ARCH index of a dists/ tree (repeatable; default: all)."
        ),
    ] = None,
    no_verify: Annotated[
        bool,
        typer.Option("--no-verify", help="Import an index that differs from its Release's hashes."),
    ] = False,
    depictions: Annotated[
        str,
        typer.Option(
            "--depictions",
            help="Sileo depictions read for screenshots: repo (inside the repository), all, off.",
        ),
    ] = "repo",
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Re-read every record, even unchanged ones.")
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", min=1, help="Processes that parse a large index (default: CPUs, at most 4)."
        ),
    ] = None,
    mirror: Annotated[
        bool,
        typer.Option(
            "--mirror",
            help="Also fetch every .deb the index lists, checked against its size and hashes, "
            "and store it: the repository moves in and is served from here.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary as one JSON object.")
    ] = False,
) -> None:
    """Import an APT repository's packages into the catalogue (read whole, then written)."""
    if depictions not in DEPICTION_MODES:
        fail(f"--depictions: {depictions!r} is not one of {', '.join(DEPICTION_MODES)}", 2)
    settings = load_settings()
    options = ImportOptions(
        source=source,
        url=url,
        selection=Selection(
            suite=suite, components=tuple(component or ()), architectures=tuple(architecture or ())
        ),
        verify=not no_verify,
        depictions=depictions,  # narrowed by the check against DEPICTION_MODES above
        refresh=refresh,
        architectures=settings.architecture_preference,
        jobs=jobs or default_jobs(),
        fetch=fetch_policy(settings),
        limits=ImportLimits.from_settings(settings),
    )
    with admin() as handle, _progress(not as_json and stderr.is_terminal) as progress:
        try:
            summary = import_repository(handle.engine, location, options, progress=progress)
        except VerificationError as error:
            fail(f"{error}; nothing was imported (--no-verify imports it anyway)")
        except IngestError as error:
            fail(f"{error}; nothing was imported")
    mirrored = _mirror(location, options, not as_json and stderr.is_terminal) if mirror else None
    if as_json:
        print_json(summary.as_dict() | ({"mirror": mirrored.as_dict()} if mirrored else {}))
    else:
        _print_summary(summary)
        if mirrored is not None:
            _print_mirror(mirrored)
    for warning in summary.warnings:  # on stderr in both modes: stdout stays one JSON document
        stderr.print(visible(f"warning: {warning}"), highlight=False, markup=False, soft_wrap=True)
    if mirrored is not None and mirrored.refused:
        for refused in mirrored.refused:
            stderr.print(
                visible(f"not mirrored: {refused.file}: {refused.reason}"),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        fail(
            f"{len(mirrored.refused)} file(s) not mirrored (above), nothing stored for them; "
            "the import and the other files are in"
        )


def _mirror(location: str, options: ImportOptions, shown: bool) -> MirrorSummary:
    """The repository read again (its indexes verified as the import did), then its files."""
    settings = load_settings()
    blobs = open_blobs(settings)
    with admin() as handle, fetcher(options.fetch) as client:
        try:
            repo = open_repository(
                location, client, options.selection, verify=options.verify, limits=options.limits
            )
        except IngestError as error:
            fail(f"{error}; the index is imported, no file was mirrored")

        async def run(progress: Callable[[int, int], None] | None) -> MirrorSummary:
            try:
                return await mirror(
                    handle.engine,
                    blobs,
                    repo,
                    options.source,
                    limits=DebLimits.from_settings(settings),
                    progress=progress,
                )
            finally:
                await blobs.close()

        with _progress(shown, "mirroring", "files") as progress:
            return anyio.run(run, progress)


def _print_mirror(mirrored: MirrorSummary) -> None:
    stdout.print(
        f"files: {mirrored.count('stored')} stored ({mirrored.stored_bytes} bytes), "
        f"{mirrored.count('held')} held already, {len(mirrored.refused)} refused",
        highlight=False,
        markup=False,
    )


_SHOWN_PROBLEMS = 20
"""Problems listed before the rest are counted: a file read with the wrong delimiter, say,
has one on every line, and the first ones tell what to fix."""


def _refuse(error: OperatorDataError) -> NoReturn:
    for problem in error.problems[:_SHOWN_PROBLEMS]:
        stderr.print(visible(f"  {problem}"), highlight=False, markup=False, soft_wrap=True)
    if len(error.problems) > _SHOWN_PROBLEMS:
        stderr.print(
            f"  ... and {len(error.problems) - _SHOWN_PROBLEMS} more", highlight=False, markup=False
        )
    fail(str(error))


class Importer(Protocol):
    """One of the operator loads of :mod:`pkgcat.storage.writes.operator`."""

    def __call__(self, engine: Engine, path: Path, *, delimiter: str | None = None) -> Written: ...


def _delimiter(value: str | None, path: Path) -> str | None:
    if value is None:
        return None
    if path.suffix.lower() != ".csv":
        fail(f"--delimiter: {path.name} is not a .csv file", 2)
    if value.lower() in ("tab", "\\t"):
        return "\t"
    if len(value) != 1 or value in ('"', "\r", "\n"):
        fail(f"--delimiter: {value!r}; give one character, such as ';', or 'tab'", 2)
    return value


def _operator_import(
    kind: str, path: Path, run: Importer, as_json: bool, delimiter: str | None
) -> None:
    chosen = _delimiter(delimiter, path)
    with admin() as handle:
        try:
            written = run(handle.engine, path, delimiter=chosen)
        except OperatorDataError as error:
            _refuse(error)
        except OSError as error:
            fail(f"{path}: cannot be read ({error.strerror})")
    for name in written.ignored:  # on stderr in both modes: stdout stays one JSON document
        column = repr(name) if name else "without a name"
        stderr.print(
            f"warning: {path.name}: column {column} ignored", highlight=False, markup=False
        )
    if as_json:
        print_json({"file": str(path), **written.as_dict()})
        return
    stdout.print(
        f"{kind}: {written.rows} rows, {written.added} added, {written.updated} updated, "
        f"{written.unchanged} unchanged",
        highlight=False,
        markup=False,
    )


_FILE = Annotated[Path, typer.Argument(help="A .csv file with a header row, or a .jsonl file.")]
_JSON = Annotated[bool, typer.Option("--json", help="Print the counts as one JSON object.")]
_DELIMITER = Annotated[
    str | None,
    typer.Option(
        "--delimiter",
        help="The CSV file's delimiter: one character, or 'tab' (default: found from the header).",
    ),
]


def purchases_command(file: _FILE, as_json: _JSON = False, delimiter: _DELIMITER = None) -> None:
    """Load purchases (buyers); all or nothing, idempotent on txn_id."""
    _operator_import("purchases", file, import_purchases, as_json, delimiter)


def stats_command(file: _FILE, as_json: _JSON = False, delimiter: _DELIMITER = None) -> None:
    """Set packages' download and vote counts; all or nothing."""
    _operator_import("stats", file, import_stats, as_json, delimiter)


def prices_command(file: _FILE, as_json: _JSON = False, delimiter: _DELIMITER = None) -> None:
    """Set packages' prices and currencies; all or nothing."""
    _operator_import("prices", file, import_prices, as_json, delimiter)
