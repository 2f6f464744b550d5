"""The operator's purchases, statistics and prices: CSV or JSON Lines, checked whole.

A file is read and every row validated before anything is written; a file
with any problem is refused with all of them, each as ``line N: field: what
is wrong`` (:class:`~pkgcat.ingest.errors.OperatorDataError`). The columns
(CSV header, or JSON keys) are the spec's field names:

- purchases: ``package`` (a package purchase) or ``source`` (a purchase of
  the whole source), ``nickname``, ``status``, ``total``, ``commission``,
  ``currency``, ``date``, ``txn_id``, ``payment_platform``, and optionally
  ``profile_url`` and ``allowed_for`` (which must then agree);
- stats: ``package``, ``total_download``, ``total_votes``, ``total_value_votes``;
- prices: ``package``, ``price``, ``currency``.

The format follows the file's suffix: ``.csv``, or ``.jsonl``/``.ndjson``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from pkgcat.domain import Scope
from pkgcat.ingest.currencies import CURRENCIES
from pkgcat.ingest.errors import OperatorDataError

_DECIMAL = re.compile(r"\d{1,20}(\.\d{1,8})?")
_PLATFORM = re.compile(r"[a-z0-9_.-]{1,64}")
_MAX_INTEGER = 2**63 - 1

PURCHASE_COLUMNS = (
    "package", "source", "allowed_for", "nickname", "status", "total", "commission",
    "currency", "date", "txn_id", "profile_url", "payment_platform",
)  # fmt: skip
_OPTIONAL_PURCHASE_COLUMNS = ("package", "source", "allowed_for", "profile_url")
STATS_COLUMNS = ("package", "total_download", "total_votes", "total_value_votes")
PRICE_COLUMNS = ("package", "price", "currency")

Row = dict[str, str]


@dataclass(frozen=True, slots=True)
class Catalogue:
    """What validation checks rows against: packages (row id, source id) and sources by name."""

    packages: Mapping[str, tuple[int, int]]
    sources: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class PurchaseRow:
    line: int
    source_id: int
    package_id: int | None
    allowed_for: Scope
    nickname: str
    status: str
    total: str
    commission: str
    currency: str
    purchased_at: int
    txn_id: str
    profile_url: str
    payment_platform: str


@dataclass(frozen=True, slots=True)
class StatsRow:
    line: int
    package_id: int
    total_download: int
    total_votes: int
    total_value_votes: int


@dataclass(frozen=True, slots=True)
class PriceRow:
    line: int
    package_id: int
    price: str
    currency: str


# Reading -------------------------------------------------------------------------------------


def _text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise OperatorDataError(
            str(path), [f"line {line}: row: not valid UTF-8 (byte 0x{data[error.start]:02x})"]
        ) from None


def _csv_rows(
    text: str, columns: tuple[str, ...], required: tuple[str, ...], problems: list[str]
) -> Iterator[tuple[int, Row]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip().lower() for name in next(reader)]
    except StopIteration:
        problems.append("line 1: header: the file is empty")
        return
    except csv.Error as error:
        problems.append(f"line 1: header: not CSV ({error})")
        return
    for name in header:
        if name not in columns:
            problems.append(
                f"line 1: {name or '(empty)'}: unknown column (known: {', '.join(columns)})"
            )
    if len(set(header)) != len(header):
        problems.append("line 1: header: a column is named twice")
    for name in required:
        if name not in header:
            problems.append(f"line 1: {name}: missing column")
    if problems:
        return
    while True:
        line = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            problems.append(f"line {line}: row: not CSV ({error})")
            return
        if not values or values == [""]:
            continue
        if len(values) != len(header):
            problems.append(
                f"line {line}: row: {len(values)} values, the header names {len(header)} columns"
            )
            continue
        yield line, dict(zip(header, (v.strip() for v in values), strict=True))


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
    text: str, columns: tuple[str, ...], problems: list[str]
) -> Iterator[tuple[int, Row]]:
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            document = orjson.loads(content)
        except orjson.JSONDecodeError as error:
            problems.append(f"line {line}: row: not JSON ({error})")
            continue
        if not isinstance(document, dict):
            problems.append(f"line {line}: row: not a JSON object")
            continue
        row: Row = {}
        for key, value in document.items():
            text_value = _json_value(value)
            if key not in columns:
                problems.append(f"line {line}: {key}: unknown field (known: {', '.join(columns)})")
            elif text_value is None:
                problems.append(f"line {line}: {key}: give a string or a number")
            else:
                row[key] = text_value
        yield line, row


def read_rows(
    path: Path, columns: tuple[str, ...], required: tuple[str, ...], problems: list[str]
) -> list[tuple[int, Row]]:
    """The rows of a CSV or JSON Lines file with their line numbers; problems are appended.

    A CSV header must name every ``required`` column; a JSON Lines row that
    lacks one is reported by the field checks, line by line.
    """
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise OperatorDataError(
            str(path), [f"line 1: file: {suffix or 'no suffix'}; name it .csv or .jsonl"]
        )
    text = _text(path)
    if suffix == ".csv":
        return list(_csv_rows(text, columns, required, problems))
    return list(_jsonl_rows(text, columns, problems))


# Fields --------------------------------------------------------------------------------------


class _Checker:
    """Validates the fields of one row; every problem is kept, with its line."""

    def __init__(self, line: int, row: Row, problems: list[str]) -> None:
        self.line, self.row, self.problems = line, row, problems

    def bad(self, field: str, message: str) -> None:
        self.problems.append(f"line {self.line}: {field}: {message}")

    def text(self, field: str, limit: int, *, required: bool = True) -> str:
        value = self.row.get(field, "")
        if not value and required:
            self.bad(field, "missing")
        elif len(value) > limit:
            self.bad(field, f"longer than {limit} characters")
        return value

    def decimal(self, field: str) -> str:
        value = self.text(field, 32)
        if value and not _DECIMAL.fullmatch(value):
            hint = "; use a point as the decimal separator" if "," in value else ""
            self.bad(field, f"{value!r} is not an amount like 1.99 (not negative){hint}")
        return value

    def integer(self, field: str) -> int:
        value = self.text(field, 20)
        if value and (not value.isdigit() or int(value) > _MAX_INTEGER):
            self.bad(field, f"{value!r} is not a whole number (0 or more)")
            return 0
        return int(value) if value else 0

    def currency(self, field: str = "currency") -> str:
        value = self.text(field, 3)
        if value and value not in CURRENCIES:
            hint = (
                f" (write it in capitals: {value.upper()})" if value.upper() in CURRENCIES else ""
            )
            self.bad(field, f"{value!r} is not an ISO 4217 currency code{hint}")
        return value

    def moment(self, field: str) -> int:
        value = self.text(field, 64)
        if not value:
            return 0
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            self.bad(
                field, f"{value!r} is not an ISO 8601 date-time, like 2024-03-10T12:00:00+00:00"
            )
            return 0
        if moment.tzinfo is None:
            self.bad(field, f"{value!r} has no UTC offset; add one, like +00:00 or Z")
            return 0
        return int(moment.timestamp())

    def package(self, catalogue: Catalogue, field: str = "package") -> tuple[int, int] | None:
        value = self.text(field, 255)
        if value and value not in catalogue.packages:
            self.bad(field, f"no package {value!r} in the catalogue")
        return catalogue.packages.get(value)


# Rows ----------------------------------------------------------------------------------------


def _validated(
    path: Path,
    columns: tuple[str, ...],
    required: tuple[str, ...],
    check: Callable[[_Checker], Any],
) -> list[Any]:
    problems: list[str] = []
    rows = read_rows(path, columns, required, problems)
    checked = [check(_Checker(line, row, problems)) for line, row in rows]
    if problems:
        # Rows that could not be read are found before the others are checked: sort by line.
        problems.sort(key=lambda problem: int(problem.split(":", 1)[0].removeprefix("line ")))
        raise OperatorDataError(str(path), problems)
    return checked


def purchases(path: Path, catalogue: Catalogue) -> list[PurchaseRow]:
    """Every purchase of the file, validated; :class:`OperatorDataError` lists what is wrong."""
    first_line: dict[str, int] = {}

    def check(c: _Checker) -> PurchaseRow:
        package = c.row.get("package", "")
        source = c.row.get("source", "")
        scope = c.row.get("allowed_for", "")
        source_id, package_id = 0, None
        if package and source:
            c.bad("source", "give either package (a package purchase) or source, not both")
        elif package:
            found = c.package(catalogue)
            if found is not None:
                package_id, source_id = found
        elif source:
            if source not in catalogue.sources:
                c.bad("source", f"no source named {source!r}")
            source_id = catalogue.sources.get(source, 0)
        else:
            c.bad("package", "missing; give package, or source for a purchase of a whole source")
        inferred: Scope = "source" if source and not package else "package"
        if scope and scope not in ("package", "source"):
            c.bad("allowed_for", f"{scope!r} is neither 'package' nor 'source'")
        elif scope and scope != inferred:
            c.bad("allowed_for", f"{scope!r} does not match the {inferred} column given")
        txn_id = c.text("txn_id", 128)
        if txn_id:
            seen = first_line.setdefault(txn_id, c.line)
            if seen != c.line:
                c.bad("txn_id", f"{txn_id!r} is also on line {seen}")
        profile_url = c.text("profile_url", 2000, required=False)
        if profile_url and not profile_url.startswith(("http://", "https://")):
            c.bad("profile_url", f"{profile_url!r} is not an http(s) address")
        platform = c.text("payment_platform", 64)
        if platform and not _PLATFORM.fullmatch(platform):
            c.bad("payment_platform", f"{platform!r}: lower-case letters, digits, '.', '_', '-'")
        return PurchaseRow(
            line=c.line,
            source_id=source_id,
            package_id=package_id,
            allowed_for=inferred,
            nickname=c.text("nickname", 200),
            status=c.text("status", 64),
            total=c.decimal("total"),
            commission=c.decimal("commission"),
            currency=c.currency(),
            purchased_at=c.moment("date"),
            txn_id=txn_id,
            profile_url=profile_url,
            payment_platform=platform,
        )

    required = tuple(c for c in PURCHASE_COLUMNS if c not in _OPTIONAL_PURCHASE_COLUMNS)
    rows: list[PurchaseRow] = _validated(path, PURCHASE_COLUMNS, required, check)
    return rows


def _unique_package(c: _Checker, catalogue: Catalogue, lines: dict[str, int]) -> int:
    found = c.package(catalogue)
    name = c.row.get("package", "")
    seen = lines.setdefault(name, c.line) if name else c.line
    if seen != c.line:
        c.bad("package", f"{name!r} is also on line {seen}")
    return found[0] if found else 0


def stats(path: Path, catalogue: Catalogue) -> list[StatsRow]:
    """Every statistics row of the file, validated."""
    lines: dict[str, int] = {}

    def check(c: _Checker) -> StatsRow:
        package_id = _unique_package(c, catalogue, lines)
        votes, value = c.integer("total_votes"), c.integer("total_value_votes")
        # Each vote is a rating from 1 to 5 (docs/api.md, decision 4).
        if not votes <= value <= 5 * votes:
            c.bad(
                "total_value_votes",
                f"{value} is not the sum of {votes} ratings of 1 to 5 "
                f"(between {votes} and {5 * votes})",
            )
        return StatsRow(c.line, package_id, c.integer("total_download"), votes, value)

    rows: list[StatsRow] = _validated(path, STATS_COLUMNS, STATS_COLUMNS, check)
    return rows


def prices(path: Path, catalogue: Catalogue) -> list[PriceRow]:
    """Every price of the file, validated."""
    lines: dict[str, int] = {}

    def check(c: _Checker) -> PriceRow:
        return PriceRow(
            c.line, _unique_package(c, catalogue, lines), c.decimal("price"), c.currency()
        )

    rows: list[PriceRow] = _validated(path, PRICE_COLUMNS, PRICE_COLUMNS, check)
    return rows
