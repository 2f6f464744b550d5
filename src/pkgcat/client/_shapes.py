"""The only client module that knows shape A from shape B (spec sections 2 and 9): one
reader per kind of value, and the one reader of records (:func:`read_record`), which reads
each record of :mod:`pkgcat.client._models` field by field as its fields declare.

Shape A sends ISO 8601 dates with an offset, https addresses, integer usage
counts and the fields ``architecture``, ``replaces``, ``sha256`` and
``source.origin``. Shape B sends ``DD-MM-YYYY HH:MM:SS`` usage dates and
``YYYY-MM-DD HH:MM:SS`` package dates (no offset: they are read in the zone the
client is given), http addresses, none of the A-only fields, and the last usage
count as a string of digits.

The spec does not say how to tell the shapes apart, so nothing here decides
"this is shape B" for a whole response: each field is read on its own by a
reader that accepts either form (a date in any of the formats, a number as a
JSON number or a string of digits). A field only one shape carries is ``None``
when absent. Fields this client does not know are ignored. Addresses are kept
as the server sent them: whether an http address also answers on https is not
the client's to guess.

A value no reader accepts raises :class:`MalformedResponse`, naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timezone, tzinfo
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, dataclass_transform

from pkgcat.client._relations import Relations, parse_relations

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
R = TypeVar("R", bound="DataclassInstance")

_B_USAGE_DATE = "%d-%m-%Y %H:%M:%S"
"""Shape B's usage dates; its package dates, ``YYYY-MM-DD HH:MM:SS``, are ISO 8601 enough."""
_B_DAY_ONLY = "%d-%m-%Y"
_INTEGER = re.compile(r"[+-]?\d+")
_FLAGS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


class MalformedResponse(ValueError):
    """A success body whose ``response`` this client cannot read."""


# --- one reader per kind of value -------------------------------------------------------


def moment(value: object, where: str, zone: tzinfo) -> datetime:
    """An aware date-time from ISO 8601 (with or without offset) or ``DD-MM-YYYY[ HH:MM:SS]``.

    A date without an offset is wall time in ``zone`` (spec 9 gives shape B no offset); it
    gets the offset in force at that time, as a fixed offset.
    """
    if not isinstance(value, str):
        raise MalformedResponse(f"{where}: expected a date string, got {value!r}")
    written = value.strip()
    parsed: datetime | None = None
    try:
        # Python 3.11 reads 'T' or ' ' separators, 'Z', and offsets of any precision.
        parsed = datetime.fromisoformat(written)
    except ValueError:
        for layout in (_B_USAGE_DATE, _B_DAY_ONLY):
            try:
                parsed = datetime.strptime(written, layout)
                break
            except ValueError:
                continue
    if parsed is None:
        raise MalformedResponse(f"{where}: {value!r} is not a date this client knows")
    if parsed.tzinfo is not None:
        return parsed
    # Fix the offset in force at that wall time (the earlier one when clocks go back), so
    # the value is like a shape-A date: it compares and prints the same, whatever the zone.
    offset = parsed.replace(tzinfo=zone).utcoffset()
    return parsed.replace(tzinfo=timezone(offset) if offset is not None else UTC)


def integer(value: object, where: str) -> int:
    """An integer sent as a JSON number or as a string of digits."""
    if isinstance(value, bool):
        raise MalformedResponse(f"{where}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    raise MalformedResponse(f"{where}: expected an integer, got {value!r}")


def amount(value: object, where: str) -> Decimal:
    """An amount sent as a decimal string (the spec's way) or as a JSON number."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise MalformedResponse(f"{where}: expected a decimal amount, got {value!r}")
    try:
        # A float goes through its shortest repr, so 1.1 reads as 1.1, not 1.100000000000000088.
        amount = Decimal(value.strip() if isinstance(value, str) else repr(value))
    except InvalidOperation:
        raise MalformedResponse(f"{where}: {value!r} is not a decimal amount") from None
    if not amount.is_finite():
        raise MalformedResponse(f"{where}: {value!r} is not a decimal amount")
    return amount


def price(value: object, where: str) -> Decimal | None:
    """A price, or ``None`` for the empty string a server sends while it does not know it."""
    if isinstance(value, str) and not value.strip():
        return None
    return amount(value, where)


def text(value: object, where: str) -> str:
    """A string; a bare number is taken as its digits (a version such as 2 is still '2')."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise MalformedResponse(f"{where}: expected a string, got {value!r}")


def flag(value: object, where: str) -> bool:
    """The ``online`` flag: '1'/'0' on the wire, and JSON booleans or numbers from others."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | str):
        known = _FLAGS.get(str(value).strip().lower())
        if known is not None:
            return known
    raise MalformedResponse(f"{where}: expected a flag (1 or 0), got {value!r}")


def iso_day(value: object, where: str) -> date:
    """A calendar day, ``YYYY-MM-DD``."""
    try:
        return date.fromisoformat(text(value, where).strip())
    except ValueError:
        raise MalformedResponse(f"{where}: {value!r} is not a YYYY-MM-DD day") from None


def number(value: object, where: str) -> float:
    """A number sent as a JSON number or as a decimal string."""
    return float(amount(value, where))


def count(value: object, where: str) -> int:
    """A count that may not be negative."""
    count = integer(value, where)
    if count < 0:
        raise MalformedResponse(f"{where}: expected a count, got {value!r}")
    return count


def items(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise MalformedResponse(f"{where}: expected a list, got {type(value).__name__}")
    return value


def digest(value: object, where: str) -> str | None:
    """A hex digest; an empty one means the server has none."""
    written = text(value, where).strip()
    return written or None


def texts(value: object, where: str) -> tuple[str, ...]:
    return tuple(text(item, f"{where}[{n}]") for n, item in enumerate(items(value, where)))


def relations(value: object, where: str) -> Relations:
    return parse_relations(text(value, where))


def either_day(value: object, where: str) -> date:
    """A day as shape A writes it (``YYYY-MM-DD``) or shape B (``DD-MM-YYYY``)."""
    written = text(value, where).strip()
    if len(written) == 10 and written[2:3] == "-" and written[5:6] == "-":
        written = f"{written[6:]}-{written[3:5]}-{written[:2]}"
    return iso_day(written, where)


def mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where}: expected an object, got {type(value).__name__}")
    return value


# --- records: each field declared once, read by one reader ---------------------------
#
# A record is a frozen dataclass whose every field says, beside its type, how it is read: its
# presence (both shapes, both but maybe null, shape A only...), its reader and, when it differs
# from the field's name, its name on the wire. read_record reads any record so, field by field
# in the order declared; mypy holds each reader's type to its field's.


@dataclass(frozen=True, slots=True)
class Zoned(Generic[T]):
    """A reader that needs the client's zone: dates without an offset, and what holds them."""

    read: Callable[[object, str, tzinfo], T]


Reader = Callable[[object, str], T] | Zoned[T] | type[T]
"""How a field is read: a reader of one kind of value, a zoned one, or a record (its class)."""
Presence = Literal["both", "nullable", "a_only", "as_sent", "walk_cursor"]


@dataclass(frozen=True, slots=True)
class Wire:
    """How one field of a record is read (a dataclass field's metadata)."""

    read: Callable[[object, str, tzinfo], object]
    presence: Presence
    name: str | None
    """Its name on the wire, when not the field's own (``pre-depends``)."""


def _field(read: Reader[Any], presence: Presence, name: str | None, **options: Any) -> Any:
    if isinstance(read, Zoned):
        zoned = read.read
    elif isinstance(read, type):
        record: type[Any] = read
        zoned = lambda v, w, z: read_record(record, v, z, w)  # noqa: E731 - a record as a reader
    else:
        plain = read
        zoned = lambda v, w, _z: plain(v, w)  # noqa: E731 - its zone is not needed
    return field(metadata={"wire": Wire(zoned, presence, name)}, **options)


def both(read: Reader[T], name: str | None = None) -> T:
    """A field both shapes carry: its absence is a malformed response."""
    return cast(T, _field(read, "both", name))


def nullable(read: Reader[T], name: str | None = None) -> T | None:
    """A field both shapes carry that may be ``null``: its absence is still malformed."""
    return cast(T | None, _field(read, "nullable", name))


def a_only(read: Reader[T], **options: Any) -> T | None:
    """A field only shape A carries (or only some answers): ``None`` when absent or null.
    ``options`` are :func:`dataclasses.field`'s (a default, for one a constructor may omit)."""
    return cast(T | None, _field(read, "a_only", None, **options))


def as_sent(read: Reader[T], **options: Any) -> T:
    """A field read from whatever was sent, ``None`` when absent: its reader decides.
    ``options`` are :func:`dataclasses.field`'s (``repr=False`` for a secret)."""
    return cast(T, _field(read, "as_sent", None, **options))


def walk_cursor() -> str | None:
    """The cursor of a page of a walk: ``None`` (null or empty) when nothing follows; more to
    come (``has_more``, declared before it) with no cursor to ask for it is malformed."""
    return cast(str | None, _field(text, "walk_cursor", None))


@dataclass_transform(
    frozen_default=True, field_specifiers=(both, nullable, a_only, as_sent, walk_cursor)
)
def record(*, slots: bool) -> Callable[[type[T]], type[T]]:
    """A frozen dataclass whose fields are declared with the specifiers above. ``slots`` is
    said where it is used, so that type checkers know of ``__slots__`` as with ``dataclass``."""
    return dataclass(frozen=True, slots=slots)


def read_record(cls: type[R], value: object, zone: tzinfo, where: str) -> R:
    """A record of ``cls`` from the object at ``where``; a field no reader accepts, or one
    missing, raises :class:`MalformedResponse` naming it."""
    body = mapping(value, where)
    values: dict[str, object] = {}
    for declared in fields(cls):
        wire: Wire = declared.metadata["wire"]
        name = wire.name or declared.name
        path = f"{where}.{name}"
        if wire.presence in ("both", "nullable", "walk_cursor") and name not in body:
            raise MalformedResponse(f"{path}: missing")
        sent = body.get(name)
        if wire.presence == "walk_cursor":
            cursor = None if sent is None else wire.read(sent, path, zone) or None
            if cursor is None and values.get("has_more"):
                raise MalformedResponse(f"{path}: null while has_more is true")
            values[declared.name] = cursor
        elif sent is None and wire.presence in ("nullable", "a_only"):
            values[declared.name] = None
        else:
            values[declared.name] = wire.read(sent, path, zone)
    return cls(**values)


def each(read: type[R]) -> Zoned[tuple[R, ...]]:
    """A list of records, read in order: ``where[0]``, ``where[1]``..."""
    return Zoned(
        lambda v, w, z: tuple(
            read_record(read, item, z, f"{w}[{n}]") for n, item in enumerate(items(v, w))
        )
    )


def listed(read: type[R]) -> Callable[[object, tzinfo], list[R]]:
    """The answer's list of records (``response[0]``, ...), in the server's order."""
    return lambda v, z: [
        read_record(read, item, z, f"response[{n}]") for n, item in enumerate(items(v, "response"))
    ]


def answer(read: type[R]) -> Callable[[object, tzinfo], R]:
    """The answer's record (``response``)."""
    return lambda v, z: read_record(read, v, z, "response")


MOMENT = Zoned(moment)
"""A date, read with the client's zone when it has no offset (:func:`moment`)."""
