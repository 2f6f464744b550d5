"""The only client module that knows shape A from shape B (spec sections 2 and 9): one
reader per kind of value, from which each record of :mod:`pkgcat.client._models` reads its
fields (its ``_read``).

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
from datetime import UTC, date, datetime, timezone, tzinfo
from decimal import Decimal, InvalidOperation
from typing import TypeVar

from pkgcat.client._relations import Relations, parse_relations

T = TypeVar("T")

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


# --- objects and their fields ------------------------------------------------------------


def mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where}: expected an object, got {type(value).__name__}")
    return value


def required(
    obj: Mapping[str, object], name: str, where: str, read: Callable[[object, str], T]
) -> T:
    """A field both shapes carry: its absence is a malformed response."""
    path = f"{where}.{name}"
    if name not in obj:
        raise MalformedResponse(f"{path}: missing")
    return read(obj[name], path)


def nullable(
    obj: Mapping[str, object], name: str, where: str, read: Callable[[object, str], T]
) -> T | None:
    """A field both shapes carry that may be ``null``: its absence is still malformed."""
    path = f"{where}.{name}"
    if name not in obj:
        raise MalformedResponse(f"{path}: missing")
    value = obj[name]
    return None if value is None else read(value, path)


def a_only(
    obj: Mapping[str, object], name: str, where: str, read: Callable[[object, str], T]
) -> T | None:
    """A field only shape A carries: ``None`` when the server speaks shape B."""
    value = obj.get(name)
    return None if value is None else read(value, f"{where}.{name}")


# --- what pages and days share ----------------------------------------------------------


def walk_position(body: Mapping[str, object], where: str) -> tuple[bool, str | None]:
    """``has_more`` and ``cursor``; more to come with no cursor to ask for it is malformed."""
    has_more = required(body, "has_more", where, flag)
    cursor = nullable(body, "cursor", where, text) or None
    if has_more and cursor is None:
        raise MalformedResponse(f"{where}.cursor: null while has_more is true")
    return has_more, cursor


def either_day(value: object, where: str) -> date:
    """A day as shape A writes it (``YYYY-MM-DD``) or shape B (``DD-MM-YYYY``)."""
    written = text(value, where).strip()
    if len(written) == 10 and written[2:3] == "-" and written[5:6] == "-":
        written = f"{written[6:]}-{written[3:5]}-{written[:2]}"
    return iso_day(written, where)
