"""Listings: a table on a terminal, plain tab-separated lines anywhere else; never cut.

On a terminal (as rich sees it: a TTY, or ``TTY_COMPATIBLE=1`` / ``FORCE_COLOR``)
rows are drawn as a table. Identifiers (names, key prefixes, ids) and numbers
are never wrapped nor shortened: when the terminal is too narrow for them, the
table is drawn wider than the terminal rather than cut. Other columns may
wrap, and a long word in them folds onto the next line, but nothing is ever
replaced by an ellipsis (rich's default when a table does not fit).

Anywhere else (a pipe, a file, ``TTY_COMPATIBLE=0``) the output is plain and
complete: a header line of the columns' field names, then one line per row,
fields separated by tabs. A tab, newline, carriage return or backslash inside
a value is written as ``\\t``, ``\\n``, ``\\r`` or ``\\\\`` so that every row stays
one line, any other control character as ``\\x1b`` and the like, and a value that
a spreadsheet would run as a formula gets a leading ``'`` (:mod:`pkgcat.cli._safe`):
a spreadsheet opens tab-separated lines as readily as CSV. Tables show control
characters the same way.

A command whose table is not a plain listing (a chart, a record, a page with a
caption) builds its own rich table and hands it, with its plain columns and rows,
to :func:`show`, which makes the same choice as :func:`print_rows`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from pkgcat.cli._safe import cell, spreadsheet_cell, visible

_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_UNBOUNDED = 1_000_000
"""A width no table reaches: measuring at it gives the table's natural widths."""


Kind = Literal["text", "identifier", "number", "time"]
"""How a column is drawn in a table (plain output writes every value as it is).

- ``text`` wraps at spaces, and a word too long for the column folds onto the next line;
- ``identifier`` (a name, a key prefix) is never wrapped nor shortened: it must be copied whole;
- ``number`` is right-aligned and never wrapped;
- ``time`` (ISO 8601 in UTC, as :func:`when` writes it) shows as ``YYYY-MM-DD HH:MM:SS``,
  which wraps between the date and the time when space is short.
"""


@dataclass(frozen=True, slots=True)
class Column:
    """One column: ``field`` heads the plain output (as in ``--json``), ``title`` the table."""

    field: str
    title: str = ""
    kind: Kind = "text"

    @property
    def heading(self) -> str:
        return self.title or self.field

    def shown(self, value: str) -> str:
        if self.kind == "time":
            return value.replace("T", " ").removesuffix("+00:00")
        return value


def when(seconds: int | None) -> str:
    """A stored time (unix seconds) as ISO 8601 in UTC; empty for none."""
    return "" if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()


def plain_line(values: Iterable[str]) -> str:
    """One tab-separated line, the separators and control characters escaped, formulas defused."""
    return "\t".join(visible(spreadsheet_cell(v).translate(_ESCAPES)) for v in values)


def widest(values: Iterable[str]) -> int | None:
    """The width of the widest value on a terminal, as a column's ``min_width``; none for no values."""
    return max(map(cell_len, values), default=0) or None


def print_plain(columns: Sequence[Column], rows: Iterable[Sequence[object]]) -> None:
    """A header line of the columns' field names, then a tab-separated line per row."""
    typer.echo(plain_line(c.field for c in columns))
    for row in rows:
        typer.echo(plain_line("" if v is None else str(v) for v in row))


def print_table(table: Table, console: Console) -> None:
    """Print ``table`` whole: wider than the terminal when it needs to be, never cut.

    Give the columns that must not wrap ``no_wrap=True`` and a ``min_width`` (see
    :func:`widest`), and the others ``overflow="fold"``: then nothing is shortened.
    """
    # Rich shares out a width too small for the no-wrap columns by shortening them all;
    # give it at least what the table needs instead, and let the terminal wrap the lines.
    needed = Measurement.get(console, console.options.update_width(_UNBOUNDED), table).minimum
    if needed > console.width:
        console.width = needed
    # Not cropped either: rich may widen a column back to its minimum after sharing out the
    # width, and a line a little wider than the terminal is wrapped by it, not cut.
    console.print(table, crop=False)


def show(
    columns: Sequence[Column],
    rows: Iterable[Sequence[object]],
    table: Callable[[], Table],
    *,
    console: Console | None = None,
) -> None:
    """On a terminal the table ``table()`` builds, drawn whole; anywhere else plain lines.

    The one place that chooses between the two. The plain lines are the field names
    of ``columns``, then ``rows``; the table is built only when it is drawn.
    """
    out = console or Console()
    if out.is_terminal:
        print_table(table(), out)
    else:
        print_plain(columns, rows)


def _listing(columns: Sequence[Column], cells: Sequence[Sequence[str]]) -> Table:
    # No rules: a row copied from the terminal holds the values and spaces only.
    table = Table(box=None, pad_edge=False)
    shown = [[visible(c.shown(v)) for c, v in zip(columns, row, strict=True)] for row in cells]
    for index, column in enumerate(columns):
        whole = column.kind in ("identifier", "number")
        # Rich narrows wrapping columns below their longest word when short of space:
        # a time keeps at least its date (or its time) on one line.
        parts = [p for row in shown for p in (row[index].split() if column.kind == "time" else [])]
        values = [row[index] for row in shown] + [column.heading] if whole else parts
        table.add_column(
            column.heading,
            justify="right" if column.kind == "number" else "left",
            no_wrap=whole,
            overflow="fold",
            min_width=widest(values),
        )
    for row in shown:
        table.add_row(*map(cell, row))
    return table


def print_rows(
    columns: Sequence[Column],
    rows: Iterable[Sequence[object]],
    *,
    console: Console | None = None,
) -> None:
    """Print ``rows`` (one value per column; ``None`` prints empty) as a table or plain lines."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    show(columns, cells, lambda: _listing(columns, cells), console=console)
