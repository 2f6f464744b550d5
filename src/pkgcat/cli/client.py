"""``pkgcat client``: read any server of the API family from a terminal, through :mod:`pkgcat.client`.

The server's address comes from ``--base-url``, else ``PKGCAT_BASE_URL``, else
``base_url`` in the user's config file (:func:`_config_file`), else
``http://127.0.0.1:8000``. The key comes from ``PKGCAT_SECRET_KEY``, else
``secret_key`` in the config file, never from the command line, where it would
land in shell history and process lists. Output is by default a table on a
terminal, never cut, and plain tab-separated lines anywhere else (as the admin
listings, :mod:`pkgcat.cli._tables`); or ``--format json`` (the normalized result) or
``--format csv`` (rows); ``--json`` and ``--csv`` are short for those. A walk over
cursors (``--all``) shows its progress on stderr while stdout is a terminal.

Exit codes (the table is :data:`EXIT_CODES`, documented in docs/client.md):
0 success, 1 unexpected failure (a bug, with its traceback), 2 usage error,
3 authentication, 4 invalid argument, 5 not found, 6 permission denied,
7 rate limited, 8 server error, 9 protocol error, 10 connection error,
11 any other API error.

A program that embeds this command can hand it an ``httpx.BaseTransport`` as
the Click context object (``CliRunner().invoke(app, args, obj=transport)``);
the client then talks through it instead of the network.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import sys
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal, NoReturn, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
import typer
from rich import box
from rich.console import Console, JustifyMethod
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table
from rich.text import Text

from pkgcat.cli import group
from pkgcat.cli._safe import cell, spreadsheet_cell, visible
from pkgcat.cli._tables import Column, print_table, show, widest
from pkgcat.client import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    Buyer,
    BuyersCursorPage,
    BuyersPage,
    Client,
    Downloads,
    InvalidArgumentError,
    NotFoundError,
    Ownership,
    Package,
    PackagesPage,
    PermissionDeniedError,
    PkgcatError,
    ProtocolError,
    RateLimitError,
    Relations,
    Sale,
    SalesPage,
    SalesTotal,
    ServerError,
    Source,
    SourcePackage,
    UsageDay,
)

T = TypeVar("T")
Output = Literal["table", "json", "csv"]

app = group("client")

EXIT_USAGE = 2
EXIT_CODES: tuple[tuple[type[PkgcatError], int], ...] = (
    (AuthenticationError, 3),
    (InvalidArgumentError, 4),
    (NotFoundError, 5),
    (PermissionDeniedError, 6),
    (RateLimitError, 7),
    (ServerError, 8),
    (ProtocolError, 9),
    (APIConnectionError, 10),
    (APIError, 11),
)
"""Exit code per error class; the first class the error is an instance of wins."""

KEY_VARIABLE = "PKGCAT_SECRET_KEY"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
"""The server ``pkgcat serve`` starts by default."""
BAR_WIDTH = 40
_EIGHTHS = " ▏▎▍▌▋▊▉"

BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        envvar="PKGCAT_BASE_URL",
        show_envvar=True,
        help="Address of the server [default: base_url in the config file, else http://127.0.0.1:8000].",
    ),
]
Zone = Annotated[
    str,
    typer.Option("--tz", help="IANA zone of dates the server sends without an offset (shape B)."),
]
KeyIn = Annotated[
    str,
    typer.Option(
        "--key-in", help="Send the key as a Bearer header, or as ?secret_key= for older servers."
    ),
]
Retries = Annotated[
    int,
    typer.Option("--retries", min=0, help="Retries after a 429, a 5xx or a failed connection."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Short for --format json.")]
AsCsv = Annotated[bool, typer.Option("--csv", help="Short for --format csv.")]
Format = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="table|json|csv",
        help="A table (plain lines off a terminal), the normalized result as JSON, or CSV rows.",
    ),
]
PackageId = Annotated[str, typer.Argument(metavar="ID", help="Package identifier.")]


def _day_option(name: str, help: str) -> typer.models.OptionInfo:
    """An option that takes a calendar day, ``YYYY-MM-DD``."""
    return typer.Option(name, formats=["%Y-%m-%d"], metavar="YYYY-MM-DD", help=help)  # type: ignore[no-any-return]


Every = Annotated[bool, typer.Option("--all", help="Every item, following the cursors (one list).")]
Limit = Annotated[
    int | None,
    typer.Option("--limit", help="Page size: 25 by default, 100 with --all (server max 100)."),
]
Cursor = Annotated[
    str | None,
    typer.Option(
        "--cursor", help="Continue a list where a page's cursor says (from --format json)."
    ),
]


def _config_path() -> Path:
    from platformdirs import user_config_path

    return user_config_path("pkgcat", appauthor=False) / "config.toml"


def _config_file() -> dict[str, str]:
    """``base_url`` and ``secret_key`` from the user's config file, when there is one.

    Both are optional; the environment and ``--base-url`` win over the file. A
    file holding a key that other users can read is refused, as ssh refuses a
    private key others can read (on POSIX systems, where the mode says so).
    """
    path = _config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        _fail(f"{path}: {error.strerror}", EXIT_USAGE)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        _fail(f"{path}: not valid TOML: {error}", EXIT_USAGE)
    unknown = sorted(set(data) - {"base_url", "secret_key"})
    if unknown:
        _fail(
            f"{path}: unknown setting {unknown[0]!r}; it may hold base_url and secret_key",
            EXIT_USAGE,
        )
    found: dict[str, str] = {}
    for name, value in data.items():
        if not isinstance(value, str) or not value.strip():
            _fail(f"{path}: {name} must be a non-empty string", EXIT_USAGE)
        found[name] = value.strip()
    if "secret_key" in found and os.name == "posix" and path.stat().st_mode & 0o077:
        _fail(
            f"{path} holds a secret key and others can read it; run: chmod 600 {path}",
            EXIT_USAGE,
        )
    return found


def exit_code(error: PkgcatError) -> int:
    return next((code for kind, code in EXIT_CODES if isinstance(error, kind)), 1)


def _fail(message: str, code: int) -> NoReturn:
    """One line on stderr, then exit with ``code``."""
    typer.echo(f"error: {visible(' '.join(message.split()))}", err=True)
    raise typer.Exit(code)


@contextmanager
def _client(
    ctx: typer.Context, base_url: str | None, tz: str, key_in: str, retries: int
) -> Iterator[Client]:
    """A client from the options and the environment; its errors become one line and a code."""
    config = _config_file()
    key = os.environ.get(KEY_VARIABLE, "").strip() or config.get("secret_key", "")
    if not key:
        _fail(
            f"{KEY_VARIABLE} is not set (nor secret_key in {_config_path()}); "
            "export the application's secret key",
            EXIT_USAGE,
        )
    base_url = base_url or config.get("base_url") or DEFAULT_BASE_URL
    if key_in not in ("header", "query"):
        _fail(f"--key-in: {key_in!r}; use header or query", EXIT_USAGE)
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        _fail(f"--tz: {tz!r} is not an IANA time zone (e.g. UTC, Europe/Paris)", EXIT_USAGE)
    transport = ctx.obj if isinstance(ctx.obj, httpx.BaseTransport) else None
    try:
        client = Client(
            base_url,
            key,
            transport=transport,
            key_in="query" if key_in == "query" else "header",
            tz=zone,
            max_retries=retries,
        )
    except ValueError as error:
        _fail(str(error), EXIT_USAGE)
    try:
        with client:
            yield client
    except PkgcatError as error:
        _fail(str(error), exit_code(error))


def _output(as_json: bool, as_csv: bool, given: str | None = None) -> Output:
    """The output asked for by ``--format``, ``--json`` or ``--csv`` (at most one of them)."""
    asked = [
        name for name, on in (("--format", given), ("--json", as_json), ("--csv", as_csv)) if on
    ]
    if len(asked) > 1:
        _fail(f"{' and '.join(asked)}: choose one", EXIT_USAGE)
    if given is not None and given not in ("table", "json", "csv"):
        _fail(f"--format: {given!r}; use table, json or csv", EXIT_USAGE)
    if as_json or given == "json":
        return "json"
    return "csv" if as_csv or given == "csv" else "table"


def _walk(items: Iterable[T], what: str, size: Callable[[T], int] = lambda _: 1) -> list[T]:
    """Everything ``items`` yields, with a progress line on stderr while stdout is a terminal.

    ``size`` says how many rows an item holds (the rows of a page, say).
    """
    if not Console().is_terminal:
        return list(items)
    progress = Progress(
        SpinnerColumn(),
        TextColumn(f"{what}: {{task.completed:,}} so far"),
        console=Console(stderr=True),
        transient=True,
    )
    collected: list[T] = []
    with progress:
        task = progress.add_task(what, total=None)
        for item in items:
            collected.append(item)
            progress.advance(task, size(item))
    return collected


# --- canonical values ---------------------------------------------------------------------


def jsonable(value: object) -> object:
    """A record as JSON values: ISO 8601 dates with offset, amounts as decimal strings."""
    if isinstance(value, date):  # a datetime too
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def _print_json(value: object) -> None:
    typer.echo(json.dumps(jsonable(value), indent=2, ensure_ascii=False))


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, Relations):
        return value.raw
    rendered = jsonable(value)
    return rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False)


def _write_csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """CSV rows, each value with its formulas defused and its control characters visible."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([visible(spreadsheet_cell(_cell(value))) for value in row])
    sys.stdout.flush()


def _print_csv(rows: Sequence[object], header: Sequence[str]) -> None:
    _write_csv(header, ([getattr(row, name) for name in header] for row in rows))


def _names(kind: type[object]) -> list[str]:
    """The fields of a result type, in order: the columns of its CSV and plain lines."""
    return [f.name for f in dataclasses.fields(kind)]  # type: ignore[arg-type]


# --- tables ---------------------------------------------------------------------------------
# On a terminal a rich table, in which identifiers (package ids, nicknames, transaction ids),
# dates and amounts are never wrapped nor shortened and other values fold; anywhere else
# plain tab-separated lines of the canonical values (see pkgcat.cli._tables).


def _bar(value: int, largest: int) -> str:
    """A horizontal bar, ``BAR_WIDTH`` cells for the largest value, to an eighth of a cell."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / largest * BAR_WIDTH * 8))
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def _operation_names(days: Sequence[UsageDay]) -> list[str]:
    """Every operation counted on any of ``days``, by name (none without ``--by operation``)."""
    return sorted({name for d in days for name in d.operations or {}})


def _usage_table(days: list[UsageDay], to_today: bool) -> Table:
    largest = max((d.usage for d in days), default=0)
    operations = _operation_names(days)
    rows = [(d.day.isoformat(), f"{d.usage:,}", _bar(d.usage, largest)) for d in days]
    table = Table(title="API requests per day", title_justify="left")
    table.add_column("day", no_wrap=True, min_width=widest(r[0] for r in rows))
    table.add_column(
        "requests",
        justify="right",
        no_wrap=True,
        min_width=widest([r[1] for r in rows] + ["requests"]),
    )
    counts = [[f"{(d.operations or {}).get(name, 0):,}" for name in operations] for d in days]
    for n, name in enumerate(operations):
        # An operation's name is its heading, kept whole: "package/details", say.
        table.add_column(
            visible(name),
            justify="right",
            no_wrap=True,
            min_width=widest([visible(name)] + [c[n] for c in counts]),
        )
    # Split by operation, the table has a column per operation instead of the bars.
    by_operation = any(d.operations is not None for d in days)
    if not by_operation:
        table.add_column("", no_wrap=True, min_width=widest(r[2] for r in rows))
    for (day, count, bar), split in zip(rows, counts, strict=True):
        table.add_row(day, count, *split, *([] if by_operation else [Text(bar)]))
    total = sum(d.usage for d in days)
    table.caption = f"{len(days)} days, {total:,} requests"
    if to_today:
        table.caption += "; the last day is today (so far)"
    return table


def _usage_rows(days: Sequence[UsageDay], operations: Sequence[str]) -> list[list[object]]:
    return [
        [_cell(d.date), d.usage, *((d.operations or {}).get(name, 0) for name in operations)]
        for d in days
    ]


def _show_usage(days: list[UsageDay], to_today: bool) -> None:
    operations = _operation_names(days)
    columns = [Column("date"), Column("usage"), *map(Column, operations)]
    show(columns, _usage_rows(days, operations), lambda: _usage_table(days, to_today))


def _price(package: Package) -> str:
    if package.price is None:
        return f"not known yet ({package.currency})"
    return f"{format(package.price, 'f')} {package.currency}"


def _package_table(package: Package) -> Table:
    rows: list[tuple[str, object]] = [
        ("package", package.package),
        ("date", package.date.isoformat()),
        ("architecture", package.architecture),
        ("author", package.author),
        ("section", package.section),
        ("description", package.description),
        ("price", _price(package)),
        ("online", "yes" if package.online else "no"),
        ("pre-depends", package.pre_depends.raw),
        ("depends", package.depends.raw),
        ("conflicts", package.conflicts.raw),
        ("replaces", package.replaces.raw if package.replaces is not None else None),
        ("size", f"{package.size:,}"),
        ("md5sum", package.md5sum),
        ("sha256", package.sha256),
        ("compatible", ", ".join(package.compatible)),
        ("downloads", f"{package.total_download:,}"),
        ("votes", f"{package.total_votes:,} (sum {package.total_value_votes:,})"),
        ("source", package.source.name),
        ("source url", package.source.url),
        ("source origin", package.source.origin),
        ("icon", package.icon),
        ("screenshots", "\n".join(package.screenshots)),
        ("url", package.url),
        ("long description", package.long_description),
    ]
    table = Table(title=cell(f"{package.name} {package.version}"), title_justify="left")
    table.add_column("field", style="bold", no_wrap=True, min_width=widest(n for n, _ in rows))
    # The package id is kept on one line; longer values (digests, addresses) fold.
    table.add_column("value", overflow="fold", min_width=widest([package.package]))
    missing = Text("(not sent by this server)", style="dim")
    for name, value in rows:
        table.add_row(name, missing if value is None else cell(value))
    return table


def _package_fields(package: Package) -> Iterator[tuple[str, str]]:
    """Every field of the record with its canonical value; the source's as ``source.name`` etc."""
    for field in dataclasses.fields(Package):
        value = getattr(package, field.name)
        if isinstance(value, Source):
            for part in dataclasses.fields(Source):
                yield f"{field.name}.{part.name}", _cell(getattr(value, part.name))
        else:
            yield field.name, _cell(value)


def _show_package(package: Package) -> None:
    columns = [Column("field"), Column("value")]
    show(columns, list(_package_fields(package)), lambda: _package_table(package))


def _page_table(caption: str) -> Table:
    """A table of one page of a list, its caption (which may quote the server) shown as text."""
    return Table(
        caption=cell(caption),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
    )


def _buyers_table(buyers: Sequence[Buyer], caption: str) -> Table:
    """A row per buyer; a date offset or a status every row shares is said once, above or below."""
    offsets = {b.date.strftime("%z") for b in buyers}
    statuses = {b.status for b in buyers}
    shared_offset = offsets.pop() if len(offsets) == 1 else None
    shared_status = statuses.pop() if len(statuses) == 1 else None
    if shared_status is not None:
        caption += f"; status: {shared_status}"
    table = _page_table(caption)
    cells: list[list[str]] = []

    def add(heading: str, values: list[str], justify: JustifyMethod = "left") -> None:
        # Every value here is a word to copy or compare whole (an id, a date, an amount, a
        # status): no column is wrapped nor shortened, each at least as wide as its widest value.
        values = [visible(value) for value in values]
        table.add_column(
            heading, justify=justify, no_wrap=True, min_width=widest([heading, *values])
        )
        cells.append(values)

    date = "%Y-%m-%d %H:%M" if shared_offset else "%Y-%m-%d %H:%M %z"
    add(
        f"date ({shared_offset})" if shared_offset else "date",
        [b.date.strftime(date) for b in buyers],
    )
    add("nickname", [b.nickname for b in buyers])
    add("paid", [f"{format(b.total, 'f')} {b.currency}" for b in buyers], "right")
    add("commission", [format(b.commission, "f") for b in buyers], "right")
    add("scope", [b.allowed_for for b in buyers])
    add("platform", [b.payment_platform for b in buyers])
    if shared_status is None:
        add("status", [b.status for b in buyers])
    add("txn id", [b.txn_id for b in buyers])
    for row in zip(*cells, strict=True):
        table.add_row(*map(cell, row))
    return table


def _show_buyers(buyers: Sequence[Buyer], caption: str) -> None:
    names = [f.name for f in dataclasses.fields(Buyer)]
    rows = [[_cell(getattr(b, name)) for name in names] for b in buyers]
    show([Column(name) for name in names], rows, lambda: _buyers_table(buyers, caption))


# --- commands -------------------------------------------------------------------------------


def _record_table(title: str, rows: Sequence[tuple[str, object]]) -> Table:
    """A record as two columns, field and value; a value the server did not send is dim."""
    table = Table(title=cell(title), title_justify="left")
    table.add_column("field", style="bold", no_wrap=True, min_width=widest(n for n, _ in rows))
    table.add_column("value", overflow="fold", min_width=widest(str(v) for _, v in rows[:1]))
    for name, value in rows:
        table.add_row(name, Text("none", style="dim") if value is None else cell(value))
    return table


def _amount(value: Decimal | None, currency: str) -> str:
    return "not known yet" if value is None else f"{format(value, 'f')} {currency}"


def _packages_table(packages: Sequence[SourcePackage], caption: str) -> Table:
    table = _page_table(caption)
    rows: list[tuple[str, ...]] = [
        (
            p.package,
            p.version,
            "yes" if p.online else "no",
            _amount(p.price, p.currency) if p.paid else "free",
            f"{p.downloads:,}",
            f"{p.votes:,}",
            "" if p.rating is None else f"{p.rating:.2f}",
            p.updated.strftime("%Y-%m-%d %H:%M %z"),
            p.name,
        )
        for p in packages
    ]
    rows = [tuple(map(visible, row)) for row in rows]
    headings = ("package", "version", "online", "price", "downloads", "votes", "rating", "updated")
    for n, heading in enumerate(headings):
        right = heading in ("price", "downloads", "votes", "rating")
        table.add_column(
            heading,
            justify="right" if right else "left",
            no_wrap=True,
            min_width=widest([heading, *(r[n] for r in rows)]),
        )
    table.add_column("name", overflow="fold")
    for row in rows:
        table.add_row(*map(cell, row))
    return table


def _sales_table(sales: Sequence[Sale], caption: str) -> Table:
    table = _page_table(caption)
    rows: list[tuple[str, ...]] = [
        (
            s.date.strftime("%Y-%m-%d %H:%M %z"),
            s.package or "(whole source)",
            s.nickname,
            s.status,
            f"{format(s.gross, 'f')} {s.currency}",
            format(s.commission, "f"),
            format(s.net, "f"),
            s.payment_platform,
            s.txn_id,
        )
        for s in sales
    ]
    rows = [tuple(map(visible, row)) for row in rows]
    headings = ("date", "package", "nickname", "status", "gross", "commission", "net")
    for n, heading in enumerate((*headings, "platform", "txn id")):
        # Ids, dates and amounts are copied whole: never wrapped nor shortened.
        table.add_column(
            heading,
            justify="right" if heading in ("gross", "commission", "net") else "left",
            no_wrap=True,
            min_width=widest([heading, *(r[n] for r in rows)]),
        )
    for row in rows:
        table.add_row(*map(cell, row))
    return table


def _totals_table(totals: Sequence[SalesTotal], start: date, end: date) -> Table:
    table = Table(title=f"Totals from {start} to {end}", title_justify="left")
    headings = ("currency", "sales", "gross", "commission", "net", "refunds", "refunded")
    rows: list[tuple[str, ...]] = [
        (
            t.currency,
            f"{t.sales:,}",
            format(t.gross, "f"),
            format(t.commission, "f"),
            format(t.net, "f"),
            f"{t.refunds:,}",
            format(t.refunded, "f"),
        )
        for t in totals
    ]
    rows = [tuple(map(visible, row)) for row in rows]
    for n, heading in enumerate(headings):
        table.add_column(
            heading,
            justify="left" if heading == "currency" else "right",
            no_wrap=True,
            min_width=widest([heading, *(r[n] for r in rows)]),
        )
    for row in rows:
        table.add_row(*map(cell, row))
    if not totals:
        table.caption = "no sales in this range"
    return table


def _show_rows(kind: type[object], items: Sequence[object], table: Callable[[], Table]) -> None:
    """Items of a result type: ``table()`` on a terminal, else a plain line per item."""
    names = _names(kind)
    rows = [[_cell(getattr(item, name)) for name in names] for item in items]
    show([Column(name) for name in names], rows, table)


def _print(output: Output, result: object, kind: type[object], items: Sequence[object]) -> bool:
    """JSON of ``result`` or CSV of ``items``; ``False`` when the output is a table."""
    if output == "json":
        _print_json(result)
    elif output == "csv":
        _print_csv(items, _names(kind))
    return output != "table"


def _day(value: datetime | None) -> date | None:
    return None if value is None else value.date()


# --- commands -------------------------------------------------------------------------------


@app.command("usage")
def usage(
    ctx: typer.Context,
    days: Annotated[
        int | None, typer.Option("--days", help="Days before today to report [default: 30].")
    ] = None,
    start: Annotated[
        datetime | None, _day_option("--start", "First day (instead of --days).")
    ] = None,
    end: Annotated[datetime | None, _day_option("--end", "Last day [default: today].")] = None,
    by: Annotated[
        str | None, typer.Option("--by", metavar="operation", help="Split each day by operation.")
    ] = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """Requests per day of the application the key belongs to, with a bar chart."""
    output = _output(as_json, as_csv, output_format)
    if by is not None and by != "operation":
        _fail(f"--by: {by!r}; the one split is: operation", EXIT_USAGE)
    with _client(ctx, base_url, tz, key_in, retries) as client:
        result = client.usage(
            days, start=_day(start), end=_day(end), by="operation" if by else None
        )
    operations = _operation_names(result)
    if output == "json":
        fields = {"date", "usage", "operations"} if by else {"date", "usage"}
        _print_json(
            [{k: v for k, v in dataclasses.asdict(d).items() if k in fields} for d in result]
        )
    elif output == "csv":
        _write_csv(["date", "usage", *operations], _usage_rows(result, operations))
    else:
        _show_usage(result, to_today=end is None)


def _print_package(output: Output, package: Package) -> None:
    if output == "json":
        _print_json(package)
    elif output == "csv":
        _write_csv(["field", "value"], _package_fields(package))
    else:
        _show_package(package)


def _downloads_table(result: Downloads, to_today: bool) -> Table:
    largest = max((d.downloads for d in result.days), default=0)
    rows = [
        (d.day.isoformat(), f"{d.downloads:,}", _bar(d.downloads, largest)) for d in result.days
    ]
    table = Table(
        title=f"Downloads of {visible(result.package)} per day (UTC)", title_justify="left"
    )
    table.add_column("day", no_wrap=True, min_width=widest(r[0] for r in rows))
    table.add_column(
        "downloads",
        justify="right",
        no_wrap=True,
        min_width=widest([r[1] for r in rows] + ["downloads"]),
    )
    table.add_column("", no_wrap=True, min_width=widest(r[2] for r in rows))
    for day, count, bar in rows:
        table.add_row(day, count, Text(bar))
    table.caption = f"{len(rows)} days, {result.total:,} downloads"
    if to_today:
        table.caption += "; the last day is today (so far)"
    return table


@app.command("downloads")
def downloads(
    ctx: typer.Context,
    package_id: PackageId,
    days: Annotated[
        int | None, typer.Option("--days", help="Days before today to report [default: 30].")
    ] = None,
    start: Annotated[
        datetime | None, _day_option("--start", "First day, UTC (instead of --days).")
    ] = None,
    end: Annotated[datetime | None, _day_option("--end", "Last day [default: today].")] = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """Whole downloads of one of your packages per UTC day, with a bar chart and the total."""
    output = _output(as_json, as_csv, output_format)
    with _client(ctx, base_url, tz, key_in, retries) as client:
        result = client.downloads(package_id, days, start=_day(start), end=_day(end))
    rows = [[d.day.isoformat(), d.downloads] for d in result.days]
    if output == "json":
        _print_json(result)
    elif output == "csv":
        _write_csv(["day", "downloads"], rows)
    else:
        show(
            [Column("day"), Column("downloads", kind="number")],
            rows,
            lambda: _downloads_table(result, to_today=end is None),
        )


@app.command("package")
def package(
    ctx: typer.Context,
    package_id: PackageId,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
) -> None:
    """The record of one package."""
    output = _output(as_json, False, output_format)
    with _client(ctx, base_url, tz, key_in, retries) as client:
        result = client.package(package_id)
    _print_package(output, result)


LARGE_UPLOAD = 4 * 1024 * 1024
"""Uploads from this size on show a progress bar (on a terminal)."""


@app.command("upload")
def upload(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="The .deb file.", exists=True, dir_okay=False, readable=True)
    ],
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            "--idempotency-key",
            help="Sent with every attempt, so that a retry publishes nothing twice "
            "(default: a random one per run).",
        ),
    ] = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
) -> None:
    """Publish a .deb to the key's source (a key with the publish scope); its details."""
    output = _output(as_json, False, output_format)
    size = file.stat().st_size
    with _client(ctx, base_url, tz, key_in, retries) as client:
        if size < LARGE_UPLOAD or not Console(stderr=True).is_terminal:
            result = client.upload(file, idempotency_key)
        else:
            with Progress(console=Console(stderr=True), transient=True) as progress:
                task = progress.add_task(f"uploading {file.name}", total=size)
                result = client.upload(
                    file, idempotency_key, progress=lambda n: progress.advance(task, n)
                )
    _print_package(output, result)


@app.command("buyers")
def buyers(
    ctx: typer.Context,
    package_id: PackageId,
    every: Annotated[
        bool, typer.Option("--all", help="Every buyer, following the cursors (a list).")
    ] = False,
    limit: Limit = None,
    page: Annotated[int | None, typer.Option("--page", help="Page number (default 1).")] = None,
    cursor: Cursor = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """The buyers of a paid package of your source: one page, or --all of them."""
    output = _output(as_json, as_csv, output_format)
    given = (("--all", every), ("--page", page is not None), ("--cursor", cursor is not None))
    chosen = [option for option, on in given if on]
    if len(chosen) > 1:
        _fail(f"{' and '.join(chosen)}: choose one way to page", EXIT_USAGE)
    rows: Sequence[Buyer]
    result: BuyersPage | BuyersCursorPage | list[Buyer]
    with _client(ctx, base_url, tz, key_in, retries) as client:
        if every:
            result = rows = _walk(client.iter_buyers(package_id, page_size=limit or 100), "buyers")
            caption = f"{len(rows):,} buyers of {package_id}"
        elif cursor is not None:
            result = client.buyers(package_id, limit or 25, cursor=cursor)
            rows = result.buyers
            more = "more follow (--cursor)" if result.has_more else "the last page"
            caption = f"{len(rows):,} of {result.total:,} buyers; {more}"
        else:
            result = client.buyers(package_id, limit=limit or 25, page=page or 1)
            rows = result.buyers
            first = result.start + 1 if rows else result.start
            caption = (
                f"page {result.page}: buyers {first:,}-{result.start + len(rows):,} "
                f"of {result.total:,} ({result.limit} per page)"
            )
    if not _print(output, result, Buyer, rows):
        _show_buyers(rows, caption)


@app.command("packages")
def packages(
    ctx: typer.Context,
    paid: Annotated[
        bool | None, typer.Option("--paid/--free", help="Only paid, or only free packages.")
    ] = None,
    online: Annotated[
        bool | None, typer.Option("--online/--offline", help="Only online, or only offline.")
    ] = None,
    every: Every = False,
    limit: Limit = None,
    cursor: Cursor = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """Your source's packages, online and offline, by identifier: one page, or --all."""
    output = _output(as_json, as_csv, output_format)
    if every and cursor is not None:
        _fail("--all and --cursor: --all starts at the first page", EXIT_USAGE)
    result: PackagesPage | list[SourcePackage]
    rows: Sequence[SourcePackage]
    with _client(ctx, base_url, tz, key_in, retries) as client:
        if every:
            walk = client.iter_packages(paid=paid, online=online, page_size=limit or 100)
            result = rows = _walk(walk, "packages")
            caption = f"{len(rows):,} packages"
        else:
            result = client.packages(paid=paid, online=online, limit=limit or 25, cursor=cursor)
            rows = result.packages
            more = "more follow (--cursor, or --all)" if result.has_more else "the last page"
            caption = f"{len(rows):,} packages; {more}"
    if not _print(output, result, SourcePackage, rows):
        _show_rows(SourcePackage, rows, lambda: _packages_table(rows, caption))


@app.command("check")
def check(
    ctx: typer.Context,
    package_id: PackageId,
    nickname: Annotated[
        str | None, typer.Option("--nickname", help="The buyer's nickname.")
    ] = None,
    account: Annotated[
        str | None, typer.Option("--account", help="The buyer's account id.")
    ] = None,
    udid: Annotated[
        str | None, typer.Option("--udid", help="A device id the buyer registered.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The device's model (with --udid).")
    ] = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """Whether a buyer, or a device, owns a package of your source (exit 0 either way)."""
    output = _output(as_json, as_csv, output_format)
    with _client(ctx, base_url, tz, key_in, retries) as client:
        result = client.check(
            package_id, nickname=nickname, account=account, udid=udid, model=model
        )
    row = _ownership_row(result)
    if output == "json":
        _print_json(result)
    elif output == "csv":
        _write_csv(list(row), [list(row.values())])
    else:
        values = [(name, None if value == "" else value) for name, value in row.items()]
        title = f"{result.package}: {'owned' if result.owned else 'not owned'}"
        show([Column(n) for n in row], [list(row.values())], lambda: _record_table(title, values))


def _ownership_row(result: Ownership) -> dict[str, str]:
    """The check as one flat row: the purchase's fields beside the others."""
    purchase = result.purchase
    return {
        "package": result.package,
        "owned": "true" if result.owned else "false",
        "since": _cell(result.since),
        "txn_id": purchase.txn_id if purchase else "",
        "allowed_for": purchase.allowed_for if purchase else "",
    }


@app.command("sales")
def sales(
    ctx: typer.Context,
    start: Annotated[
        datetime | None, _day_option("--start", "First day [default: end - 29 days].")
    ] = None,
    end: Annotated[datetime | None, _day_option("--end", "Last day [default: today].")] = None,
    package_id: Annotated[
        str | None, typer.Option("--package", metavar="ID", help="Only this package's purchases.")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="completed, refunded or chargeback.")
    ] = None,
    totals_only: Annotated[
        bool, typer.Option("--totals", help="Only the totals per currency (one request).")
    ] = False,
    every: Every = False,
    limit: Limit = None,
    cursor: Cursor = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """Your sales ledger, newest first, with the totals per currency: one page, or --all."""
    output = _output(as_json, as_csv, output_format)
    if every and cursor is not None:
        _fail("--all and --cursor: --all starts at the first page", EXIT_USAGE)
    first_day, last_day = _day(start), _day(end)
    with _client(ctx, base_url, tz, key_in, retries) as client:
        if every and not totals_only:
            pages = _walk(
                client.sales_pages(
                    start=first_day,
                    end=last_day,
                    package_id=package_id,
                    status=status,
                    page_size=limit or 100,
                ),
                "sales",
                lambda p: len(p.sales),
            )
            first = pages[0]
            rows: Sequence[Sale] = [sale for page in pages for sale in page.sales]
            result: SalesPage = dataclasses.replace(
                first, sales=tuple(rows), limit=len(rows), has_more=False, cursor=None
            )
            caption = f"{len(rows):,} sales"
        else:
            size = 1 if totals_only else limit or 25
            result = client.sales(
                start=first_day,
                end=last_day,
                package_id=package_id,
                status=status,
                limit=size,
                cursor=cursor,
            )
            rows = result.sales
            more = "more follow (--cursor, or --all)" if result.has_more else "the last page"
            caption = f"{len(rows):,} sales; {more}"
    if totals_only:
        if not _print(output, list(result.totals), SalesTotal, result.totals):
            _show_rows(
                SalesTotal,
                result.totals,
                lambda: _totals_table(result.totals, result.start, result.end),
            )
        return
    if _print(output, result, Sale, rows):
        return
    _show_rows(Sale, rows, lambda: _sales_table(rows, caption))
    out = Console()
    if out.is_terminal:
        print_table(_totals_table(result.totals, result.start, result.end), out)


# The webhook endpoints' commands, `pkgcat client webhook ...`, in a module of their own: it
# reads this one's options and helpers, so it is imported once they exist.
from pkgcat.cli.client_webhooks import app as _webhook_app  # noqa: E402

app.add_typer(_webhook_app, name="webhook")
