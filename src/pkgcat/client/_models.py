"""What the client returns: immutable, typed records, the same whatever shape the server speaks.

Dates are aware :class:`~datetime.datetime` values; counts and sizes are
``int``; prices, totals and commissions are :class:`~decimal.Decimal`. A field
that only shape A carries is ``None`` when the server speaks shape B.

Each field is declared once, with how it is read beside its type (``both(text)``: both
shapes carry it; ``a_only(...)``: shape A only; a record's class: that record), and one
reader, :func:`pkgcat.client._shapes.read_record`, reads every record from either shape with
the value readers of that module. Every name of ``__all__`` is exported by :mod:`pkgcat.client`.
"""

from __future__ import annotations

import datetime as dt
from datetime import tzinfo
from decimal import Decimal

from pkgcat.client._relations import Operator, Relation, Relations
from pkgcat.client._shapes import (
    MOMENT,
    a_only,
    amount,
    answer,
    as_sent,
    both,
    count,
    digest,
    each,
    either_day,
    flag,
    integer,
    iso_day,
    mapping,
    nullable,
    number,
    price,
    record,
    relations,
    text,
    texts,
    walk_cursor,
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
    "WhitelistChange",
    "WhitelistEntry",
    "WhitelistPage",
]


def _operations(value: object, where: str) -> dict[str, int]:
    counts = mapping(value, where)
    return {str(name): count(n, f"{where}.{name}") for name, n in counts.items()}


@record(slots=True)
class UsageDay:
    """Requests the calling application made on one calendar day."""

    date: dt.datetime = both(MOMENT)
    """Midnight at the start of the day, aware."""
    usage: int = both(integer)
    """Number of API requests that day."""
    operations: dict[str, int] | None = a_only(_operations, default=None, hash=False)
    """Requests per operation that day (``by="operation"``), only those with a count; else ``None``."""

    @property
    def day(self) -> dt.date:
        """The calendar day itself."""
        return self.date.date()


@record(slots=True)
class Source:
    """The source (repository owner) that publishes a package."""

    name: str = both(text)
    url: str = both(text)
    origin: str | None = a_only(text)
    """Origin of the repository; shape A only."""


@record(slots=True)
class Package:
    """One package's record (spec 2.2)."""

    package: str = both(text)
    """Identifier, reverse-domain style."""
    name: str = both(text)
    date: dt.datetime = both(MOMENT)
    """Release of this version, aware."""
    version: str = both(text)
    architecture: str | None = a_only(text)
    """Shape A only."""
    author: str = both(text)
    section: str = both(text)
    description: str = both(text)
    pre_depends: Relations = both(relations, "pre-depends")
    depends: Relations = both(relations)
    conflicts: Relations = both(relations)
    replaces: Relations | None = a_only(relations)
    """Shape A only."""
    size: int = both(integer)
    """Size of the .deb file (bytes, on our server)."""
    md5sum: str = both(text)
    sha256: str | None = a_only(digest)
    """Shape A only; also ``None`` when the server sends it empty (no digest listed)."""
    long_description: str = both(text)
    compatible: tuple[str, ...] = both(texts)
    total_download: int = both(integer)
    total_votes: int = both(integer)
    total_value_votes: int = both(integer)
    online: bool = both(flag)
    price: Decimal | None = both(price)
    """``None`` while the server does not know the price of a paid package (it sends '')."""
    currency: str = both(text)
    source: Source = as_sent(Source)
    icon: str = both(text)
    screenshots: tuple[str, ...] = both(texts)
    url: str = both(text)

    @property
    def is_free(self) -> bool:
        """A known price of zero (a price not known yet is not free)."""
        return self.price is not None and self.price == 0


@record(slots=True)
class Buyer:
    """One buyer of a paid package (spec 2.5)."""

    nickname: str = both(text)
    status: str = both(text)
    total: Decimal = both(amount)
    commission: Decimal = both(amount)
    currency: str = both(text)
    date: dt.datetime = both(MOMENT)
    """When the purchase was made, aware."""
    txn_id: str = both(text)
    profile_url: str = both(text)
    allowed_for: str = both(text)
    """Scope of the purchase: ``package`` or ``source`` on our server."""
    payment_platform: str = both(text)
    fee: Decimal | None = a_only(amount, default=None)
    """The payment platform's own fee; ``None`` from a server that does not tell it."""
    net: Decimal | None = a_only(amount, default=None)
    """What the seller is credited (total - commission - fee); ``None`` as ``fee``."""


@record(slots=True)
class BuyersPage:
    """One page of a package's buyers (spec 2.4)."""

    start: int = both(integer)
    """Offset of the first buyer of the page."""
    limit: int = both(integer)
    """Page size the server applied (it may clamp what was asked)."""
    total: int = both(integer)
    """Number of buyers of the package, over every page."""
    page: int = both(integer)
    buyers: tuple[Buyer, ...] = both(each(Buyer))


@record(slots=True)
class BuyersCursorPage:
    """One page of a package's buyers in cursor mode (API 1.1): stable while purchases arrive."""

    limit: int = both(integer)
    total: int = both(integer)
    """Number of buyers of the package, over every page."""
    buyers: tuple[Buyer, ...] = both(each(Buyer))
    has_more: bool = both(flag)
    cursor: str | None = walk_cursor()
    """Pass it back to get the next page; ``None`` when nothing follows."""


@record(slots=True)
class SourcePackage:
    """One package of the caller's own source (``source/packages``, API 1.1)."""

    package: str = both(text)
    name: str = both(text)
    version: str = both(text)
    online: bool = both(flag)
    paid: bool = both(flag)
    price: Decimal | None = nullable(price)
    """``None`` while a paid package's price is not known; ``Decimal("0.00")`` when free."""
    currency: str = both(text)
    downloads: int = both(count)
    votes: int = both(count)
    rating: float | None = nullable(number)
    """Mean vote, 1 to 5; ``None`` without votes."""
    updated: dt.datetime = both(MOMENT)
    """Release of this version, aware."""


@record(slots=True)
class PackagesPage:
    """One page of the caller's packages, by identifier."""

    packages: tuple[SourcePackage, ...] = both(each(SourcePackage))
    limit: int = both(integer)
    has_more: bool = both(flag)
    cursor: str | None = walk_cursor()


@record(slots=True)
class Purchase:
    """The purchase through which a buyer owns a package."""

    txn_id: str = both(text)
    allowed_for: str = both(text)
    """``package`` (this package) or ``source`` (the whole source)."""


@record(slots=True)
class Ownership:
    """Whether a buyer (or a device) owns a package (``package/check``, API 1.1)."""

    package: str = both(text)
    owned: bool = both(flag)
    since: dt.datetime | None = nullable(MOMENT)
    """Date of the earliest purchase that counts (or of the whitelisting); ``None`` when not
    owned, and always for a public key's check."""
    purchase: Purchase | None = nullable(Purchase)
    udid: str | None = a_only(text, default=None)
    """The device asked about (a check by ``udid``, on servers that answer as YouRepo)."""
    check: str | None = a_only(text, default=None)
    """YouRepo's answer to a check by ``udid``: ``"success"`` or ``"fail"``; ``None`` from a
    server that does not send it (``owned`` says the same)."""


@record(slots=True)
class WhitelistEntry:
    """A device a seller allows one package whatever it bought (``package/whitelist``)."""

    udid: str = both(text)
    description: str = both(text)


@record(slots=True)
class WhitelistPage:
    """One page of a package's whitelist, by udid, as YouRepo pages it."""

    start: int = both(integer)
    """Offset of the first device of the page: ``(page - 1) * limit``."""
    limit: int = both(integer)
    total: int = both(integer)
    """Devices on the whitelist, over every page."""
    page: int = both(integer)
    whitelist: tuple[WhitelistEntry, ...] = both(each(WhitelistEntry))


@record(slots=True)
class WhitelistChange:
    """What one whitelist write did, device by device."""

    package: str = both(text)
    added: int = both(integer)
    updated: int = both(integer)
    """Already there with another description, which was replaced."""
    unchanged: int = both(integer)
    """Already as asked: there with that description (an add), or not there (a remove)."""
    removed: int = both(integer)


@record(slots=True)
class Sale:
    """One purchase in the sales ledger (``source/sales``, API 1.1)."""

    txn_id: str = both(text)
    date: dt.datetime = both(MOMENT)
    package: str | None = nullable(text)
    """``None`` for a purchase of the whole source."""
    allowed_for: str = both(text)
    nickname: str = both(text)
    status: str = both(text)
    """``Completed``, ``Refunded`` or ``Chargeback``."""
    gross: Decimal = both(amount)
    commission: Decimal = both(amount)
    net: Decimal = both(amount)
    """``gross - commission - fee``."""
    currency: str = both(text)
    payment_platform: str = both(text)
    fee: Decimal | None = a_only(amount, default=None)
    """The payment platform's own fee; ``None`` from a server that does not tell it."""


@record(slots=True)
class SalesTotal:
    """The totals of one currency over the whole range and filters (every page alike)."""

    currency: str = both(text)
    sales: int = both(count)
    """Completed purchases."""
    gross: Decimal = both(amount)
    commission: Decimal = both(amount)
    net: Decimal = both(amount)
    """Sums over completed purchases."""
    refunds: int = both(count)
    """Refunded and charged-back purchases."""
    refunded: Decimal = both(amount)
    """Their gross sum."""
    fee: Decimal | None = a_only(amount, default=None)
    """The platforms' fees of the completed purchases; ``None`` from a server that does not
    tell them."""


@record(slots=True)
class DownloadsDay:
    """Whole files of a package the repository sent on one UTC day."""

    day: dt.date = both(either_day)
    downloads: int = both(count)


@record(slots=True)
class Downloads:
    """A package's downloads per UTC day from ``start`` to ``end``, oldest first, and their total."""

    package: str = both(text)
    start: dt.date = both(either_day)
    end: dt.date = both(either_day)
    total: int = both(count)
    days: tuple[DownloadsDay, ...] = both(each(DownloadsDay), "downloads")


@record(slots=True)
class SalesPage:
    """One page of the sales ledger, newest first, with the totals per currency."""

    start: dt.date = both(iso_day)
    end: dt.date = both(iso_day)
    sales: tuple[Sale, ...] = both(each(Sale))
    totals: tuple[SalesTotal, ...] = both(each(SalesTotal))
    limit: int = both(integer)
    has_more: bool = both(flag)
    cursor: str | None = walk_cursor()


def read_buyers_any(value: object, zone: tzinfo) -> BuyersCursorPage | BuyersPage:
    """A cursor-mode page, or a numbered page from a server that does not know cursors.

    A server before API 1.1 ignores ``cursor`` and answers page 1 with ``page`` and no
    ``has_more``; the walk then goes on by page numbers.
    """
    body = mapping(value, "response")
    if "has_more" not in body and "page" in body:
        return answer(BuyersPage)(value, zone)
    return answer(BuyersCursorPage)(value, zone)
