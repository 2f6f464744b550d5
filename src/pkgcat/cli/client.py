"""``pkgcat client``: read any server of the API family from a terminal, through :mod:`pkgcat.client`.

The server's address comes from ``--base-url``, else ``PKGCAT_BASE_URL``, else
``base_url`` in the user's config file (:func:`_config_file`), else
``http://127.0.0.1:8000``. The key comes from ``PKGCAT_SECRET_KEY``, else
``secret_key`` in the config file, never from the command line, where it would
land in shell history and process lists. Output is by default a table on a
terminal, never cut, and plain tab-separated lines anywhere else (as the admin
listings, :mod:`pkgcat.cli._tables`); or ``--json`` (the normalized result) or
``--csv`` (rows).

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
import typer
from rich import box
from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from pkgcat.cli import group
from pkgcat.cli._tables import Column, show, widest
from pkgcat.client import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    Buyer,
    BuyersPage,
    Client,
    InvalidArgumentError,
    NotFoundError,
    Package,
    PermissionDeniedError,
    PkgcatError,
    ProtocolError,
    RateLimitError,
    Relations,
    ServerError,
    Source,
    UsageDay,
)

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
AsJson = Annotated[bool, typer.Option("--json", help="Print the normalized result as JSON.")]
AsCsv = Annotated[bool, typer.Option("--csv", help="Print a header line, then one line per row.")]
PackageId = Annotated[str, typer.Argument(metavar="ID", help="Package identifier.")]


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
    typer.echo(f"error: {' '.join(message.split())}", err=True)
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


def _output(as_json: bool, as_csv: bool) -> str:
    if as_json and as_csv:
        _fail("--json and --csv: choose one", EXIT_USAGE)
    return "json" if as_json else "csv" if as_csv else "table"


# --- canonical values ---------------------------------------------------------------------


def jsonable(value: object) -> object:
    """A record as JSON values: ISO 8601 dates with offset, amounts as decimal strings."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
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


def _print_csv(rows: Sequence[object], header: Sequence[str]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(getattr(row, name)) for name in header])
    sys.stdout.flush()


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


def _usage_table(days: list[UsageDay]) -> Table:
    largest = max((d.usage for d in days), default=0)
    rows = [(d.day.isoformat(), f"{d.usage:,}", _bar(d.usage, largest)) for d in days]
    table = Table(title="API requests per day", title_justify="left")
    table.add_column("day", no_wrap=True, min_width=widest(r[0] for r in rows))
    table.add_column(
        "requests",
        justify="right",
        no_wrap=True,
        min_width=widest([r[1] for r in rows] + ["requests"]),
    )
    table.add_column("", no_wrap=True, min_width=widest(r[2] for r in rows))
    for day, count, bar in rows:
        table.add_row(day, count, Text(bar))
    total = sum(d.usage for d in days)
    table.caption = f"{len(days)} days, {total:,} requests; the last day is today (so far)"
    return table


def _show_usage(days: list[UsageDay]) -> None:
    columns = [Column("date"), Column("usage")]
    show(columns, [(_cell(d.date), d.usage) for d in days], lambda: _usage_table(days))


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
    table = Table(title=f"{package.name} {package.version}", title_justify="left")
    table.add_column("field", style="bold", no_wrap=True, min_width=widest(n for n, _ in rows))
    # The package id is kept on one line; longer values (digests, addresses) fold.
    table.add_column("value", overflow="fold", min_width=widest([package.package]))
    missing = Text("(not sent by this server)", style="dim")
    for name, value in rows:
        table.add_row(name, missing if value is None else Text(str(value)))
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


def _buyers_table(buyers: Sequence[Buyer], caption: str) -> Table:
    """A row per buyer; a date offset or a status every row shares is said once, above or below."""
    offsets = {b.date.strftime("%z") for b in buyers}
    statuses = {b.status for b in buyers}
    shared_offset = offsets.pop() if len(offsets) == 1 else None
    shared_status = statuses.pop() if len(statuses) == 1 else None
    if shared_status is not None:
        caption += f"; status: {shared_status}"
    table = Table(
        caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True
    )
    cells: list[list[str]] = []

    def add(heading: str, values: list[str], justify: JustifyMethod = "left") -> None:
        # Every value here is a word to copy or compare whole (an id, a date, an amount, a
        # status): no column is wrapped nor shortened, each at least as wide as its widest value.
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
        table.add_row(*map(Text, row))
    return table


def _show_buyers(buyers: Sequence[Buyer], caption: str) -> None:
    names = [f.name for f in dataclasses.fields(Buyer)]
    rows = [[_cell(getattr(b, name)) for name in names] for b in buyers]
    show([Column(name) for name in names], rows, lambda: _buyers_table(buyers, caption))


# --- commands -------------------------------------------------------------------------------


@app.command("usage")
def usage(
    ctx: typer.Context,
    days: Annotated[int, typer.Option("--days", help="Days before today to report.")] = 30,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """Requests per day of the application the key belongs to, with a bar chart."""
    output = _output(as_json, as_csv)
    with _client(ctx, base_url, tz, key_in, retries) as client:
        result = client.usage(days)
    if output == "json":
        _print_json(result)
    elif output == "csv":
        _print_csv(result, ["date", "usage"])
    else:
        _show_usage(result)


@app.command("package")
def package(
    ctx: typer.Context,
    package_id: PackageId,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    as_json: AsJson = False,
) -> None:
    """The record of one package."""
    with _client(ctx, base_url, tz, key_in, retries) as client:
        result = client.package(package_id)
    if as_json:
        _print_json(result)
    else:
        _show_package(result)


@app.command("buyers")
def buyers(
    ctx: typer.Context,
    package_id: PackageId,
    every: Annotated[
        bool, typer.Option("--all", help="Every buyer, walking the pages (a list).")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="Page size: 25 by default, 100 with --all (server max 100)."),
    ] = None,
    page: Annotated[int | None, typer.Option("--page", help="Page number (default 1).")] = None,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> None:
    """The buyers of a paid package of your source: one page, or --all of them."""
    output = _output(as_json, as_csv)
    if every and page is not None:
        _fail("--page and --all: --all walks every page", EXIT_USAGE)
    rows: Sequence[Buyer]
    result: BuyersPage | list[Buyer]
    with _client(ctx, base_url, tz, key_in, retries) as client:
        if every:
            result = rows = list(client.iter_buyers(package_id, page_size=limit or 100))
            caption = f"{len(rows):,} buyers of {package_id}"
        else:
            result = client.buyers(package_id, limit=limit or 25, page=page or 1)
            rows = result.buyers
            first = result.start + 1 if rows else result.start
            caption = (
                f"page {result.page}: buyers {first:,}-{result.start + len(rows):,} "
                f"of {result.total:,} ({result.limit} per page)"
            )
    if output == "json":
        _print_json(result)
    elif output == "csv":
        _print_csv(rows, [f.name for f in dataclasses.fields(Buyer)])
    else:
        _show_buyers(rows, caption)
