"""What the client returns: immutable, typed records, the same whatever shape the server speaks.

Dates are aware :class:`~datetime.datetime` values; counts and sizes are
``int``; prices, totals and commissions are :class:`~decimal.Decimal`. A field
that only shape A carries is ``None`` when the server speaks shape B.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

Operator = Literal["<<", "<=", "=", ">=", ">>"]
"""A version constraint's operator (Debian Policy 7.1)."""


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


@dataclass(frozen=True, slots=True)
class Relation:
    """One package a relation field names, with its optional constraints.

    ``name (>= 1.0) [arm64]`` reads as ``Relation("name", ">=", "1.0", ("arm64",))``.
    A part that does not follow the syntax is kept whole in ``name``.
    """

    name: str
    operator: Operator | None = None
    version: str | None = None
    architectures: tuple[str, ...] = ()
    """Architecture restriction, as written (``!`` marks an exclusion)."""
    arch_qualifier: str | None = None
    """What follows ``:`` after the name (``any``, ``native`` or an architecture)."""


@dataclass(frozen=True, slots=True)
class Relations:
    """A relation field (``depends``, ``pre-depends``, ``conflicts``, ``replaces``).

    ``groups`` is the comma-separated list; each group holds its ``|`` alternatives.
    An empty field has no groups. ``raw`` is the field exactly as the server sent it.
    """

    raw: str
    groups: tuple[tuple[Relation, ...], ...]

    def __iter__(self) -> Iterator[tuple[Relation, ...]]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    @property
    def names(self) -> tuple[str, ...]:
        """Every package named, alternatives included, in order."""
        return tuple(r.name for group in self.groups for r in group)


@dataclass(frozen=True, slots=True)
class Source:
    """The source (repository owner) that publishes a package."""

    name: str
    url: str
    origin: str | None
    """Origin of the repository; shape A only."""


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


@dataclass(frozen=True, slots=True)
class PackagesPage:
    """One page of the caller's packages, by identifier."""

    packages: tuple[SourcePackage, ...]
    limit: int
    has_more: bool
    cursor: str | None


@dataclass(frozen=True, slots=True)
class Purchase:
    """The purchase through which a buyer owns a package."""

    txn_id: str
    allowed_for: str
    """``package`` (this package) or ``source`` (the whole source)."""


@dataclass(frozen=True, slots=True)
class Ownership:
    """Whether a buyer (or a device) owns a package (``package/check``, API 1.1)."""

    package: str
    owned: bool
    since: dt.datetime | None
    """Date of the earliest purchase that counts; ``None`` when not owned."""
    purchase: Purchase | None


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


@dataclass(frozen=True, slots=True)
class DownloadsDay:
    """Whole files of a package the repository sent on one UTC day."""

    day: dt.date
    downloads: int


@dataclass(frozen=True, slots=True)
class Downloads:
    """A package's downloads per UTC day from ``start`` to ``end``, oldest first, and their total."""

    package: str
    start: dt.date
    end: dt.date
    total: int
    days: tuple[DownloadsDay, ...]


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
