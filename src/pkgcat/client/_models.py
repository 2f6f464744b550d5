"""What the client returns: immutable, typed records, the same whatever shape the server speaks.

Dates are aware :class:`~datetime.datetime` values; counts and sizes are
``int``; prices, totals and commissions are :class:`~decimal.Decimal`. A field
that only shape A carries is ``None`` when the server speaks shape B.

Each record reads itself from a response in either shape (its ``_read`` classmethod, given
the zone when it holds dates), field by field, with the readers of :mod:`pkgcat.client._shapes`. Every name of
``__all__`` is exported by :mod:`pkgcat.client`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from decimal import Decimal
from typing import Self

from pkgcat.client._relations import Operator, Relation, Relations
from pkgcat.client._shapes import (
    a_only,
    amount,
    count,
    digest,
    either_day,
    flag,
    integer,
    iso_day,
    items,
    mapping,
    moment,
    nullable,
    number,
    price,
    relations,
    required,
    text,
    texts,
    walk_position,
)

__all__ = [
    "Buyer",
    "BuyersCursorPage",
    "BuyersPage",
    "Downloads",
    "DownloadsDay",
    "Operator",
    "Ownership",
    "Package",
    "PackagesPage",
    "Purchase",
    "Relation",
    "Relations",
    "Sale",
    "SalesPage",
    "SalesTotal",
    "Source",
    "SourcePackage",
    "UsageDay",
]


def _operations(value: object, where: str) -> dict[str, int]:
    counts = mapping(value, where)
    return {str(name): count(n, f"{where}.{name}") for name, n in counts.items()}


@dataclass(frozen=True, slots=True)
class UsageDay:
    """Requests the calling application made on one calendar day."""

    date: dt.datetime
    """Midnight at the start of the day, aware."""
    usage: int
    """Number of API requests that day."""
    operations: dict[str, int] | None = field(default=None, hash=False, compare=True)
    """Requests per operation that day (``by="operation"``), only those with a count; else ``None``."""

    @property
    def day(self) -> dt.date:
        """The calendar day itself."""
        return self.date.date()

    @classmethod
    def _read_all(cls, value: object, zone: tzinfo) -> list[Self]:
        """The usage entries (spec 2.1), in the server's order (oldest first).

        ``operations`` is read when the entry has it (``by=operation``), else ``None``.
        """
        return [
            cls._read(item, zone, f"response[{n}]")
            for n, item in enumerate(items(value, "response"))
        ]

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str) -> Self:
        entry = mapping(value, where)
        return cls(
            date=required(entry, "date", where, lambda v, w: moment(v, w, zone)),
            usage=required(entry, "usage", where, integer),
            operations=a_only(entry, "operations", where, _operations),
        )


@dataclass(frozen=True, slots=True)
class Source:
    """The source (repository owner) that publishes a package."""

    name: str
    url: str
    origin: str | None
    """Origin of the repository; shape A only."""

    @classmethod
    def _read(cls, value: object, where: str) -> Self:
        source = mapping(value, where)
        return cls(
            name=required(source, "name", where, text),
            url=required(source, "url", where, text),
            origin=a_only(source, "origin", where, text),
        )


@dataclass(frozen=True, slots=True)
class Package:
    """One package's record (spec 2.2)."""

    package: str
    """Identifier, reverse-domain style."""
    name: str
    date: dt.datetime
    """Release of this version, aware."""
    version: str
    architecture: str | None
    """Shape A only."""
    author: str
    section: str
    description: str
    pre_depends: Relations
    depends: Relations
    conflicts: Relations
    replaces: Relations | None
    """Shape A only."""
    size: int
    """Size of the .deb file (bytes, on our server)."""
    md5sum: str
    sha256: str | None
    """Shape A only; also ``None`` when the server sends it empty (no digest listed)."""
    long_description: str
    compatible: tuple[str, ...]
    total_download: int
    total_votes: int
    total_value_votes: int
    online: bool
    price: Decimal | None
    """``None`` while the server does not know the price of a paid package (it sends '')."""
    currency: str
    source: Source
    icon: str
    screenshots: tuple[str, ...]
    url: str

    @property
    def is_free(self) -> bool:
        """A known price of zero (a price not known yet is not free)."""
        return self.price is not None and self.price == 0

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str = "response") -> Self:
        """Package details (spec 2.2) with their source (2.3)."""
        body = mapping(value, where)
        source = Source._read(body.get("source"), f"{where}.source")
        return cls(
            package=required(body, "package", where, text),
            name=required(body, "name", where, text),
            date=required(body, "date", where, lambda v, w: moment(v, w, zone)),
            version=required(body, "version", where, text),
            architecture=a_only(body, "architecture", where, text),
            author=required(body, "author", where, text),
            section=required(body, "section", where, text),
            description=required(body, "description", where, text),
            pre_depends=required(body, "pre-depends", where, relations),
            depends=required(body, "depends", where, relations),
            conflicts=required(body, "conflicts", where, relations),
            replaces=a_only(body, "replaces", where, relations),
            size=required(body, "size", where, integer),
            md5sum=required(body, "md5sum", where, text),
            sha256=a_only(body, "sha256", where, digest),
            long_description=required(body, "long_description", where, text),
            compatible=required(body, "compatible", where, texts),
            total_download=required(body, "total_download", where, integer),
            total_votes=required(body, "total_votes", where, integer),
            total_value_votes=required(body, "total_value_votes", where, integer),
            online=required(body, "online", where, flag),
            price=required(body, "price", where, price),
            currency=required(body, "currency", where, text),
            source=source,
            icon=required(body, "icon", where, text),
            screenshots=required(body, "screenshots", where, texts),
            url=required(body, "url", where, text),
        )


@dataclass(frozen=True, slots=True)
class Buyer:
    """One buyer of a paid package (spec 2.5)."""

    nickname: str
    status: str
    total: Decimal
    commission: Decimal
    currency: str
    date: dt.datetime
    """When the purchase was made, aware."""
    txn_id: str
    profile_url: str
    allowed_for: str
    """Scope of the purchase: ``package`` or ``source`` on our server."""
    payment_platform: str

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str) -> Self:
        buyer = mapping(value, where)
        return cls(
            nickname=required(buyer, "nickname", where, text),
            status=required(buyer, "status", where, text),
            total=required(buyer, "total", where, amount),
            commission=required(buyer, "commission", where, amount),
            currency=required(buyer, "currency", where, text),
            date=required(buyer, "date", where, lambda v, w: moment(v, w, zone)),
            txn_id=required(buyer, "txn_id", where, text),
            profile_url=required(buyer, "profile_url", where, text),
            allowed_for=required(buyer, "allowed_for", where, text),
            payment_platform=required(buyer, "payment_platform", where, text),
        )

    @classmethod
    def _read_all(cls, body: Mapping[str, object], zone: tzinfo, where: str) -> tuple[Self, ...]:
        buyers = required(body, "buyers", where, items)
        return tuple(cls._read(b, zone, f"{where}.buyers[{n}]") for n, b in enumerate(buyers))


@dataclass(frozen=True, slots=True)
class BuyersPage:
    """One page of a package's buyers (spec 2.4)."""

    start: int
    """Offset of the first buyer of the page."""
    limit: int
    """Page size the server applied (it may clamp what was asked)."""
    total: int
    """Number of buyers of the package, over every page."""
    page: int
    buyers: tuple[Buyer, ...]

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str = "response") -> Self:
        """A buyers page (spec 2.4) and its buyers (2.5)."""
        body = mapping(value, where)
        return cls(
            start=required(body, "start", where, integer),
            limit=required(body, "limit", where, integer),
            total=required(body, "total", where, integer),
            page=required(body, "page", where, integer),
            buyers=Buyer._read_all(body, zone, where),
        )


@dataclass(frozen=True, slots=True)
class BuyersCursorPage:
    """One page of a package's buyers in cursor mode (API 1.1): stable while purchases arrive."""

    limit: int
    total: int
    """Number of buyers of the package, over every page."""
    buyers: tuple[Buyer, ...]
    has_more: bool
    cursor: str | None
    """Pass it back to get the next page; ``None`` when nothing follows."""

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str = "response") -> Self:
        """A buyers page in cursor mode."""
        body = mapping(value, where)
        has_more, cursor = walk_position(body, where)
        return cls(
            limit=required(body, "limit", where, integer),
            total=required(body, "total", where, integer),
            buyers=Buyer._read_all(body, zone, where),
            has_more=has_more,
            cursor=cursor,
        )

    @classmethod
    def _read_or_page(cls, value: object, zone: tzinfo) -> Self | BuyersPage:
        """A cursor-mode page, or a numbered page from a server that does not know cursors.

        A server before API 1.1 ignores ``cursor`` and answers page 1 with ``page`` and no
        ``has_more``; the walk then goes on by page numbers.
        """
        body = mapping(value, "response")
        if "has_more" not in body and "page" in body:
            return BuyersPage._read(value, zone)
        return cls._read(value, zone)


@dataclass(frozen=True, slots=True)
class SourcePackage:
    """One package of the caller's own source (``source/packages``, API 1.1)."""

    package: str
    name: str
    version: str
    online: bool
    paid: bool
    price: Decimal | None
    """``None`` while a paid package's price is not known; ``Decimal("0.00")`` when free."""
    currency: str
    downloads: int
    votes: int
    rating: float | None
    """Mean vote, 1 to 5; ``None`` without votes."""
    updated: dt.datetime
    """Release of this version, aware."""

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str) -> Self:
        item = mapping(value, where)
        return cls(
            package=required(item, "package", where, text),
            name=required(item, "name", where, text),
            version=required(item, "version", where, text),
            online=required(item, "online", where, flag),
            paid=required(item, "paid", where, flag),
            price=nullable(item, "price", where, price),
            currency=required(item, "currency", where, text),
            downloads=required(item, "downloads", where, count),
            votes=required(item, "votes", where, count),
            rating=nullable(item, "rating", where, number),
            updated=required(item, "updated", where, lambda v, w: moment(v, w, zone)),
        )


@dataclass(frozen=True, slots=True)
class PackagesPage:
    """One page of the caller's packages, by identifier."""

    packages: tuple[SourcePackage, ...]
    limit: int
    has_more: bool
    cursor: str | None

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str = "response") -> Self:
        """A page of the caller's packages (``source/packages``)."""
        body = mapping(value, where)
        found = required(body, "packages", where, items)
        has_more, cursor = walk_position(body, where)
        return cls(
            packages=tuple(
                SourcePackage._read(p, zone, f"{where}.packages[{n}]") for n, p in enumerate(found)
            ),
            limit=required(body, "limit", where, integer),
            has_more=has_more,
            cursor=cursor,
        )


@dataclass(frozen=True, slots=True)
class Purchase:
    """The purchase through which a buyer owns a package."""

    txn_id: str
    allowed_for: str
    """``package`` (this package) or ``source`` (the whole source)."""

    @classmethod
    def _read(cls, value: object, where: str) -> Self:
        item = mapping(value, where)
        return cls(
            txn_id=required(item, "txn_id", where, text),
            allowed_for=required(item, "allowed_for", where, text),
        )


@dataclass(frozen=True, slots=True)
class Ownership:
    """Whether a buyer (or a device) owns a package (``package/check``, API 1.1)."""

    package: str
    owned: bool
    since: dt.datetime | None
    """Date of the earliest purchase that counts; ``None`` when not owned."""
    purchase: Purchase | None

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str = "response") -> Self:
        """The answer of ``package/check``."""
        body = mapping(value, where)
        return cls(
            package=required(body, "package", where, text),
            owned=required(body, "owned", where, flag),
            since=nullable(body, "since", where, lambda v, w: moment(v, w, zone)),
            purchase=nullable(body, "purchase", where, Purchase._read),
        )


@dataclass(frozen=True, slots=True)
class Sale:
    """One purchase in the sales ledger (``source/sales``, API 1.1)."""

    txn_id: str
    date: dt.datetime
    package: str | None
    """``None`` for a purchase of the whole source."""
    allowed_for: str
    nickname: str
    status: str
    """``Completed``, ``Refunded`` or ``Chargeback``."""
    gross: Decimal
    commission: Decimal
    net: Decimal
    currency: str
    payment_platform: str

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str) -> Self:
        item = mapping(value, where)
        return cls(
            txn_id=required(item, "txn_id", where, text),
            date=required(item, "date", where, lambda v, w: moment(v, w, zone)),
            package=nullable(item, "package", where, text),
            allowed_for=required(item, "allowed_for", where, text),
            nickname=required(item, "nickname", where, text),
            status=required(item, "status", where, text),
            gross=required(item, "gross", where, amount),
            commission=required(item, "commission", where, amount),
            net=required(item, "net", where, amount),
            currency=required(item, "currency", where, text),
            payment_platform=required(item, "payment_platform", where, text),
        )


@dataclass(frozen=True, slots=True)
class SalesTotal:
    """The totals of one currency over the whole range and filters (every page alike)."""

    currency: str
    sales: int
    """Completed purchases."""
    gross: Decimal
    commission: Decimal
    net: Decimal
    """Sums over completed purchases."""
    refunds: int
    """Refunded and charged-back purchases."""
    refunded: Decimal
    """Their gross sum."""

    @classmethod
    def _read(cls, value: object, where: str) -> Self:
        item = mapping(value, where)
        return cls(
            currency=required(item, "currency", where, text),
            sales=required(item, "sales", where, count),
            gross=required(item, "gross", where, amount),
            commission=required(item, "commission", where, amount),
            net=required(item, "net", where, amount),
            refunds=required(item, "refunds", where, count),
            refunded=required(item, "refunded", where, amount),
        )


@dataclass(frozen=True, slots=True)
class DownloadsDay:
    """Whole files of a package the repository sent on one UTC day."""

    day: dt.date
    downloads: int

    @classmethod
    def _read(cls, value: object, where: str) -> Self:
        entry = mapping(value, where)
        return cls(
            day=required(entry, "day", where, either_day),
            downloads=required(entry, "downloads", where, count),
        )


@dataclass(frozen=True, slots=True)
class Downloads:
    """A package's downloads per UTC day from ``start`` to ``end``, oldest first, and their total."""

    package: str
    start: dt.date
    end: dt.date
    total: int
    days: tuple[DownloadsDay, ...]

    @classmethod
    def _read(cls, value: object, _zone: tzinfo, where: str = "response") -> Self:
        """A package's downloads per day (``package/downloads``), in either shape."""
        body = mapping(value, where)
        days = required(body, "downloads", where, items)
        return cls(
            package=required(body, "package", where, text),
            start=required(body, "start", where, either_day),
            end=required(body, "end", where, either_day),
            total=required(body, "total", where, count),
            days=tuple(
                DownloadsDay._read(d, f"{where}.downloads[{n}]") for n, d in enumerate(days)
            ),
        )


@dataclass(frozen=True, slots=True)
class SalesPage:
    """One page of the sales ledger, newest first, with the totals per currency."""

    start: dt.date
    end: dt.date
    sales: tuple[Sale, ...]
    totals: tuple[SalesTotal, ...]
    limit: int
    has_more: bool
    cursor: str | None

    @classmethod
    def _read(cls, value: object, zone: tzinfo, where: str = "response") -> Self:
        """A page of the sales ledger (``source/sales``), with the totals of the whole range."""
        body = mapping(value, where)
        sales = required(body, "sales", where, items)
        totals = required(body, "totals", where, items)
        has_more, cursor = walk_position(body, where)
        return cls(
            start=required(body, "start", where, iso_day),
            end=required(body, "end", where, iso_day),
            sales=tuple(Sale._read(s, zone, f"{where}.sales[{n}]") for n, s in enumerate(sales)),
            totals=tuple(SalesTotal._read(t, f"{where}.totals[{n}]") for n, t in enumerate(totals)),
            limit=required(body, "limit", where, integer),
            has_more=has_more,
            cursor=cursor,
        )
