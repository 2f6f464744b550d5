"""The only server module that knows shape A from shape B (spec sections 2 and 9).

Shape A: ISO 8601 dates with the application's UTC offset, https addresses,
and the fields ``architecture``, ``replaces``, ``sha256`` and ``source.origin``.
Shape B reproduces what the spec observed of the older deployment:
``DD-MM-YYYY HH:MM:SS`` usage dates, ``YYYY-MM-DD HH:MM:SS`` package dates,
http addresses, none of the A-only fields, and the last usage entry's count
as a string of digits. Buyer dates are ISO 8601 with offset in both shapes.
Every date is given in the application's time zone.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from pkgcat import models
from pkgcat.domain import (
    BuyersPage,
    BuyersWalk,
    Check,
    DownloadsReport,
    Package,
    PackagesPage,
    Purchase,
    Sale,
    SalesPage,
    SalesTotal,
    Shape,
    UsageDay,
)

_B_DATE = "%Y-%m-%d %H:%M:%S"
_B_USAGE_DATE = "%d-%m-%Y %H:%M:%S"


def _address(url: str, shape: Shape) -> str:
    """Shape A speaks https, shape B http (spec 9); other schemes and relative paths pass."""
    if shape == "A":
        return "https://" + url[7:] if url.startswith("http://") else url
    return "http://" + url[8:] if url.startswith("https://") else url


_CENTS = Decimal("0.01")


def _amount(value: Decimal) -> str:
    """A decimal with a point separator, at least two decimals, never an exponent."""
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -2:
        value = value.quantize(_CENTS)
    return format(value, "f")


@lru_cache(maxsize=8192)
def _midnight(day: date, shape: Shape, zone: ZoneInfo) -> str:
    """Midnight of ``day`` in ``zone`` as each shape writes it (the same few days recur)."""
    if shape == "A":
        return datetime(day.year, day.month, day.day, tzinfo=zone).isoformat()
    return datetime(day.year, day.month, day.day).strftime(_B_USAGE_DATE)


def usage_body(
    days: list[UsageDay],
    shape: Shape,
    zone: ZoneInfo,
    *,
    ends_today: bool = True,
    operations: dict[date, dict[str, int]] | None = None,
) -> list[dict[str, Any]]:
    """Usage entries (spec 2.1), oldest first; midnight of each day in the zone.

    ``ends_today=False`` renders the first part of a report, whose last entry
    is not the report's last (in shape B only that one has its count as a string).
    With ``operations`` (``by=operation``), each entry also has the day's
    non-zero counts by operation, as integers in both shapes, by name.
    """
    entries: list[dict[str, Any]] = [
        {"date": _midnight(d.day, shape, zone), "usage": d.requests} for d in days
    ]
    if operations is not None:
        for entry, d in zip(entries, days, strict=True):
            split = operations.get(d.day, {})
            entry["operations"] = {name: split[name] for name in sorted(split) if split[name]}
    if shape == "B" and entries and ends_today:
        entries[-1]["usage"] = str(entries[-1]["usage"])
    return entries


def package_body(package: Package, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
    """Package details (spec 2.2) with its source (2.3); numbers as digit strings."""
    released = package.released_at.astimezone(zone)
    a = shape == "A"
    body: dict[str, Any] = {
        "package": package.package,
        "name": package.name,
        "date": released.isoformat() if a else released.strftime(_B_DATE),
        "version": package.version,
    }
    if a:
        body["architecture"] = package.architecture
    body |= {
        "author": package.author,
        "section": package.section,
        "description": package.description,
        "pre-depends": package.pre_depends,
        "depends": package.depends,
        "conflicts": package.conflicts,
    }
    if a:
        body["replaces"] = package.replaces
    body["size"] = str(package.size)
    body["md5sum"] = package.md5sum
    if a:
        body["sha256"] = package.sha256
    source: dict[str, str] = {"name": package.source.name}
    if a:
        source["origin"] = package.source.origin
    source["url"] = _address(package.source.url, shape)
    body |= {
        "long_description": package.long_description,
        "compatible": list(package.compatible),
        "total_download": str(package.total_download),
        "total_votes": str(package.total_votes),
        "total_value_votes": str(package.total_value_votes),
        "online": "1" if package.online else "0",
        # A paid package whose price the operator has not given yet: "" (docs/api.md, decision 4).
        "price": "" if package.price is None else _amount(package.price),
        "currency": package.currency,
        "source": source,
        "icon": _address(package.icon, shape),
        "screenshots": [_address(s, shape) for s in package.screenshots],
        "url": _address(package.url, shape),
    }
    return body


def _buyer(purchase: Purchase, shape: Shape, zone: ZoneInfo) -> models.Buyer:
    return {
        "nickname": purchase.nickname,
        "status": purchase.status,
        "total": _amount(purchase.total),
        "commission": _amount(purchase.commission),
        "currency": purchase.currency,
        "date": purchase.purchased_at.astimezone(zone).isoformat(),
        "txn_id": purchase.txn_id,
        "profile_url": _address(purchase.profile_url, shape),
        "allowed_for": purchase.allowed_for,
        "payment_platform": purchase.payment_platform,
    }


def buyers_body(page: BuyersPage, shape: Shape, zone: ZoneInfo) -> models.BuyersPage:
    """A buyers page (spec 2.4): ``total`` as a digit string, the rest integers."""
    return {
        "start": page.start,
        "limit": page.limit,
        "total": str(page.total),
        "page": page.page,
        "buyers": [_buyer(p, shape, zone) for p in page.buyers],
    }


# The seller operations (docs/api.md): JSON types proper (integers, booleans, null);
# the shapes differ only in package dates and addresses; purchase dates are ISO 8601
# with offset in both, as buyers' are.


def buyers_walk_body(walk: BuyersWalk, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
    """Buyers in cursor mode: the buyers of page mode, with ``has_more`` and ``cursor``."""
    return {
        "limit": walk.limit,
        "total": str(walk.total),
        "buyers": [_buyer(p, shape, zone) for p in walk.buyers],
        "has_more": walk.cursor is not None,
        "cursor": walk.cursor,
    }


def _rating(package: Package) -> float | None:
    if package.total_votes <= 0:
        return None
    return round(package.total_value_votes / package.total_votes, 2)


def _own_package(package: Package, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
    released = package.released_at.astimezone(zone)
    return {
        "package": package.package,
        "name": package.name,
        "version": package.version,
        "online": package.online,
        "paid": not package.is_free,
        "price": None if package.price is None else _amount(package.price),
        "currency": package.currency,
        "downloads": package.total_download,
        "votes": package.total_votes,
        "rating": _rating(package),
        "updated": released.isoformat() if shape == "A" else released.strftime(_B_DATE),
    }


def source_packages_body(page: PackagesPage, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
    """A page of the caller's own packages."""
    return {
        "packages": [_own_package(p, shape, zone) for p in page.packages],
        "limit": page.limit,
        "has_more": page.cursor is not None,
        "cursor": page.cursor,
    }


def check_body(check: Check, zone: ZoneInfo) -> dict[str, Any]:
    """An ownership check; the same in both shapes (a purchase date only)."""
    owned = check.ownership
    if owned is None:
        return {"package": check.package, "owned": False, "since": None, "purchase": None}
    return {
        "package": check.package,
        "owned": True,
        "since": owned.purchased_at.astimezone(zone).isoformat(),
        "purchase": {"txn_id": owned.txn_id, "allowed_for": owned.allowed_for},
    }


def _total(total: SalesTotal) -> dict[str, Any]:
    return {
        "currency": total.currency,
        "sales": total.sales,
        "gross": _amount(total.gross),
        "commission": _amount(total.commission),
        "net": _amount(total.gross - total.commission),
        "refunds": total.refunds,
        "refunded": _amount(total.refunded),
    }


def sale_body(sale: Sale, zone: ZoneInfo) -> dict[str, Any]:
    """One sale of the ledger (and of a ``sale.*`` webhook event); the same in both shapes."""
    p = sale.purchase
    return {
        "txn_id": p.txn_id,
        "date": p.purchased_at.astimezone(zone).isoformat(),
        "package": sale.package,
        "allowed_for": p.allowed_for,
        "nickname": p.nickname,
        "status": p.status,
        "gross": _amount(p.total),
        "commission": _amount(p.commission),
        "net": _amount(p.total - p.commission),
        "currency": p.currency,
        "payment_platform": p.payment_platform,
    }


def moment(when: datetime, shape: Shape, zone: ZoneInfo) -> str:
    """A time as each shape writes package dates (a webhook event's ``created``)."""
    local = when.astimezone(zone)
    return local.isoformat() if shape == "A" else local.strftime(_B_DATE)


def _day(day: date, shape: Shape) -> str:
    return day.isoformat() if shape == "A" else day.strftime("%d-%m-%Y")


def downloads_body(report: DownloadsReport, shape: Shape) -> dict[str, Any]:
    """A package's downloads per UTC day, oldest first, and their total (npm's range shape)."""
    days = report.days
    return {
        "package": report.package,
        "start": _day(days[0].day, shape),
        "end": _day(days[-1].day, shape),
        "total": report.total,
        "downloads": [{"day": _day(d.day, shape), "downloads": d.requests} for d in days],
    }


def sales_body(page: SalesPage, zone: ZoneInfo) -> dict[str, Any]:
    """A page of the sales ledger and its totals; the same in both shapes (purchase dates only)."""
    return {
        "start": page.start.isoformat(),
        "end": page.end.isoformat(),
        "sales": [sale_body(sale, zone) for sale in page.sales],
        "totals": [_total(t) for t in page.totals],
        "limit": page.limit,
        "has_more": page.cursor is not None,
        "cursor": page.cursor,
    }
