"""The only client module that knows shape A from shape B (spec sections 2 and 9).

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

from pkgcat.client._models import (
    Buyer,
    BuyersCursorPage,
    BuyersPage,
    Downloads,
    DownloadsDay,
    Ownership,
    Package,
    PackagesPage,
    Purchase,
    Relations,
    Sale,
    SalesPage,
    SalesTotal,
    Source,
    SourcePackage,
    UsageDay,
)
from pkgcat.client._relations import parse_relations

T = TypeVar("T")

_B_USAGE_DATE = "%d-%m-%Y %H:%M:%S"
"""Shape B's usage dates; its package dates, ``YYYY-MM-DD HH:MM:SS``, are ISO 8601 enough."""
_B_DAY_ONLY = "%d-%m-%Y"
_INTEGER = re.compile(r"[+-]?\d+")
_FLAGS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


class MalformedResponse(ValueError):
    """A success body whose ``response`` this client cannot read."""


# --- one reader per kind of value -------------------------------------------------------


def _date(value: object, where: str, zone: tzinfo) -> datetime:
    """An aware date-time from ISO 8601 (with or without offset) or ``DD-MM-YYYY[ HH:MM:SS]``.

    A date without an offset is wall time in ``zone`` (spec 9 gives shape B no offset); it
    gets the offset in force at that time, as a fixed offset.
    """
    if not isinstance(value, str):
        raise MalformedResponse(f"{where}: expected a date string, got {value!r}")
    text = value.strip()
    parsed: datetime | None = None
    try:
        # Python 3.11 reads 'T' or ' ' separators, 'Z', and offsets of any precision.
        parsed = datetime.fromisoformat(text)
    except ValueError:
        for layout in (_B_USAGE_DATE, _B_DAY_ONLY):
            try:
                parsed = datetime.strptime(text, layout)
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


def _int(value: object, where: str) -> int:
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


def _decimal(value: object, where: str) -> Decimal:
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


def _price(value: object, where: str) -> Decimal | None:
    """A price, or ``None`` for the empty string a server sends while it does not know it."""
    if isinstance(value, str) and not value.strip():
        return None
    return _decimal(value, where)


def _text(value: object, where: str) -> str:
    """A string; a bare number is taken as its digits (a version such as 2 is still '2')."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise MalformedResponse(f"{where}: expected a string, got {value!r}")


def _flag(value: object, where: str) -> bool:
    """The ``online`` flag: '1'/'0' on the wire, and JSON booleans or numbers from others."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | str):
        known = _FLAGS.get(str(value).strip().lower())
        if known is not None:
            return known
    raise MalformedResponse(f"{where}: expected a flag (1 or 0), got {value!r}")


def _day(value: object, where: str) -> date:
    """A calendar day, ``YYYY-MM-DD``."""
    try:
        return date.fromisoformat(_text(value, where).strip())
    except ValueError:
        raise MalformedResponse(f"{where}: {value!r} is not a YYYY-MM-DD day") from None


def _float(value: object, where: str) -> float:
    """A number sent as a JSON number or as a decimal string."""
    return float(_decimal(value, where))


def _count(value: object, where: str) -> int:
    """A count that may not be negative."""
    count = _int(value, where)
    if count < 0:
        raise MalformedResponse(f"{where}: expected a count, got {value!r}")
    return count


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise MalformedResponse(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _digest(value: object, where: str) -> str | None:
    """A hex digest; an empty one means the server has none."""
    text = _text(value, where).strip()
    return text or None


def _texts(value: object, where: str) -> tuple[str, ...]:
    return tuple(_text(item, f"{where}[{n}]") for n, item in enumerate(_list(value, where)))


def _relations(value: object, where: str) -> Relations:
    return parse_relations(_text(value, where))


# --- objects and their fields ------------------------------------------------------------


def _object(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _field(obj: Mapping[str, object], name: str, where: str, read: Callable[[object, str], T]) -> T:
    """A field both shapes carry: its absence is a malformed response."""
    path = f"{where}.{name}"
    if name not in obj:
        raise MalformedResponse(f"{path}: missing")
    return read(obj[name], path)


def _nullable(
    obj: Mapping[str, object], name: str, where: str, read: Callable[[object, str], T]
) -> T | None:
    """A field both shapes carry that may be ``null``: its absence is still malformed."""
    path = f"{where}.{name}"
    if name not in obj:
        raise MalformedResponse(f"{path}: missing")
    value = obj[name]
    return None if value is None else read(value, path)


def _a_only(
    obj: Mapping[str, object], name: str, where: str, read: Callable[[object, str], T]
) -> T | None:
    """A field only shape A carries: ``None`` when the server speaks shape B."""
    value = obj.get(name)
    return None if value is None else read(value, f"{where}.{name}")


# --- the responses -----------------------------------------------------------------------


def _operations(value: object, where: str) -> dict[str, int]:
    counts = _object(value, where)
    return {str(name): _count(count, f"{where}.{name}") for name, count in counts.items()}


def read_usage(value: object, zone: tzinfo) -> list[UsageDay]:
    """The usage entries (spec 2.1), in the server's order (oldest first).

    ``operations`` is read when the entry has it (``by=operation``), else ``None``.
    """
    days: list[UsageDay] = []
    for n, item in enumerate(_list(value, "response")):
        where = f"response[{n}]"
        entry = _object(item, where)
        days.append(
            UsageDay(
                date=_field(entry, "date", where, lambda v, w: _date(v, w, zone)),
                usage=_field(entry, "usage", where, _int),
                operations=_a_only(entry, "operations", where, _operations),
            )
        )
    return days


def read_package(value: object, zone: tzinfo) -> Package:
    """Package details (spec 2.2) with their source (2.3)."""
    where = "response"
    body = _object(value, where)
    source = _object(body.get("source"), f"{where}.source")
    return Package(
        package=_field(body, "package", where, _text),
        name=_field(body, "name", where, _text),
        date=_field(body, "date", where, lambda v, w: _date(v, w, zone)),
        version=_field(body, "version", where, _text),
        architecture=_a_only(body, "architecture", where, _text),
        author=_field(body, "author", where, _text),
        section=_field(body, "section", where, _text),
        description=_field(body, "description", where, _text),
        pre_depends=_field(body, "pre-depends", where, _relations),
        depends=_field(body, "depends", where, _relations),
        conflicts=_field(body, "conflicts", where, _relations),
        replaces=_a_only(body, "replaces", where, _relations),
        size=_field(body, "size", where, _int),
        md5sum=_field(body, "md5sum", where, _text),
        sha256=_a_only(body, "sha256", where, _digest),
        long_description=_field(body, "long_description", where, _text),
        compatible=_field(body, "compatible", where, _texts),
        total_download=_field(body, "total_download", where, _int),
        total_votes=_field(body, "total_votes", where, _int),
        total_value_votes=_field(body, "total_value_votes", where, _int),
        online=_field(body, "online", where, _flag),
        price=_field(body, "price", where, _price),
        currency=_field(body, "currency", where, _text),
        source=Source(
            name=_field(source, "name", f"{where}.source", _text),
            url=_field(source, "url", f"{where}.source", _text),
            origin=_a_only(source, "origin", f"{where}.source", _text),
        ),
        icon=_field(body, "icon", where, _text),
        screenshots=_field(body, "screenshots", where, _texts),
        url=_field(body, "url", where, _text),
    )


def _buyer(value: object, where: str, zone: tzinfo) -> Buyer:
    buyer = _object(value, where)
    return Buyer(
        nickname=_field(buyer, "nickname", where, _text),
        status=_field(buyer, "status", where, _text),
        total=_field(buyer, "total", where, _decimal),
        commission=_field(buyer, "commission", where, _decimal),
        currency=_field(buyer, "currency", where, _text),
        date=_field(buyer, "date", where, lambda v, w: _date(v, w, zone)),
        txn_id=_field(buyer, "txn_id", where, _text),
        profile_url=_field(buyer, "profile_url", where, _text),
        allowed_for=_field(buyer, "allowed_for", where, _text),
        payment_platform=_field(buyer, "payment_platform", where, _text),
    )


def _buyers(body: Mapping[str, object], where: str, zone: tzinfo) -> tuple[Buyer, ...]:
    buyers = _field(body, "buyers", where, _list)
    return tuple(_buyer(b, f"{where}.buyers[{n}]", zone) for n, b in enumerate(buyers))


def read_buyers_page(value: object, zone: tzinfo) -> BuyersPage:
    """A buyers page (spec 2.4) and its buyers (2.5)."""
    where = "response"
    body = _object(value, where)
    return BuyersPage(
        start=_field(body, "start", where, _int),
        limit=_field(body, "limit", where, _int),
        total=_field(body, "total", where, _int),
        page=_field(body, "page", where, _int),
        buyers=_buyers(body, where, zone),
    )


# --- API 1.1: cursor lists and the check ----------------------------------------------------


def _walk_position(body: Mapping[str, object], where: str) -> tuple[bool, str | None]:
    """``has_more`` and ``cursor``; more to come with no cursor to ask for it is malformed."""
    has_more = _field(body, "has_more", where, _flag)
    cursor = _nullable(body, "cursor", where, _text) or None
    if has_more and cursor is None:
        raise MalformedResponse(f"{where}.cursor: null while has_more is true")
    return has_more, cursor


def read_buyers_cursor_page(value: object, zone: tzinfo) -> BuyersCursorPage:
    """A buyers page in cursor mode."""
    where = "response"
    body = _object(value, where)
    has_more, cursor = _walk_position(body, where)
    return BuyersCursorPage(
        limit=_field(body, "limit", where, _int),
        total=_field(body, "total", where, _int),
        buyers=_buyers(body, where, zone),
        has_more=has_more,
        cursor=cursor,
    )


def read_buyers_any(value: object, zone: tzinfo) -> BuyersCursorPage | BuyersPage:
    """A cursor-mode page, or a numbered page from a server that does not know cursors.

    A server before API 1.1 ignores ``cursor`` and answers page 1 with ``page`` and no
    ``has_more``; the walk then goes on by page numbers.
    """
    body = _object(value, "response")
    if "has_more" not in body and "page" in body:
        return read_buyers_page(value, zone)
    return read_buyers_cursor_page(value, zone)


def _source_package(value: object, where: str, zone: tzinfo) -> SourcePackage:
    item = _object(value, where)
    return SourcePackage(
        package=_field(item, "package", where, _text),
        name=_field(item, "name", where, _text),
        version=_field(item, "version", where, _text),
        online=_field(item, "online", where, _flag),
        paid=_field(item, "paid", where, _flag),
        price=_nullable(item, "price", where, _price),
        currency=_field(item, "currency", where, _text),
        downloads=_field(item, "downloads", where, _count),
        votes=_field(item, "votes", where, _count),
        rating=_nullable(item, "rating", where, _float),
        updated=_field(item, "updated", where, lambda v, w: _date(v, w, zone)),
    )


def read_packages_page(value: object, zone: tzinfo) -> PackagesPage:
    """A page of the caller's packages (``source/packages``)."""
    where = "response"
    body = _object(value, where)
    items = _field(body, "packages", where, _list)
    has_more, cursor = _walk_position(body, where)
    return PackagesPage(
        packages=tuple(
            _source_package(p, f"{where}.packages[{n}]", zone) for n, p in enumerate(items)
        ),
        limit=_field(body, "limit", where, _int),
        has_more=has_more,
        cursor=cursor,
    )


def _purchase(value: object, where: str) -> Purchase:
    item = _object(value, where)
    return Purchase(
        txn_id=_field(item, "txn_id", where, _text),
        allowed_for=_field(item, "allowed_for", where, _text),
    )


def read_ownership(value: object, zone: tzinfo) -> Ownership:
    """The answer of ``package/check``."""
    where = "response"
    body = _object(value, where)
    return Ownership(
        package=_field(body, "package", where, _text),
        owned=_field(body, "owned", where, _flag),
        since=_nullable(body, "since", where, lambda v, w: _date(v, w, zone)),
        purchase=_nullable(body, "purchase", where, _purchase),
    )


def _sale(value: object, where: str, zone: tzinfo) -> Sale:
    item = _object(value, where)
    return Sale(
        txn_id=_field(item, "txn_id", where, _text),
        date=_field(item, "date", where, lambda v, w: _date(v, w, zone)),
        package=_nullable(item, "package", where, _text),
        allowed_for=_field(item, "allowed_for", where, _text),
        nickname=_field(item, "nickname", where, _text),
        status=_field(item, "status", where, _text),
        gross=_field(item, "gross", where, _decimal),
        commission=_field(item, "commission", where, _decimal),
        net=_field(item, "net", where, _decimal),
        currency=_field(item, "currency", where, _text),
        payment_platform=_field(item, "payment_platform", where, _text),
    )


def _total(value: object, where: str) -> SalesTotal:
    item = _object(value, where)
    return SalesTotal(
        currency=_field(item, "currency", where, _text),
        sales=_field(item, "sales", where, _count),
        gross=_field(item, "gross", where, _decimal),
        commission=_field(item, "commission", where, _decimal),
        net=_field(item, "net", where, _decimal),
        refunds=_field(item, "refunds", where, _count),
        refunded=_field(item, "refunded", where, _decimal),
    )


def _either_day(value: object, where: str) -> date:
    """A day as shape A writes it (``YYYY-MM-DD``) or shape B (``DD-MM-YYYY``)."""
    text = _text(value, where).strip()
    if len(text) == 10 and text[2:3] == "-" and text[5:6] == "-":
        text = f"{text[6:]}-{text[3:5]}-{text[:2]}"
    return _day(text, where)


def read_downloads(value: object, _zone: tzinfo) -> Downloads:
    """A package's downloads per day (``package/downloads``), in either shape."""
    where = "response"
    body = _object(value, where)
    days = []
    for n, item in enumerate(_field(body, "downloads", where, _list)):
        at = f"{where}.downloads[{n}]"
        entry = _object(item, at)
        days.append(
            DownloadsDay(
                day=_field(entry, "day", at, _either_day),
                downloads=_field(entry, "downloads", at, _count),
            )
        )
    return Downloads(
        package=_field(body, "package", where, _text),
        start=_field(body, "start", where, _either_day),
        end=_field(body, "end", where, _either_day),
        total=_field(body, "total", where, _count),
        days=tuple(days),
    )


def read_sales_page(value: object, zone: tzinfo) -> SalesPage:
    """A page of the sales ledger (``source/sales``), with the totals of the whole range."""
    where = "response"
    body = _object(value, where)
    sales = _field(body, "sales", where, _list)
    totals = _field(body, "totals", where, _list)
    has_more, cursor = _walk_position(body, where)
    return SalesPage(
        start=_field(body, "start", where, _day),
        end=_field(body, "end", where, _day),
        sales=tuple(_sale(s, f"{where}.sales[{n}]", zone) for n, s in enumerate(sales)),
        totals=tuple(_total(t, f"{where}.totals[{n}]") for n, t in enumerate(totals)),
        limit=_field(body, "limit", where, _int),
        has_more=has_more,
        cursor=cursor,
    )
