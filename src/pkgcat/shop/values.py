"""What the shop's use cases take and answer: plain records, no storage and no HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

PAGE_TEXT = ("name", "description", "long_description", "section")
PAGE_LINKS = ("support_url", "source_url")
PAGE_IOS = ("min_ios", "max_ios")
PAGE_FIELDS = (*PAGE_TEXT, "compatible", *PAGE_IOS, *PAGE_LINKS)
"""The page's fields a seller sets as values (the images are uploaded apart)."""
IMAGE_KINDS = ("icon", "header", "screenshot")


def seller(application: str) -> str:
    """The history's actor for a change made with a key of ``application``."""
    return f"seller:{application}"


def operator(command: str) -> str:
    """The history's actor for a change made by an operator's command (``import-prices``)."""
    return f"operator:{command}"


@dataclass(frozen=True, slots=True)
class Page:
    """What a seller set of a package's page (None: the .deb's value stands)."""

    package: str
    name: str | None = None
    description: str | None = None
    long_description: str | None = None
    section: str | None = None
    compatible: tuple[str, ...] | None = None
    min_ios: str | None = None
    max_ios: str | None = None
    support_url: str | None = None
    source_url: str | None = None
    icon: str | None = None
    """The uploaded icon's blob name (``DIGEST.png``), served at ``/repo/media/NAME``."""
    header: str | None = None
    screenshots: tuple[str, ...] = ()
    served_version: str | None = None
    """The version served now when the seller rolled back; None: the newest not withdrawn."""


@dataclass(frozen=True, slots=True)
class Image:
    """An uploaded image as stored: its blob name, media type and pixels."""

    name: str
    media_type: str
    width: int
    height: int
    size: int


@dataclass(frozen=True, slots=True)
class Price:
    package: str
    price: str | None
    currency: str
    online: bool


@dataclass(frozen=True, slots=True)
class Sale:
    package: str
    price: str
    currency: str
    starts_at: int
    ends_at: int


@dataclass(frozen=True, slots=True)
class VersionFile:
    architecture: str
    sha256: str
    size: int


@dataclass(frozen=True, slots=True)
class Version:
    """A published version: its files, changelog, and whether it is served or withdrawn."""

    version: str
    files: tuple[VersionFile, ...]
    changelog: str
    withdrawn: bool
    served: bool
    """The version served now (the one details and depictions show)."""
    listed: bool
    """In the Packages index: not withdrawn, and not newer than the version served."""
    published_at: int


@dataclass(frozen=True, slots=True)
class Versions:
    package: str
    served: str
    versions: tuple[Version, ...]
    """Newest first, by dpkg's order."""


GiftState = Literal["open", "redeemed", "expired"]


@dataclass(frozen=True, slots=True)
class GiftCode:
    id: str
    hint: str
    """The code's last four characters: enough to tell codes apart, not to use one."""
    package: str
    state: GiftState
    created_at: int
    created_by: str
    expires_at: int
    recipient: str | None
    redeemed_at: int | None
    redeemed_by: str | None
    """The buyer's email address, as sales show it."""
    txn_id: str | None


@dataclass(frozen=True, slots=True)
class NewGiftCodes:
    """Codes just made: the codes themselves are shown this once, never stored."""

    package: str
    codes: tuple[str, ...]
    gifts: tuple[GiftCode, ...]


@dataclass(frozen=True, slots=True)
class Gift:
    """A copy given to an email address: owned at once, or a code mailed."""

    package: str
    email: str
    delivered: Literal["owned", "mailed", "not_mailed", "owned_already"]
    """``not_mailed``: the mail server refused; the code stays listed, open, for the address."""
    gift_id: str | None
    txn_id: str | None


DiscountState = Literal["active", "used_up", "ended"]


@dataclass(frozen=True, slots=True)
class Discount:
    id: str
    code: str
    package: str
    kind: Literal["percent", "amount"]
    value: str
    max_uses: int
    uses: int
    ends_at: int
    state: DiscountState
    created_at: int
    created_by: str


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    id: int
    at: int
    actor: str
    change: str
    facts: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Quote:
    """What a buyer pays for a package now: the list price, the sale's, the discount's."""

    list_price: str
    price: str
    currency: str
    sale: Sale | None
    discount: Discount | None
