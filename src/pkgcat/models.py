"""The API's response bodies as typed dictionaries: what :mod:`pkgcat.shapes` builds.

They cost nothing at run time (a ``TypedDict`` is a plain ``dict``, serialised by
orjson); the OpenAPI document's schemas are generated from them with pydantic
(:mod:`pkgcat.http.openapi`), so the types the server writes and the schemas a
client reads are one text. Keys that are not Python names (``pre-depends``)
use the functional syntax. Every object is closed (no other keys).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from pydantic.config import JsonDict

# pydantic (which requires typing_extensions) reads only its TypedDict before Python 3.12.
from typing_extensions import TypedDict

ISO_DATETIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$"
ISO_MIDNIGHT = r"^\d{4}-\d{2}-\d{2}T00:00:00[+-]\d{2}:\d{2}$"
B_USAGE_DATE = r"^\d{2}-\d{2}-\d{4} 00:00:00$"
B_DATE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"
DAY = r"^\d{4}-\d{2}-\d{2}$"
DIGITS = r"^\d+$"
DECIMAL = r"^\d+\.\d{2,}$"
"""Amounts: a point and at least two decimals (shapes.py writes them so)."""
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


# --- package/check -------------------------------------------------------------------------------


class OwningPurchase(TypedDict):
    """The purchase through which a buyer owns a package."""

    txn_id: Annotated[Text, _text("Transaction id at the payment platform.")]
    allowed_for: AllowedFor


class Ownership(TypedDict):
    """Whether a buyer or device owns a package."""

    package: Annotated[Text, _text("Identifier, reverse-domain style.")]
    owned: bool
    since: Annotated[IsoDate | None, Field(description="The earliest owning purchase's date.")]
    purchase: OwningPurchase | None


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
    net: Annotated[Amount, Field(description="gross - commission.")]
    currency: Currency
    payment_platform: Annotated[str, _text("Payment platform, lower case.", r"^[a-z0-9_.-]+$")]


class SalesTotal(TypedDict):
    """The totals of one currency over the whole range and filters."""

    currency: Currency
    sales: Annotated[Count, Field(description="Completed purchases.")]
    gross: Amount
    commission: Amount
    net: Amount
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
