"""How ``pkgcat client`` prints a result: a table, plain lines, JSON or CSV.

Output is by default a table on a terminal, never cut, and plain tab-separated
lines anywhere else (as the admin listings, :mod:`pkgcat.cli._tables`); or
``--format json`` (the normalized result, :func:`jsonable`) or ``--format csv``
(rows); ``--json`` and ``--csv`` are short for those. On a table, identifiers
(package ids, nicknames, transaction ids), dates and amounts are never wrapped nor
shortened and other values fold; the plain lines and the CSV hold the canonical
values (:func:`canonical`). A walk over cursors (``--all``) shows its progress on
stderr while stdout is a terminal (:func:`walk`).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date
from decimal import Decimal
from typing import TypeVar

import typer
from rich import box
from rich.console import Console, JustifyMethod
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table
from rich.text import Text

from pkgcat.cli._safe import cell, spreadsheet_cell, visible
from pkgcat.cli._tables import Column, show, widest
from pkgcat.cli.client_config import Output
from pkgcat.client import (
    Buyer,
    Downloads,
    Ownership,
    Package,
    Relations,
    Sale,
    SalesTotal,
    Source,
    SourcePackage,
    UsageDay,
)

T = TypeVar("T")

BAR_WIDTH = 40
_EIGHTHS = " ▏▎▍▌▋▊▉"


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


def print_json(value: object) -> None:
    typer.echo(json.dumps(jsonable(value), indent=2, ensure_ascii=False))


def canonical(value: object) -> str:
    """A value as the plain lines and the CSV hold it: empty for none, a relation as sent,
    a string as it is, anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, Relations):
        return value.raw
    rendered = jsonable(value)
    return rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False)


def write_csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """CSV rows, each value with its formulas defused and its control characters visible."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([visible(spreadsheet_cell(canonical(value))) for value in row])
    sys.stdout.flush()


def _print_csv(rows: Sequence[object], header: Sequence[str]) -> None:
    write_csv(header, ([getattr(row, name) for name in header] for row in rows))


def _names(kind: type[object]) -> list[str]:
    """The fields of a result type, in order: the columns of its CSV and plain lines."""
    return [f.name for f in dataclasses.fields(kind)]  # type: ignore[arg-type]


def print_result(
    output: Output, result: object, kind: type[object], items: Sequence[object]
) -> bool:
    """JSON of ``result`` or CSV of ``items``; ``False`` when the output is a table."""
    if output == "json":
        print_json(result)
    elif output == "csv":
        _print_csv(items, _names(kind))
    return output != "table"


def show_rows(kind: type[object], items: Sequence[object], table: Callable[[], Table]) -> None:
    """Items of a result type: ``table()`` on a terminal, else a plain line per item."""
    names = _names(kind)
    rows = [[canonical(getattr(item, name)) for name in names] for item in items]
    show([Column(name) for name in names], rows, table)


# --- tables ---------------------------------------------------------------------------------
# On a terminal a rich table, in which identifiers (package ids, nicknames, transaction ids),
# dates and amounts are never wrapped nor shortened and other values fold; anywhere else
# plain tab-separated lines of the canonical values (see pkgcat.cli._tables).


def record_table(title: str, rows: Sequence[tuple[str, object]]) -> Table:
    """A record as two columns, field and value; a value the server did not send is dim."""
    table = Table(title=cell(title), title_justify="left")
    table.add_column("field", style="bold", no_wrap=True, min_width=widest(n for n, _ in rows))
    table.add_column("value", overflow="fold", min_width=widest(str(v) for _, v in rows[:1]))
    for name, value in rows:
        table.add_row(name, Text("none", style="dim") if value is None else cell(value))
    return table


def _page_table(caption: str) -> Table:
    """A table of one page of a list, its caption (which may quote the server) shown as text."""
    return Table(
        caption=cell(caption),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
    )


def _bar(value: int, largest: int) -> str:
    """A horizontal bar, ``BAR_WIDTH`` cells for the largest value, to an eighth of a cell."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / largest * BAR_WIDTH * 8))
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def operation_names(days: Sequence[UsageDay]) -> list[str]:
    """Every operation counted on any of ``days``, by name (none without ``--by operation``)."""
    return sorted({name for d in days for name in d.operations or {}})


def _per_day(
    title: str, heading: str, counts: Sequence[tuple[date, int]]
) -> tuple[Table, list[tuple[str, str, str]]]:
    """A chart's table with its first columns, the day and its count, and its rows with their bars."""
    largest = max((count for _, count in counts), default=0)
    rows = [(day.isoformat(), f"{count:,}", _bar(count, largest)) for day, count in counts]
    table = Table(title=title, title_justify="left")
    table.add_column("day", no_wrap=True, min_width=widest(r[0] for r in rows))
    table.add_column(
        heading,
        justify="right",
        no_wrap=True,
        min_width=widest([r[1] for r in rows] + [heading]),
    )
    return table, rows


def _caption(days: int, total: int, what: str, to_today: bool) -> str:
    caption = f"{days} days, {total:,} {what}"
    return caption + "; the last day is today (so far)" if to_today else caption


def _usage_table(days: list[UsageDay], to_today: bool) -> Table:
    operations = operation_names(days)
    table, rows = _per_day("API requests per day", "requests", [(d.day, d.usage) for d in days])
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
    table.caption = _caption(len(days), sum(d.usage for d in days), "requests", to_today)
    return table


def usage_rows(days: Sequence[UsageDay], operations: Sequence[str]) -> list[list[object]]:
    return [
        [canonical(d.date), d.usage, *((d.operations or {}).get(name, 0) for name in operations)]
        for d in days
    ]


def show_usage(days: list[UsageDay], to_today: bool) -> None:
    operations = operation_names(days)
    columns = [Column("date"), Column("usage"), *map(Column, operations)]
    show(columns, usage_rows(days, operations), lambda: _usage_table(days, to_today))


def downloads_table(result: Downloads, to_today: bool) -> Table:
    title = f"Downloads of {visible(result.package)} per day (UTC)"
    table, rows = _per_day(title, "downloads", [(d.day, d.downloads) for d in result.days])
    table.add_column("", no_wrap=True, min_width=widest(r[2] for r in rows))
    for day, count, bar in rows:
        table.add_row(day, count, Text(bar))
    table.caption = _caption(len(rows), result.total, "downloads", to_today)
    return table


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
                yield f"{field.name}.{part.name}", canonical(getattr(value, part.name))
        else:
            yield field.name, canonical(value)


def _show_package(package: Package) -> None:
    columns = [Column("field"), Column("value")]
    show(columns, list(_package_fields(package)), lambda: _package_table(package))


def print_package(output: Output, package: Package) -> None:
    if output == "json":
        print_json(package)
    elif output == "csv":
        write_csv(["field", "value"], _package_fields(package))
    else:
        _show_package(package)


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


def show_buyers(buyers: Sequence[Buyer], caption: str) -> None:
    names = [f.name for f in dataclasses.fields(Buyer)]
    rows = [[canonical(getattr(b, name)) for name in names] for b in buyers]
    show([Column(name) for name in names], rows, lambda: _buyers_table(buyers, caption))


def _amount(value: Decimal | None, currency: str) -> str:
    return "not known yet" if value is None else f"{format(value, 'f')} {currency}"


def packages_table(packages: Sequence[SourcePackage], caption: str) -> Table:
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


def sales_table(sales: Sequence[Sale], caption: str) -> Table:
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


def totals_table(totals: Sequence[SalesTotal], start: date, end: date) -> Table:
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


def ownership_row(result: Ownership) -> dict[str, str]:
    """The check as one flat row: the purchase's fields beside the others."""
    purchase = result.purchase
    row = {
        "package": result.package,
        "owned": "true" if result.owned else "false",
        "since": canonical(result.since),
        "txn_id": purchase.txn_id if purchase else "",
        "allowed_for": purchase.allowed_for if purchase else "",
    }
    if result.udid is not None:  # a device's check, from a server that answers as YouRepo
        row["udid"] = result.udid
        row["check"] = result.check or ("success" if result.owned else "fail")
    return row


# --- progress -------------------------------------------------------------------------------


def walk(items: Iterable[T], what: str, size: Callable[[T], int] = lambda _: 1) -> list[T]:
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
