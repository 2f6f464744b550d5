"""``pkgcat client``: read any server of the API family from a terminal, through :mod:`pkgcat.client`.

This module holds the commands: what each asks the server and which result it
prints. Where the server and the key come from, the options every command takes
and the exit codes are in :mod:`pkgcat.cli.client_config`; how a result is printed
(a table, plain lines, JSON or CSV) is in :mod:`pkgcat.cli.client_render`; the
webhook endpoints' commands (``pkgcat client webhook ...``) are in
:mod:`pkgcat.cli.client_webhooks`, the money's (``pkgcat client money ...``) in
:mod:`pkgcat.cli.client_money`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from pkgcat.cli import group
from pkgcat.cli._tables import Column, print_table, show
from pkgcat.cli.client_config import (
    EXIT_CODES,
    EXIT_USAGE,
    Cursor,
    Limit,
    Options,
    client_options,
    fail,
)
from pkgcat.cli.client_money import app as money_app
from pkgcat.cli.client_render import (
    downloads_table,
    jsonable,
    operation_names,
    ownership_row,
    packages_table,
    print_json,
    print_package,
    print_result,
    record_table,
    sales_table,
    show_buyers,
    show_rows,
    show_usage,
    totals_table,
    usage_rows,
    walk,
    write_csv,
)
from pkgcat.cli.client_webhooks import app as webhook_app
from pkgcat.cli.client_whitelist import app as whitelist_app
from pkgcat.client import (
    Buyer,
    BuyersCursorPage,
    BuyersPage,
    PackagesPage,
    Sale,
    SalesPage,
    SalesTotal,
    SourcePackage,
)

__all__ = ["EXIT_CODES", "EXIT_USAGE", "app", "jsonable"]
"""The command group; and the exit codes and the JSON values, still read from here."""

app = group("client")
app.add_typer(webhook_app, name="webhook")
app.add_typer(money_app, name="money")
app.add_typer(whitelist_app, name="whitelist")

PackageId = Annotated[str, typer.Argument(metavar="ID", help="Package identifier.")]


def _day_option(name: str, help: str) -> typer.models.OptionInfo:
    """An option that takes a calendar day, ``YYYY-MM-DD``."""
    return typer.Option(name, formats=["%Y-%m-%d"], metavar="YYYY-MM-DD", help=help)  # type: ignore[no-any-return]


Every = Annotated[bool, typer.Option("--all", help="Every item, following the cursors (one list).")]


def _day(value: datetime | None) -> date | None:
    return None if value is None else value.date()


# --- commands -------------------------------------------------------------------------------


@app.command("usage")
@client_options()
def usage(
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
    *,
    options: Options,
) -> None:
    """Requests per day of the application the key belongs to, with a bar chart."""
    if by is not None and by != "operation":
        fail(f"--by: {by!r}; the one split is: operation", EXIT_USAGE)
    with options.client() as client:
        result = client.usage(
            days, start=_day(start), end=_day(end), by="operation" if by else None
        )
    operations = operation_names(result)
    if options.output == "json":
        fields = {"date", "usage", "operations"} if by else {"date", "usage"}
        print_json(
            [{k: v for k, v in dataclasses.asdict(d).items() if k in fields} for d in result]
        )
    elif options.output == "csv":
        write_csv(["date", "usage", *operations], usage_rows(result, operations))
    else:
        show_usage(result, to_today=end is None)


@app.command("downloads")
@client_options()
def downloads(
    package_id: PackageId,
    days: Annotated[
        int | None, typer.Option("--days", help="Days before today to report [default: 30].")
    ] = None,
    start: Annotated[
        datetime | None, _day_option("--start", "First day, UTC (instead of --days).")
    ] = None,
    end: Annotated[datetime | None, _day_option("--end", "Last day [default: today].")] = None,
    *,
    options: Options,
) -> None:
    """Whole downloads of one of your packages per UTC day, with a bar chart and the total."""
    with options.client() as client:
        result = client.downloads(package_id, days, start=_day(start), end=_day(end))
    rows = [[d.day.isoformat(), d.downloads] for d in result.days]
    if options.output == "json":
        print_json(result)
    elif options.output == "csv":
        write_csv(["day", "downloads"], rows)
    else:
        show(
            [Column("day"), Column("downloads", kind="number")],
            rows,
            lambda: downloads_table(result, to_today=end is None),
        )


@app.command("package")
@client_options(without=("as_csv",))
def package(
    package_id: PackageId,
    *,
    options: Options,
) -> None:
    """The record of one package."""
    with options.client() as client:
        result = client.package(package_id)
    print_package(options.output, result)


LARGE_UPLOAD = 4 * 1024 * 1024
"""Uploads from this size on show a progress bar (on a terminal)."""


@app.command("upload")
@client_options(without=("as_csv",))
def upload(
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
    *,
    options: Options,
) -> None:
    """Publish a .deb to the key's source (a key with the publish scope); its details."""
    size = file.stat().st_size
    with options.client() as client:
        if size < LARGE_UPLOAD or not Console(stderr=True).is_terminal:
            result = client.upload(file, idempotency_key)
        else:
            with Progress(console=Console(stderr=True), transient=True) as progress:
                task = progress.add_task(f"uploading {file.name}", total=size)
                result = client.upload(
                    file, idempotency_key, progress=lambda n: progress.advance(task, n)
                )
    print_package(options.output, result)


@app.command("buyers")
@client_options()
def buyers(
    package_id: PackageId,
    every: Annotated[
        bool, typer.Option("--all", help="Every buyer, following the cursors (a list).")
    ] = False,
    limit: Limit = None,
    page: Annotated[int | None, typer.Option("--page", help="Page number (default 1).")] = None,
    cursor: Cursor = None,
    *,
    options: Options,
) -> None:
    """The buyers of a paid package of your source: one page, or --all of them."""
    given = (("--all", every), ("--page", page is not None), ("--cursor", cursor is not None))
    chosen = [option for option, on in given if on]
    if len(chosen) > 1:
        fail(f"{' and '.join(chosen)}: choose one way to page", EXIT_USAGE)
    rows: Sequence[Buyer]
    result: BuyersPage | BuyersCursorPage | list[Buyer]
    with options.client() as client:
        if every:
            result = rows = walk(client.iter_buyers(package_id, page_size=limit or 100), "buyers")
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
    if not print_result(options.output, result, Buyer, rows):
        show_buyers(rows, caption)


@app.command("packages")
@client_options()
def packages(
    paid: Annotated[
        bool | None, typer.Option("--paid/--free", help="Only paid, or only free packages.")
    ] = None,
    online: Annotated[
        bool | None, typer.Option("--online/--offline", help="Only online, or only offline.")
    ] = None,
    every: Every = False,
    limit: Limit = None,
    cursor: Cursor = None,
    *,
    options: Options,
) -> None:
    """Your source's packages, online and offline, by identifier: one page, or --all."""
    if every and cursor is not None:
        fail("--all and --cursor: --all starts at the first page", EXIT_USAGE)
    result: PackagesPage | list[SourcePackage]
    rows: Sequence[SourcePackage]
    with options.client() as client:
        if every:
            listing = client.iter_packages(paid=paid, online=online, page_size=limit or 100)
            result = rows = walk(listing, "packages")
            caption = f"{len(rows):,} packages"
        else:
            result = client.packages(paid=paid, online=online, limit=limit or 25, cursor=cursor)
            rows = result.packages
            more = "more follow (--cursor, or --all)" if result.has_more else "the last page"
            caption = f"{len(rows):,} packages; {more}"
    if not print_result(options.output, result, SourcePackage, rows):
        show_rows(SourcePackage, rows, lambda: packages_table(rows, caption))


@app.command("check")
@client_options()
def check(
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
    *,
    options: Options,
) -> None:
    """Whether a buyer, or a device, owns a package of your source (exit 0 either way).

    With a public key (pkp_...) as the key, only a device's check: owned or not."""
    with options.client() as client:
        result = client.check(
            package_id, nickname=nickname, account=account, udid=udid, model=model
        )
    row = ownership_row(result)
    if options.output == "json":
        print_json(result)
    elif options.output == "csv":
        write_csv(list(row), [list(row.values())])
    else:
        values = [(name, None if value == "" else value) for name, value in row.items()]
        title = f"{result.package}: {'owned' if result.owned else 'not owned'}"
        show([Column(n) for n in row], [list(row.values())], lambda: record_table(title, values))


@app.command("sales")
@client_options()
def sales(
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
    *,
    options: Options,
) -> None:
    """Your sales ledger, newest first, with the totals per currency: one page, or --all."""
    if every and cursor is not None:
        fail("--all and --cursor: --all starts at the first page", EXIT_USAGE)
    first_day, last_day = _day(start), _day(end)
    with options.client() as client:
        if every and not totals_only:
            pages = walk(
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
        if not print_result(options.output, list(result.totals), SalesTotal, result.totals):
            show_rows(
                SalesTotal,
                result.totals,
                lambda: totals_table(result.totals, result.start, result.end),
            )
        return
    if print_result(options.output, result, Sale, rows):
        return
    show_rows(Sale, rows, lambda: sales_table(rows, caption))
    out = Console()
    if out.is_terminal:
        print_table(totals_table(result.totals, result.start, result.end), out)
