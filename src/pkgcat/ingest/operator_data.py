"""The operator's purchases, statistics and prices: CSV or JSON Lines, checked whole.

A file is read (:mod:`pkgcat.ingest.operator_files`) and every row validated
before anything is written; a file with any problem is refused with all of
them, each as ``line N: column 'name': what is wrong; hint: what to do``
(:class:`~pkgcat.ingest.errors.OperatorDataError`). Checking goes in two steps:

1. each row alone, by a typed model (pydantic): required columns, lengths,
   amounts, whole numbers, currencies, dates, and what the row's own columns must
   agree on (the votes of a statistics row);
2. each row against the catalogue and the rest of the file, here: the package
   or source must exist, a ``txn_id`` or a package appear once, a purchase of a
   free package cost nothing.

The columns (CSV header, or JSON keys) are the spec's field names:

- purchases: ``package`` (a package purchase) or ``source`` (a purchase of
  the whole source), ``nickname``, ``status``, ``total``, ``commission``,
  ``currency``, ``date``, ``txn_id``, ``payment_platform``, and optionally
  ``profile_url``, ``allowed_for`` (which must then agree), and the buyer's
  ``account`` id and device (``udid``, ``device_model``: a model only with a
  udid); ``status`` is ``completed``, ``refunded`` or ``chargeback`` in any
  case, kept capitalised;
- stats: ``package``, ``total_download``, ``total_votes``, ``total_value_votes``;
- prices: ``package``, ``price``, ``currency``.

Other columns are ignored, and named in :attr:`Checked.ignored`.

:func:`import_purchases`, :func:`import_stats` and :func:`import_prices` validate a file
inside the transaction of :mod:`pkgcat.storage.writes.operator` that writes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError
from sqlalchemy import Engine

from pkgcat.domain import Scope
from pkgcat.ingest.currencies import is_currency
from pkgcat.ingest.operator_files import Problem, Row, read_table, refuse
from pkgcat.storage.writes.operator import (
    Catalogue,
    Checked,
    PackageRef,
    PriceRow,
    PurchaseRow,
    RowT,
    StatsRow,
    Written,
    write_prices,
    write_purchases,
    write_stats,
)

__all__ = [
    "Catalogue",
    "Checked",
    "PackageRef",
    "PriceRow",
    "PurchaseRow",
    "StatsRow",
    "Written",
    "import_prices",
    "import_purchases",
    "import_stats",
    "prices",
    "purchases",
    "stats",
]

PURCHASE_COLUMNS = (
    "package", "source", "allowed_for", "nickname", "status", "total", "commission",
    "currency", "date", "txn_id", "profile_url", "payment_platform",
    "account", "udid", "device_model",
)  # fmt: skip
_OPTIONAL_PURCHASE_COLUMNS = (
    "package", "source", "allowed_for", "profile_url", "account", "udid", "device_model",
)  # fmt: skip
PURCHASE_STATUSES = ("Completed", "Refunded", "Chargeback")
"""A purchase's status as stored; the import takes each in any case."""
STATS_COLUMNS = ("package", "total_download", "total_votes", "total_value_votes")
PRICE_COLUMNS = ("package", "price", "currency")

_DECIMAL = re.compile(r"\d{1,20}(\.\d{1,8})?")
_PLATFORM = re.compile(r"[a-z0-9_.-]{1,64}")
_UDID = re.compile(r"[0-9A-Za-z-]+")
_MAX_INTEGER = 2**63 - 1

# Step 1: one row alone, by its model ---------------------------------------------------------


def _wrong(message: str, hint: str = "") -> PydanticCustomError:
    # The message is the whole text: no context key appears in it, so nothing is substituted.
    return PydanticCustomError("pkgcat", message, {"hint": hint})


def _amount(value: str) -> str:
    if _DECIMAL.fullmatch(value):
        return value
    if value.startswith("-"):
        raise _wrong(f"{value!r} is negative", "amounts are 0 or more")
    if "," in value:
        raise _wrong(f"{value!r} is not an amount", "use a point as the decimal separator: 1.99")
    raise _wrong(f"{value!r} is not an amount", "write it like 1.99, or 0")


def _whole(value: object) -> object:
    if isinstance(value, str) and not (value.isdigit() and int(value) <= _MAX_INTEGER):
        raise _wrong(f"{value!r} is not a whole number", "digits only, like 1500 (0 or more)")
    return value


def _currency(value: str) -> str:
    if is_currency(value):
        return value
    if is_currency(value.upper()):
        raise _wrong(
            f"{value!r} is not an ISO 4217 currency code", f"write it in capitals: {value.upper()}"
        )
    raise _wrong(f"{value!r} is not an ISO 4217 currency code", "a code such as USD or EUR")


def _moment(value: object) -> object:
    if not isinstance(value, str):
        return value
    example = "like 2024-03-10T12:00:00+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _wrong(f"{value!r} is not an ISO 8601 date-time", f"write it {example}") from None
    if moment.tzinfo is None:
        raise _wrong(f"{value!r} has no UTC offset", "add one, like +00:00, or Z for UTC")
    return int(moment.timestamp())


def _matching(pattern: re.Pattern[str], what: str, hint: str) -> Callable[[str], str]:
    """A check that a value is all ``pattern``, else "'value' is not ``what``" with ``hint``."""

    def check(value: str) -> str:
        if pattern.fullmatch(value):
            return value
        raise _wrong(f"{value!r} is not {what}", hint)

    return check


_platform = _matching(
    _PLATFORM, "a platform name", "lower-case letters, digits, '.', '_', '-', like paypal"
)
_udid = _matching(
    _UDID, "a device id", "letters, digits and '-' only, like 00008030-001A2B3C4D5E802E"
)


def _address(value: str) -> str:
    if value.startswith(("http://", "https://")):
        return value
    raise _wrong(
        f"{value!r} is not an http(s) address", "a whole address, like https://forum.example/u/ada"
    )


def _status(value: str) -> str:
    for status in PURCHASE_STATUSES:
        if value.lower() == status.lower():
            return status
    raise _wrong(
        f"{value!r} is not a purchase status", "completed, refunded or chargeback (any case)"
    )


def _scope(value: str) -> str:
    if value in ("package", "source"):
        return value
    raise _wrong(f"{value!r} is neither 'package' nor 'source'")


Amount = Annotated[str, Field(max_length=32), AfterValidator(_amount)]
Whole = Annotated[int, BeforeValidator(_whole)]
Currency = Annotated[str, Field(max_length=3), AfterValidator(_currency)]
Moment = Annotated[int, BeforeValidator(_moment)]


class _Fields(BaseModel):
    # Rows come as text, with empty values left out (operator_files); other columns are
    # dropped by the reader already, and ignored here too.
    model_config = ConfigDict(extra="ignore", frozen=True)


class PurchaseFields(_Fields):
    package: Annotated[str, Field(max_length=255)] = ""
    source: Annotated[str, Field(max_length=255)] = ""
    allowed_for: Annotated[str, AfterValidator(_scope)] = ""
    nickname: Annotated[str, Field(max_length=200)]
    status: Annotated[str, Field(max_length=64), AfterValidator(_status)]
    total: Amount
    commission: Amount
    currency: Currency
    date: Moment
    txn_id: Annotated[str, Field(max_length=128)]
    profile_url: Annotated[str, Field(max_length=2000), AfterValidator(_address)] = ""
    payment_platform: Annotated[str, AfterValidator(_platform)]
    account: Annotated[str, Field(max_length=128)] | None = None
    udid: Annotated[str, Field(max_length=64), AfterValidator(_udid)] | None = None
    device_model: Annotated[str, Field(max_length=64)] | None = None

    @model_validator(mode="after")
    def _model_of_a_device(self) -> PurchaseFields:
        if self.device_model is not None and self.udid is None:
            raise _wrong("given without udid", "a device model describes the udid of its row")
        return self


class StatsFields(_Fields):
    package: Annotated[str, Field(max_length=255)]
    total_download: Whole
    total_votes: Whole
    total_value_votes: Whole

    @model_validator(mode="after")
    def _votes_are_ratings(self) -> StatsFields:
        # Each vote is a rating from 1 to 5 (docs/api.md, decision 4).
        votes, value = self.total_votes, self.total_value_votes
        if not votes <= value <= 5 * votes:
            raise _wrong(
                f"{value} is not the sum of {votes} ratings of 1 to 5",
                f"it lies between {votes} and {5 * votes}",
            )
        return self


class PriceFields(_Fields):
    package: Annotated[str, Field(max_length=255)]
    price: Amount
    currency: Currency


_ModelT = TypeVar("_ModelT", bound=_Fields)

_WHOLE_ROW_COLUMN: dict[type[_Fields], str] = {
    StatsFields: "total_value_votes",
    PurchaseFields: "device_model",
}
"""The column a model's whole-row check names in its problem."""


def _problem(line: int, model: type[_Fields], error: Mapping[str, object]) -> Problem:
    loc = error["loc"]
    column = str(loc[0]) if isinstance(loc, tuple) and loc else _WHOLE_ROW_COLUMN.get(model, "")
    kind, context = error["type"], error.get("ctx")
    hint = str(context.get("hint", "")) if isinstance(context, dict) else ""
    if kind == "missing":
        return Problem(line, column, "missing")
    if kind == "string_too_long" and isinstance(context, dict):
        return Problem(line, column, f"longer than {context['max_length']} characters")
    return Problem(line, column, str(error["msg"]), hint)


def _fields(model: type[_ModelT], line: int, row: Row, problems: list[Problem]) -> _ModelT | None:
    try:
        return model.model_validate(row)
    except ValidationError as invalid:
        problems.extend(_problem(line, model, error) for error in invalid.errors())
        return None


# Step 2: rows against the catalogue and the file ---------------------------------------------


def _once(
    line: int, column: str, value: str, seen: dict[str, int], hint: str, problems: list[Problem]
) -> None:
    """A problem when ``value`` (not empty) was on an earlier line; ``seen`` maps each to its first."""
    if value and (first := seen.setdefault(value, line)) != line:
        problems.append(Problem(line, column, f"{value!r} is also on line {first}", hint))


def _package(
    line: int, name: str, catalogue: Catalogue, seen: dict[str, int] | None, problems: list[Problem]
) -> PackageRef | None:
    found = catalogue.packages.get(name)
    if name and found is None:
        problems.append(
            Problem(
                line,
                "package",
                f"no package {name!r} in the catalogue",
                "import its repository first (pkgcat import-repo)",
            )
        )
    if seen is not None:
        _once(line, "package", name, seen, "one row per package", problems)
    return found


def _check(
    path: Path,
    columns: tuple[str, ...],
    required: tuple[str, ...],
    delimiter: str | None,
    check: Callable[[int, Row, list[Problem]], RowT | None],
) -> Checked[RowT]:
    problems: list[Problem] = []
    table = read_table(path, columns, required, problems, delimiter=delimiter)
    rows = [check(line, row, problems) for line, row in table.rows]
    if problems:
        raise refuse(path, problems)
    return Checked([row for row in rows if row is not None], table.ignored)


def purchases(
    path: Path, catalogue: Catalogue, *, delimiter: str | None = None
) -> Checked[PurchaseRow]:
    """Every purchase of the file, validated; :class:`OperatorDataError` lists what is wrong."""
    first_line: dict[str, int] = {}

    def check(line: int, row: Row, problems: list[Problem]) -> PurchaseRow | None:
        fields = _fields(PurchaseFields, line, row, problems)
        package, source = row.get("package", ""), row.get("source", "")
        scope = row.get("allowed_for", "")
        ref, source_id = None, 0
        if package and source:
            problems.append(
                Problem(
                    line,
                    "source",
                    "given with package",
                    "give package (a package purchase) or source (the whole source), not both",
                )
            )
        elif package:
            ref = _package(line, package, catalogue, None, problems)
            source_id = ref.source_id if ref else 0
        elif source:
            if source not in catalogue.sources:
                problems.append(
                    Problem(
                        line,
                        "source",
                        f"no source named {source!r}",
                        "the name given to pkgcat import-repo --source",
                    )
                )
            source_id = catalogue.sources.get(source, 0)
        else:
            problems.append(
                Problem(
                    line,
                    "package",
                    "missing",
                    "give package, or source for a purchase of a whole source",
                )
            )
        inferred: Scope = "source" if source and not package else "package"
        if scope in ("package", "source") and scope != inferred:
            problems.append(
                Problem(
                    line, "allowed_for", f"{scope!r} does not match the {inferred} column given"
                )
            )
        _once(
            line,
            "txn_id",
            row.get("txn_id", ""),
            first_line,
            "a txn_id names one purchase",
            problems,
        )
        if fields is None:
            return None
        if ref is not None and ref.free and Decimal(fields.total) != 0:
            problems.append(
                Problem(
                    line,
                    "total",
                    f"{fields.total} {fields.currency} paid for {package!r}, a free package",
                    "give the package its price first (pkgcat import-prices), or leave the purchase out",
                )
            )
        return PurchaseRow(
            line=line,
            source_id=source_id,
            package_id=ref.id if ref else None,
            allowed_for=inferred,
            nickname=fields.nickname,
            status=fields.status,
            total=fields.total,
            commission=fields.commission,
            currency=fields.currency,
            purchased_at=fields.date,
            txn_id=fields.txn_id,
            profile_url=fields.profile_url,
            payment_platform=fields.payment_platform,
            account=fields.account,
            udid=fields.udid,
            device_model=fields.device_model,
        )

    required = tuple(c for c in PURCHASE_COLUMNS if c not in _OPTIONAL_PURCHASE_COLUMNS)
    return _check(path, PURCHASE_COLUMNS, required, delimiter, check)


def stats(path: Path, catalogue: Catalogue, *, delimiter: str | None = None) -> Checked[StatsRow]:
    """Every statistics row of the file, validated."""
    seen: dict[str, int] = {}

    def check(line: int, row: Row, problems: list[Problem]) -> StatsRow | None:
        fields = _fields(StatsFields, line, row, problems)
        ref = _package(line, row.get("package", ""), catalogue, seen, problems)
        if fields is None or ref is None:
            return None
        return StatsRow(
            line, ref.id, fields.total_download, fields.total_votes, fields.total_value_votes
        )

    return _check(path, STATS_COLUMNS, STATS_COLUMNS, delimiter, check)


def prices(path: Path, catalogue: Catalogue, *, delimiter: str | None = None) -> Checked[PriceRow]:
    """Every price of the file, validated."""
    seen: dict[str, int] = {}

    def check(line: int, row: Row, problems: list[Problem]) -> PriceRow | None:
        fields = _fields(PriceFields, line, row, problems)
        ref = _package(line, row.get("package", ""), catalogue, seen, problems)
        if fields is None or ref is None:
            return None
        return PriceRow(line, ref.id, fields.price, fields.currency)

    return _check(path, PRICE_COLUMNS, PRICE_COLUMNS, delimiter, check)


def import_purchases(engine: Engine, path: Path, *, delimiter: str | None = None) -> Written:
    """Validate every purchase of ``path``, then add the new ones and update the changed ones."""
    return write_purchases(engine, partial(purchases, path, delimiter=delimiter))


def import_stats(engine: Engine, path: Path, *, delimiter: str | None = None) -> Written:
    """Set the download and vote counts of each package the file names."""
    return write_stats(engine, partial(stats, path, delimiter=delimiter))


def import_prices(engine: Engine, path: Path, *, delimiter: str | None = None) -> Written:
    """Set the price and currency of each package the file names."""
    return write_prices(engine, partial(prices, path, delimiter=delimiter))
