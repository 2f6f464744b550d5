"""Reading the operator's CSV and JSON Lines files into rows of text, line by line.

What is read, and what is not:

- the format follows the suffix: ``.csv``, or ``.jsonl``/``.ndjson``; the text is UTF-8
  (a byte-order mark is allowed);
- a CSV file's delimiter is the one given, or else the one of ``, ; TAB |`` that splits
  the header into the most known column names (a comma on a tie or when none does);
  ``csv.Sniffer`` is not used, because it guesses from character counts and misreads a
  header of a few words, where the column names we expect settle it;
- column names and JSON keys are read without regard to case or surrounding spaces
  (:func:`column_name`), so ``Package`` is ``package`` in either format;
- a column (or JSON key) that pkgcat does not read is ignored, and named in
  :attr:`Table.ignored` so the caller can say so; a column (or a key of one object)
  named twice, a required column missing and a row that cannot be read are each a
  :class:`Problem`.

Values are returned stripped; an empty value is left out of the row, so a blank
cell and a missing one read the same. A value that holds a control character
(NUL, ESC, a line break...: :mod:`pkgcat.ingest.text`) is a problem, on SQLite as
on PostgreSQL, whatever its column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pkgcat.ingest.errors import OperatorDataError
from pkgcat.ingest.text import control_in_line

DELIMITERS = (",", ";", "\t", "|")
"""The delimiters detected, in order of preference on a tie."""
SUFFIXES = (".csv", ".jsonl", ".ndjson")

Row = dict[str, str]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a file, at a line; ``column`` is None for the row as a whole."""

    line: int
    column: str | None
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"column {self.column!r}" if self.column is not None else "row"
        hint = f"; hint: {self.hint}" if self.hint else ""
        return f"line {self.line}: {where}: {self.message}{hint}"


def refuse(path: Path, problems: list[Problem]) -> OperatorDataError:
    """The error listing ``problems`` by line (a line's problems in the order found)."""
    ordered = sorted(problems, key=lambda problem: problem.line)
    return OperatorDataError(str(path), [str(problem) for problem in ordered])


@dataclass(frozen=True, slots=True)
class Table:
    """The rows of a file, each with its line number, and the columns that were not read."""

    rows: list[tuple[int, Row]]
    ignored: tuple[str, ...]


def _kept(line: int, name: str, value: str, row: Row, problems: list[Problem]) -> None:
    """Put ``value`` in ``row`` under ``name``; a problem too when it holds a control character.

    Kept all the same, so the checks that follow do not call it missing: a file with a
    problem is never written.
    """
    row[name] = value
    control = control_in_line(value)
    if control is not None:
        problems.append(Problem(line, name, f"holds the control character {control}", "remove it"))


def delimiter_name(delimiter: str) -> str:
    return "TAB" if delimiter == "\t" else repr(delimiter)


def _text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        problem = Problem(
            line,
            None,
            f"not valid UTF-8 (byte 0x{data[error.start]:02x})",
            "save the file as UTF-8 (in a spreadsheet: CSV UTF-8)",
        )
        raise refuse(path, [problem]) from None


def column_name(name: str) -> str:
    """A CSV header's column name or a JSON key as pkgcat reads it: stripped, in lower case."""
    return name.strip().lower()


def _named_twice(names: list[str], line: int, where: str, problems: list[Problem]) -> None:
    for name in dict.fromkeys(name for name in names if name and names.count(name) > 1):
        problems.append(Problem(line, name, f"named twice in {where}", "keep one of them"))


def _header(text: str, delimiter: str) -> list[str]:
    try:
        return list(map(column_name, next(csv.reader(io.StringIO(text), delimiter=delimiter))))
    except (StopIteration, csv.Error):
        return []


def detect_delimiter(text: str, columns: tuple[str, ...]) -> str:
    """The delimiter that splits the header into the most names of ``columns``."""
    known = [sum(name in columns for name in _header(text, d)) for d in DELIMITERS]
    return DELIMITERS[known.index(max(known))]


def _csv_rows(
    text: str,
    columns: tuple[str, ...],
    required: tuple[str, ...],
    delimiter: str,
    problems: list[Problem],
) -> tuple[Iterator[tuple[int, Row]], tuple[str, ...]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = list(map(column_name, next(reader)))
    except StopIteration:
        problems.append(Problem(1, None, "the file is empty", "the first line names the columns"))
        return iter(()), ()
    except csv.Error as error:
        problems.append(Problem(1, None, f"not CSV ({error})"))
        return iter(()), ()
    ignored = tuple(dict.fromkeys(name for name in header if name not in columns))
    _named_twice(header, 1, "the header", problems)
    for name in required:
        if name not in header:
            hint = f"the columns are {', '.join(columns)}"
            if ignored:
                hint += f"; this header has {', '.join(map(repr, ignored))} instead"
            if len(header) == 1:
                hint += f"; the header was split at {delimiter_name(delimiter)}: name the file's delimiter with --delimiter"
            problems.append(Problem(1, name, "missing from the header", hint))
    if problems:
        return iter(()), ignored

    def rows() -> Iterator[tuple[int, Row]]:
        while True:
            line = reader.line_num + 1
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                problems.append(Problem(line, None, f"not CSV ({error})"))
                return
            if not values or values == [""]:
                continue
            if len(values) != len(header):
                problems.append(
                    Problem(
                        line,
                        None,
                        f"{len(values)} values, the header names {len(header)} columns",
                        f"a value that holds {delimiter_name(delimiter)} must be in double quotes",
                    )
                )
                continue
            row: Row = {}
            for name, value in zip(header, values, strict=True):
                if name in columns and (value := value.strip()):
                    _kept(line, name, value, row, problems)
            yield line, row

    return rows(), ignored


def _json_value(value: Any) -> str | None:
    if value is None:
        return ""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float):
        return str(value)
    return None


def _jsonl_rows(
    text: str, columns: tuple[str, ...], problems: list[Problem], ignored: dict[str, None]
) -> Iterator[tuple[int, Row]]:
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            document = orjson.loads(content)
        except orjson.JSONDecodeError as error:
            problems.append(Problem(line, None, f"not JSON ({error})", "one JSON object per line"))
            continue
        if not isinstance(document, dict):
            problems.append(Problem(line, None, "not a JSON object", "one JSON object per line"))
            continue
        names = list(map(column_name, document))
        _named_twice(names, line, "the object", problems)
        row: Row = {}
        for key, value in zip(names, document.values(), strict=True):
            if key not in columns:
                ignored.setdefault(key)
                continue
            text_value = _json_value(value)
            if text_value is None:
                problems.append(
                    Problem(
                        line,
                        key,
                        f"{orjson.dumps(value).decode()[:40]} is not a string or a number",
                    )
                )
            elif text_value:
                _kept(line, key, text_value, row, problems)
        yield line, row


def read_table(
    path: Path,
    columns: tuple[str, ...],
    required: tuple[str, ...],
    problems: list[Problem],
    *,
    delimiter: str | None = None,
) -> Table:
    """The rows of a CSV or JSON Lines file with their line numbers; problems are appended.

    A CSV header must name every ``required`` column; a JSON Lines row that
    lacks one is reported by the row's checks, line by line. ``delimiter``
    (CSV only) overrides the detected one.
    """
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        problem = Problem(
            1, None, f"a {suffix or 'file without suffix'} file", "name it .csv or .jsonl"
        )
        raise refuse(path, [problem])
    text = _text(path)
    if suffix != ".csv":
        ignored: dict[str, None] = {}
        rows = list(_jsonl_rows(text, columns, problems, ignored))
        return Table(rows, tuple(ignored))
    chosen = delimiter if delimiter is not None else detect_delimiter(text, columns)
    found, ignored_columns = _csv_rows(text, columns, required, chosen, problems)
    return Table(list(found), ignored_columns)
