"""The API's response bodies: their types, and their rendering in shape A and shape B.

Each operation's body is here twice, side by side: as typed dictionaries, and as the
function that writes a use case's answer in either shape (spec sections 2 and 9). This is
the only server module that knows shape A from shape B.

The types cost nothing at run time (a ``TypedDict`` is a plain ``dict``, serialised by
orjson); the OpenAPI document's schemas are generated from them with pydantic
(:mod:`pkgcat.http.openapi`), so the types the server writes and the schemas a
client reads are one text. Keys that are not Python names (``pre-depends``)
use the functional syntax. Every object is closed (no other keys).

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
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired
from zoneinfo import ZoneInfo

from pydantic import Field
from pydantic.config import JsonDict

# pydantic (which requires typing_extensions) reads only its TypedDict before Python 3.12.
from typing_extensions import TypedDict

from pkgcat import domain
from pkgcat.domain import Shape

if TYPE_CHECKING:
    # What the use cases answer: only named in the rendering's signatures.
    from pkgcat import licences, services

ISO_DATETIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$"
ISO_MIDNIGHT = r"^\d{4}-\d{2}-\d{2}T00:00:00[+-]\d{2}:\d{2}$"
B_USAGE_DATE = r"^\d{2}-\d{2}-\d{4} 00:00:00$"
B_DATE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"
DAY = r"^\d{4}-\d{2}-\d{2}$"
DIGITS = r"^\d+$"
DECIMAL = r"^\d+\.\d{2,}$"
"""Amounts: a point and at least two decimals (:func:`_amount` writes them so)."""
CURRENCY = r"^[A-Z]{3}$"


def _text(description: str, pattern: str | None = None) -> object:
    if pattern in (ISO_DATETIME, ISO_MIDNIGHT):
        # A real RFC 3339 date-time: generated clients parse it, which also tells
        # shape A from shape B where nothing else does (a usage entry).
        return Field(description=description, pattern=pattern, json_schema_extra=_TIMESTAMP)
    return Field(description=description, pattern=pattern)


_TIMESTAMP: JsonDict = {"format": "date-time"}


Text = str
"""A string field: ``Annotated[Text, _text(...)]`` reads as what it is."""

IsoDate = Annotated[str, _text("In the application's time zone, with its offset.", ISO_DATETIME)]
BDate = Annotated[str, _text("YYYY-MM-DD HH:MM:SS in the application's time zone.", B_DATE)]
Amount = Annotated[str, _text("A decimal amount, at least two decimals.", DECIMAL)]
Currency = Annotated[str, _text("ISO 4217 currency code.", CURRENCY)]
Count = Annotated[int, Field(ge=0)]
AllowedFor = Annotated[
    Literal["package", "source"],
    Field(description="'package': this package; 'source': every paid package of the source."),
]


# --- how each shape writes a value ------------------------------------------------------------

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


def amount(value: Decimal) -> str:
    """An amount as every answer writes it (a signed one too: a balance may be owed)."""
    return _amount(value)


@lru_cache(maxsize=8192)
def _midnight(day: date, shape: Shape, zone: ZoneInfo) -> str:
    """Midnight of ``day`` in ``zone`` as each shape writes it (the same few days recur)."""
    if shape == "A":
        return datetime(day.year, day.month, day.day, tzinfo=zone).isoformat()
    return datetime(day.year, day.month, day.day).strftime(_B_USAGE_DATE)


def moment(when: datetime, shape: Shape, zone: ZoneInfo) -> str:
    """A time as each shape writes package dates (a webhook event's ``created``)."""
    local = when.astimezone(zone)
    return local.isoformat() if shape == "A" else local.strftime(_B_DATE)


# --- usage (spec 2.1) ----------------------------------------------------------------------------


class UsageEntryA(TypedDict):
    """One day of usage, shape A (spec 2.1)."""

    date: Annotated[str, _text("Midnight of the day, with the zone's offset.", ISO_MIDNIGHT)]
    usage: Annotated[Count, Field(description="Requests that day.")]


class UsageEntryB(TypedDict):
    """One day of usage, shape B (spec 2.1)."""

    date: Annotated[str, _text("Midnight of the day, DD-MM-YYYY.", B_USAGE_DATE)]
    usage: Annotated[
        Count | Annotated[str, Field(pattern=DIGITS)],
        Field(description="Requests that day; the last entry carries it as digits."),
    ]


OperationCounts = Annotated[
    dict[str, Count],
    Field(description="Requests that day per operation name, only those above 0."),
]


class UsageOperationsEntryA(UsageEntryA):
    """One day of usage by operation (``by=operation``), shape A."""

    operations: OperationCounts


class UsageOperationsEntryB(UsageEntryB):
    """One day of usage by operation (``by=operation``), shape B."""

    operations: OperationCounts


def usage_body(
    days: list[domain.UsageDay],
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


# --- details (spec 2.2, 2.3) ---------------------------------------------------------------------


class SourceA(TypedDict):
    """Source, shape A (spec 2.3)."""

    name: Annotated[Text, _text("Name of the source.")]
    origin: Annotated[Text, _text("Origin of the repository (shape A only).")]
    url: Annotated[Text, _text("Address of the source.", r"^https://")]


class SourceB(TypedDict):
    """Source, shape B (spec 2.3)."""

    name: Annotated[Text, _text("Name of the source.")]
    url: Annotated[Text, _text("Address of the source.", r"^http://")]


_Digits = Annotated[str, _text("A count, as digits.", DIGITS)]
_Raw = Annotated[str, _text("The raw control field; may be empty.")]
_Compatible = Annotated[
    list[str], Field(description="Compatible platform labels, such as 'iOS 15'.")
]
_Online = Annotated[
    str, _text("'1' online; '0' offline (seen only by the package's own source).", r"^[01]$")
]
_Price = Annotated[
    str,
    _text(
        "Price; '0.00' for a free package; '' for a paid package whose price is not known yet.",
        r"^(\d+\.\d{2,})?$",
    ),
]
_Md5 = Annotated[str, _text("MD5 of the .deb file.", r"^[0-9a-f]{32}$")]
_Size = Annotated[str, _text("Size of the .deb file in bytes.", DIGITS)]

_Package = TypedDict(
    "_Package",
    {
        "package": Annotated[Text, _text("Identifier, reverse-domain style.")],
        "name": Annotated[Text, _text("Display name.")],
        "version": Annotated[Text, _text("Version string.")],
        "author": Annotated[Text, _text("Author name.")],
        "section": Annotated[Text, _text("Category name.")],
        "description": Annotated[Text, _text("Short description.")],
        "pre-depends": _Raw,
        "depends": _Raw,
        "conflicts": _Raw,
        "size": _Size,
        "md5sum": _Md5,
        "long_description": Annotated[Text, _text("Long description.")],
        "compatible": _Compatible,
        "total_download": _Digits,
        "total_votes": _Digits,
        "total_value_votes": Annotated[
            str, _text("Sum of the 1-5 ratings (average = this / total_votes).", DIGITS)
        ],
        "online": _Online,
        "price": _Price,
        "currency": Currency,
    },
)
"""The fields both shapes write alike (the functional form: keys such as ``pre-depends``)."""


class PackageA(_Package):
    """Package details, shape A (spec 2.2)."""

    date: Annotated[
        str, _text("Release date of this version in the application's zone.", ISO_DATETIME)
    ]
    architecture: Annotated[Text, _text("Debian architecture (shape A only).")]
    replaces: _Raw
    sha256: Annotated[
        str,
        _text(
            "SHA-256 of the .deb file (shape A only); '' when the repository lists none.",
            r"^([0-9a-f]{64})?$",
        ),
    ]
    source: SourceA
    icon: Annotated[str, _text("Address of the icon; '' when there is none.", r"^(https://|$)")]
    screenshots: list[Annotated[str, _text("Address of a screenshot.", r"^https://")]]
    url: Annotated[
        str, _text("Address of the package page; '' when there is none.", r"^(https://|$)")
    ]


class PackageB(_Package):
    """Package details, shape B (spec 2.2)."""

    date: BDate
    source: SourceB
    icon: Annotated[str, _text("Address of the icon; '' when there is none.", r"^(http://|$)")]
    screenshots: list[Annotated[str, _text("Address of a screenshot.", r"^http://")]]
    url: Annotated[
        str, _text("Address of the package page; '' when there is none.", r"^(http://|$)")
    ]


def package_body(package: domain.Package, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
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


# --- buyers (spec 2.4, 2.5) ----------------------------------------------------------------------


class Buyer(TypedDict):
    """One buyer (spec 2.5)."""

    nickname: Annotated[Text, _text("Buyer's nickname.")]
    status: Annotated[Text, _text("Payment status, such as 'Completed'.")]
    total: Annotated[str, _text("Amount paid.", DECIMAL)]
    commission: Annotated[str, _text("Commission on the amount.", DECIMAL)]
    currency: Currency
    date: Annotated[str, _text("When the purchase was made.", ISO_DATETIME)]
    txn_id: Annotated[Text, _text("Transaction id at the payment platform.")]
    profile_url: Annotated[Text, _text("Address of the buyer's profile.")]
    allowed_for: AllowedFor
    payment_platform: Annotated[str, _text("Payment platform, lower case.", r"^[a-z0-9_.-]+$")]
    # Beyond spec 2.5, after its fields: what the seller keeps of the purchase.
    fee: Annotated[str, _text("The payment platform's own fee (0.00: none reported).", DECIMAL)]
    net: Annotated[str, _text("What the seller is credited: total - commission - fee.", DECIMAL)]


_Limit = Annotated[int, Field(ge=1, le=100, description="Page size applied.")]
_Buyers = Annotated[list[Buyer], Field(max_length=100)]
_HasMore = Annotated[bool, Field(description="Whether another page follows.")]
_Cursor = Annotated[
    str | None, Field(description="Pass as `cursor` for the next page; null when none follows.")
]


class BuyersPage(TypedDict):
    """A page of buyers (spec 2.4)."""

    start: Annotated[int, Field(ge=0, description="(page - 1) * limit.")]
    limit: _Limit
    total: Annotated[str, _text("Total number of buyers.", DIGITS)]
    page: Annotated[int, Field(ge=1)]
    buyers: _Buyers


class BuyersCursorPage(TypedDict):
    """A page of buyers in cursor mode (``cursor`` given)."""

    limit: _Limit
    total: Annotated[str, _text("Total number of buyers.", DIGITS)]
    buyers: _Buyers
    has_more: _HasMore
    cursor: _Cursor


def _buyer(purchase: domain.Purchase, shape: Shape, zone: ZoneInfo) -> Buyer:
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
        "fee": _amount(purchase.fee),
        "net": _amount(purchase.net),
    }


def buyers_body(page: services.BuyersPage, shape: Shape, zone: ZoneInfo) -> BuyersPage:
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


def buyers_walk_body(walk: services.BuyersWalk, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
    """Buyers in cursor mode: the buyers of page mode, with ``has_more`` and ``cursor``."""
    return {
        "limit": walk.limit,
        "total": str(walk.total),
        "buyers": [_buyer(p, shape, zone) for p in walk.buyers],
        "has_more": walk.cursor is not None,
        "cursor": walk.cursor,
    }


# --- source/packages -----------------------------------------------------------------------------


class _SourcePackage(TypedDict):
    package: Annotated[Text, _text("Identifier, reverse-domain style.")]
    name: Annotated[Text, _text("Display name.")]
    version: Annotated[Text, _text("Version string.")]
    online: bool
    paid: bool
    price: Annotated[
        Amount | None, Field(description="null while a paid package's price is unknown.")
    ]
    currency: Currency
    downloads: Count
    votes: Count
    rating: Annotated[
        Annotated[float, Field(ge=1, le=5)] | None,
        Field(description="Mean rating, 2 decimals; null with no votes."),
    ]


class SourcePackageA(_SourcePackage):
    """One of the caller's packages, shape A."""

    updated: Annotated[IsoDate, Field(description="When this version was released.")]


class SourcePackageB(_SourcePackage):
    """One of the caller's packages, shape B."""

    updated: Annotated[BDate, Field(description="When this version was released.")]


class SourcePackagesA(TypedDict):
    """A page of the caller's packages, shape A."""

    packages: list[SourcePackageA]
    limit: _Limit
    has_more: _HasMore
    cursor: _Cursor


class SourcePackagesB(TypedDict):
    """A page of the caller's packages, shape B."""

    packages: list[SourcePackageB]
    limit: _Limit
    has_more: _HasMore
    cursor: _Cursor


def _rating(package: domain.Package) -> float | None:
    if package.total_votes <= 0:
        return None
    return round(package.total_value_votes / package.total_votes, 2)


def _own_package(package: domain.Package, shape: Shape, zone: ZoneInfo) -> dict[str, Any]:
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


def source_packages_body(
    page: services.PackagesPage, shape: Shape, zone: ZoneInfo
) -> dict[str, Any]:
    """A page of the caller's own packages."""
    return {
        "packages": [_own_package(p, shape, zone) for p in page.packages],
        "limit": page.limit,
        "has_more": page.cursor is not None,
        "cursor": page.cursor,
    }


# --- package/check -------------------------------------------------------------------------------


class OwningPurchase(TypedDict):
    """The purchase through which a buyer owns a package."""

    txn_id: Annotated[Text, _text("Transaction id at the payment platform.")]
    allowed_for: AllowedFor


class Ownership(TypedDict):
    """Whether a buyer or device owns a package; a device's check also answers as YouRepo's
    (``udid`` and ``check``), in both shapes."""

    package: Annotated[Text, _text("Identifier, reverse-domain style.")]
    owned: bool
    since: Annotated[
        IsoDate | None,
        Field(
            description="When it was first owned: the earliest owning purchase's date, or when "
            "the device was put on the package's whitelist, whichever came first. Always null "
            "for a public key's check."
        ),
    ]
    purchase: Annotated[
        OwningPurchase | None, Field(description="Always null for a public key's check.")
    ]
    udid: NotRequired[Annotated[Text, _text("The device asked about (a check by `udid` only).")]]
    check: NotRequired[
        Annotated[
            Literal["success", "fail"],
            Field(description="YouRepo's answer (a check by `udid` only): `success` when owned."),
        ]
    ]


def check_body(check: services.Check, zone: ZoneInfo, *, public: bool = False) -> dict[str, Any]:
    """An ownership check; the same in both shapes (a date only).

    A device on the package's whitelist owns it with no purchase: ``purchase`` is then null
    (unless it bought it too) and ``since`` the earlier of the two dates. A check by device
    also carries YouRepo's ``udid`` and ``check``. ``public``: a public key's answer, which
    says owned or not and nothing more (``since`` and ``purchase`` null)."""
    licence = check.licence
    since, bought = licence.since, licence.purchase
    if public:
        since = bought = None
    body: dict[str, Any] = {
        "package": check.package,
        "owned": licence.owned,
        "since": None if since is None else since.astimezone(zone).isoformat(),
        "purchase": None
        if bought is None
        else {"txn_id": bought.txn_id, "allowed_for": bought.allowed_for},
    }
    if check.udid is not None:
        body["udid"] = check.udid
        body["check"] = "success" if licence.owned else "fail"
    return body


# --- package/whitelist ---------------------------------------------------------------------------


class WhitelistEntry(TypedDict):
    """A device its seller allows the package, whatever it bought."""

    udid: Annotated[Text, _text("The device's UDID.", r"^[A-Za-z0-9-]{1,64}$")]
    description: Annotated[Text, _text("The seller's note on it (may be empty).")]


class WhitelistPage(TypedDict):
    """A page of a package's whitelist, by udid, as YouRepo pages it."""

    start: Annotated[int, Field(ge=0, description="(page - 1) * limit.")]
    limit: _Limit
    total: Annotated[Count, Field(description="Devices on the whitelist (a number).")]
    page: Annotated[int, Field(ge=1, description="The page, from 1.")]
    whitelist: list[WhitelistEntry]


class WhitelistChange(TypedDict):
    """What a whitelist write did, device by device."""

    package: Annotated[Text, _text("Identifier, reverse-domain style.")]
    added: Count
    updated: Annotated[Count, Field(description="There already, its description replaced.")]
    unchanged: Annotated[
        Count, Field(description="Already as asked: there with that description, or not there.")
    ]
    removed: Count


def whitelist_body(page: licences.WhitelistPage) -> dict[str, Any]:
    return {
        "start": page.start,
        "limit": page.limit,
        "total": page.total,
        "page": page.page,
        "whitelist": [{"udid": e.udid, "description": e.description} for e in page.entries],
    }


def whitelist_change_body(write: licences.WhitelistWrite) -> dict[str, Any]:
    change = write.change
    return {
        "package": write.package,
        "added": change.added,
        "updated": change.updated,
        "unchanged": change.unchanged,
        "removed": change.removed,
    }


# --- source/sales --------------------------------------------------------------------------------


class Sale(TypedDict):
    """One purchase of the caller's source."""

    txn_id: Annotated[Text, _text("Transaction id at the payment platform.")]
    date: IsoDate
    package: Annotated[str | None, Field(description="null for a whole-source purchase.")]
    allowed_for: AllowedFor
    nickname: Annotated[Text, _text("Buyer's nickname.")]
    status: Annotated[Text, _text("Completed, Refunded or Chargeback.")]
    gross: Amount
    commission: Amount
    fee: Annotated[Amount, Field(description="The payment platform's own fee (0.00: none).")]
    net: Annotated[Amount, Field(description="gross - commission - fee, exactly.")]
    currency: Currency
    payment_platform: Annotated[str, _text("Payment platform, lower case.", r"^[a-z0-9_.-]+$")]


class SalesTotal(TypedDict):
    """The totals of one currency over the whole range and filters."""

    currency: Currency
    sales: Annotated[Count, Field(description="Completed purchases.")]
    gross: Amount
    commission: Amount
    fee: Amount
    net: Annotated[Amount, Field(description="gross - commission - fee.")]
    refunds: Annotated[Count, Field(description="Refunded and charged-back purchases.")]
    refunded: Annotated[Amount, Field(description="Their gross sum.")]


class Sales(TypedDict):
    """A page of the sales ledger."""

    start: Annotated[str, _text("First day, in the application's time zone.", DAY)]
    end: Annotated[str, _text("Last day, inclusive.", DAY)]
    sales: list[Sale]
    totals: list[SalesTotal]
    limit: _Limit
    has_more: _HasMore
    cursor: _Cursor


def _total(total: domain.SalesTotal) -> dict[str, Any]:
    return {
        "currency": total.currency,
        "sales": total.sales,
        "gross": _amount(total.gross),
        "commission": _amount(total.commission),
        "fee": _amount(total.fee),
        "net": _amount(total.gross - total.commission - total.fee),
        "refunds": total.refunds,
        "refunded": _amount(total.refunded),
    }


def sale_body(sale: domain.Sale, zone: ZoneInfo) -> dict[str, Any]:
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
        "fee": _amount(p.fee),
        "net": _amount(p.net),
        "currency": p.currency,
        "payment_platform": p.payment_platform,
    }


def sales_body(page: services.SalesPage, zone: ZoneInfo) -> dict[str, Any]:
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


# --- package/downloads ------------------------------------------------------------------------

B_DAY = r"^\d{2}-\d{2}-\d{4}$"
_UTC_DAY = Field(
    description="The day, YYYY-MM-DD (UTC).", pattern=DAY, json_schema_extra={"format": "date"}
)
"""A real RFC 3339 full-date: generated clients parse it, which tells shape A from shape B."""


class DownloadsDayA(TypedDict):
    """One UTC day of a package's downloads, shape A."""

    day: Annotated[str, _UTC_DAY]
    downloads: Annotated[Count, Field(description="Whole files downloaded that day.")]


class DownloadsDayB(TypedDict):
    """One UTC day of a package's downloads, shape B."""

    day: Annotated[str, _text("The day, DD-MM-YYYY (UTC).", B_DAY)]
    downloads: Annotated[Count, Field(description="Whole files downloaded that day.")]


class _Downloads(TypedDict):
    package: Annotated[Text, _text("The package's identifier.")]
    total: Annotated[Count, Field(description="Whole files downloaded over the range.")]


class DownloadsA(_Downloads):
    """A package's daily downloads over a range (the shape of npm's range API), shape A."""

    start: Annotated[str, _UTC_DAY]
    end: Annotated[str, _UTC_DAY]
    downloads: list[DownloadsDayA]


class DownloadsB(_Downloads):
    """A package's daily downloads over a range, shape B."""

    start: Annotated[str, _text("First day (UTC).", B_DAY)]
    end: Annotated[str, _text("Last day, inclusive.", B_DAY)]
    downloads: list[DownloadsDayB]


def _day(day: date, shape: Shape) -> str:
    return day.isoformat() if shape == "A" else day.strftime("%d-%m-%Y")


def downloads_body(report: services.DownloadsReport, shape: Shape) -> dict[str, Any]:
    """A package's downloads per UTC day, oldest first, and their total (npm's range shape)."""
    days = report.days
    return {
        "package": report.package,
        "start": _day(days[0].day, shape),
        "end": _day(days[-1].day, shape),
        "total": report.total,
        "downloads": [{"day": _day(d.day, shape), "downloads": d.requests} for d in days],
    }


# --- webhook/* ------------------------------------------------------------------------------------

_EndpointId = Annotated[Text, _text("The endpoint's id.", r"^we_[A-Za-z0-9_-]+$")]


class WebhookEndpoint(TypedDict):
    """One webhook endpoint of the caller's application (never its secret)."""

    id: _EndpointId
    url: Annotated[Text, _text("Where events are posted.")]
    events: Annotated[list[str], Field(description="The event types sent to it.")]
    enabled: Annotated[bool, Field(description="Whether events are sent to it.")]
    disabled_reason: Annotated[
        str | None, Field(description="Why it was disabled (failing for the retry window).")
    ]
    created_at: IsoDate


class WebhookSecret(TypedDict):
    """An endpoint just created or its secret just rolled: the signing secret, shown once."""

    endpoint: WebhookEndpoint
    secret: Annotated[Text, _text("The signing secret; shown once, only here.", r"^whsec_")]


class WebhookEndpoints(TypedDict):
    """The caller's application's endpoints, oldest first."""

    endpoints: list[WebhookEndpoint]


class WebhookDeleted(TypedDict):
    id: _EndpointId
    deleted: Annotated[bool, Field(description="Always true.")]


class WebhookAttempt(TypedDict):
    """One delivery attempt of an event to an endpoint."""

    event_id: Annotated[Text, _text("The event's id.", r"^evt_")]
    attempted_at: IsoDate
    ok: Annotated[bool, Field(description="Whether the receiver answered 2xx in time.")]
    status: Annotated[int | None, Field(description="The receiver's HTTP status; null if none.")]
    duration_ms: Annotated[int, Field(ge=0, description="Milliseconds the attempt took.")]
    response: Annotated[Text, _text("The first bytes of the answer, or why there was none.")]


class WebhookDeliveries(TypedDict):
    """A page of an endpoint's delivery log, newest attempt first."""

    attempts: list[WebhookAttempt]
    limit: _Limit
    has_more: _HasMore
    cursor: _Cursor


class ErrorMessage(TypedDict):
    """What every error carries beside its code."""

    response: Annotated[Text, _text("What went wrong, naming the parameter at fault.")]


# --- source/balance, source/payouts, purchase/refund ----------------------------------------------

SIGNED_DECIMAL = r"^-?\d+\.\d{2,}$"
Signed = Annotated[
    str, _text("A decimal amount, at least two decimals; below 0 when owed.", SIGNED_DECIMAL)
]
_Test = Annotated[bool, Field(description="Test money (a test-mode sale's): never paid.")]


class NextPayout(TypedDict):
    """The payout the schedule would make next."""

    date: Annotated[str, _text("The payout date (UTC).", DAY)]
    amount: Annotated[Amount, Field(description="Available now and released by then.")]
    minimum: Annotated[Amount, Field(description="The least payout (the source's own, if higher).")]
    blocked: Annotated[
        str | None, Field(description="Why no payout would be made then; null: one would.")
    ]


class CurrencyBalance(TypedDict):
    """The source's balances in one currency."""

    currency: Currency
    test: _Test
    pending: Annotated[Signed, Field(description="Held: sales not released yet.")]
    available: Annotated[Signed, Field(description="Released, not paid out yet.")]
    next_payout: NextPayout


class Balances(TypedDict):
    """The caller's source's balances, live money first, by currency."""

    balances: list[CurrencyBalance]


class LedgerEntry(TypedDict):
    """One entry of the source's ledger."""

    kind: Annotated[
        Text,
        _text("sale, fee, release, refund, chargeback, payout, payout_failed or adjustment."),
    ]
    reference: Annotated[Text, _text("What it is for: a txn_id, a refund's or payout's id.")]
    txn_id: Annotated[str | None, Field(description="The purchase it is of, if any.")]
    pending: Signed
    available: Signed
    reason: Annotated[str | None, Field(description="Why (a failed payout, an adjustment).")]
    created_at: IsoDate


class Payout(TypedDict):
    """One payout, with the ledger entries it paid."""

    id: Annotated[Text, _text("The payout's id.", r"^po_")]
    currency: Currency
    test: _Test
    period: Annotated[str, _text("The payout date it was made for (UTC).", DAY)]
    amount: Amount
    status: Annotated[Text, _text("pending, in_transit, paid or failed.")]
    failure_code: Annotated[str | None, Field(description="The platform's code, when failed.")]
    failure_message: Annotated[str | None, Field(description="Why it failed, when it did.")]
    created_at: IsoDate
    settled_at: Annotated[
        str | None, Field(description="When it was paid or failed; null while under way.")
    ]
    entries: Annotated[
        list[LedgerEntry], Field(description="The entries it paid, its own debit last.")
    ]


class Payouts(TypedDict):
    """A page of the caller's source's payouts, newest first."""

    payouts: list[Payout]
    limit: _Limit
    has_more: _HasMore
    cursor: _Cursor


class Refund(TypedDict):
    """A refund of a store purchase."""

    id: Annotated[Text, _text("The refund's id.", r"^rf_")]
    txn_id: Annotated[Text, _text("The purchase refunded.")]
    amount: Amount
    currency: Currency
    status: Annotated[Text, _text("succeeded (or pending while the platform is asked).")]
    test: _Test
    platform_refund_id: Annotated[str | None, Field(description="The platform's own id.")]
