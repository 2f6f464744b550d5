"""The catalogue's records, as storage reads them and the use cases see them: no HTTP, no SQL,
no shape.

What one use case answers (a page, a report) is declared beside it, in :mod:`pkgcat.services`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Literal, NamedTuple

Shape = Literal["A", "B"]
"""The two response shapes of the API (spec section 9); :mod:`pkgcat.models` renders them."""

Scope = Literal["package", "source"]
"""What a purchase pays for: one package, or every paid package of its source."""

SHAPES: tuple[Shape, ...] = ("A", "B")

TEST_PLATFORM = "test"
"""The payment platform of a purchase with no money behind it: the store's test mode
(:mod:`pkgcat.store.payments`), or a purchase imported as such."""

KeyScope = Literal["read", "publish", "webhooks", "whitelist", "money"]
"""What a secret key may do. Every key reads; each write capability is one more name."""

KEY_SCOPES: tuple[KeyScope, ...] = ("read", "publish", "webhooks", "whitelist", "money")
"""Every scope, in the order they are stored and listed (``read`` first, held by every key)."""

KeyKind = Literal["secret", "public"]
"""What a key is for: ``secret``, a seller's server (every operation its scopes allow);
``public``, an application on devices, a tweak: the licence check of one device, nothing
that reads buyers or money (see :mod:`pkgcat.keys` for their forms)."""

KEY_KINDS: tuple[KeyKind, ...] = ("secret", "public")

UDID = re.compile(r"[0-9A-Za-z-]{1,64}")
"""A device id as devices report it and the catalogue stores it: letters, digits and ``-``
(40 hex digits on older devices, ``00008030-001A2D3E0C42802E`` on newer ones), at most 64."""


def scopes_text(scopes: tuple[str, ...] | frozenset[str]) -> str:
    """Scopes as stored and shown: ``read`` and the others given, space-separated, in order.

    :class:`ValueError` names an unknown one."""
    unknown = sorted(set(scopes) - set(KEY_SCOPES))
    if unknown:
        raise ValueError(
            f"unknown scope {', '.join(map(repr, unknown))}; scopes are {', '.join(KEY_SCOPES)}"
        )
    return " ".join(s for s in KEY_SCOPES if s == "read" or s in scopes)


@dataclass(frozen=True, slots=True)
class Source:
    """A repository owner: publishes packages, owns applications."""

    id: int
    name: str
    origin: str
    url: str


@dataclass(frozen=True, slots=True)
class Application:
    """A program of a source's developer that calls the API with one of its keys.

    ``shape`` and ``timezone`` are ``None`` when the application follows the
    deployment's defaults (``PKGCAT_SHAPE``, ``PKGCAT_TIMEZONE``).
    """

    id: int
    source_id: int
    name: str
    shape: Shape | None
    timezone: str | None


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A stored secret key: only its hash, never the key itself."""

    id: int
    key_hash: str
    application: Application
    last_used_at: int | None
    """Unix seconds of the last request that presented the key (minute resolution)."""
    scopes: frozenset[str] = frozenset(("read",))
    """What it may do (:data:`KEY_SCOPES`): a write operation needs its scope here."""
    kind: KeyKind = "secret"
    package: str | None = None
    """The one package of its source the key answers for (a public key made with
    ``--package``: a DRM API's package token), or ``None``: every package of its source."""


@dataclass(frozen=True, slots=True)
class Package:
    """One package's current record (spec 2.2)."""

    id: int
    package: str
    source: Source
    name: str
    version: str
    architecture: str
    author: str
    section: str
    description: str
    long_description: str
    pre_depends: str
    depends: str
    conflicts: str
    replaces: str
    size: int
    """Bytes of the .deb file."""
    md5sum: str
    sha256: str
    compatible: tuple[str, ...]
    total_download: int
    total_votes: int
    total_value_votes: int
    """Sum of the 1-5 ratings behind ``total_votes``."""
    online: bool
    price: Decimal | None
    """``None`` while a paid package's price is not known yet (see ``commercial``)."""
    currency: str
    icon: str
    screenshots: tuple[str, ...]
    url: str
    released_at: datetime
    """When this version was published (aware, UTC)."""
    commercial: bool
    """Tagged ``cydia::commercial`` by its repository: paid even before its price is known."""

    @property
    def is_free(self) -> bool:
        """A known price of zero; a paid package whose price is not known yet is not free."""
        return self.price is not None and self.price == 0


@dataclass(frozen=True, slots=True)
class Purchase:
    """One buyer of a paid package (spec 2.5)."""

    nickname: str
    status: str
    total: Decimal
    commission: Decimal
    currency: str
    purchased_at: datetime
    txn_id: str
    profile_url: str
    allowed_for: Scope
    payment_platform: str
    fee: Decimal = Decimal(0)
    """The payment platform's own fee, as it reported it (0: none reported, or imported)."""

    @property
    def net(self) -> Decimal:
        """What the seller is credited: gross less commission and fee, exactly."""
        return self.total - self.commission - self.fee


class UsageDay(NamedTuple):
    """Requests an application made on one calendar day of its time zone.

    A named tuple rather than a frozen dataclass: a usage answer builds up to
    366 of them, and a tuple is built about three times faster.
    """

    day: date
    requests: int


class Caller(NamedTuple):
    """An authenticated request's application with its effective shape and zone.

    A named tuple, as :class:`RateDecision`: every request builds one, and a
    tuple is built several times faster than a frozen dataclass.
    """

    application: Application
    key: KeyRecord
    shape: Shape
    timezone: str
    now: datetime
    """When the request arrived."""
    today: date
    """The calendar day of ``now`` in ``timezone``: the day the request is counted on."""
    generation: int
    """The catalogue generation this caller was authenticated in (see ``Catalogue.generation``)."""
    requests_today: int = 0
    """The application's count on ``today`` once this request's count was committed (this one included)."""


class RateDecision(NamedTuple):
    """What the rate limiter said about one request."""

    allowed: bool
    limit: int
    remaining: int
    reset_after: int
    """Seconds until the window resets (at least 1 when refused)."""
    window: int
    """Seconds a whole window lasts: ``limit`` requests are allowed per ``window`` seconds."""


@dataclass(frozen=True, slots=True)
class Sale:
    """One purchase of the sales ledger, with the identifier of the package it paid for."""

    purchase: Purchase
    package: str | None
    """``None`` for a whole-source purchase."""


class Ownership(NamedTuple):
    """The purchase through which a buyer owns a package: the earliest qualifying one."""

    purchased_at: datetime
    txn_id: str
    allowed_for: Scope


@dataclass(frozen=True, slots=True)
class Claimant:
    """Who a licence is asked for: a buyer (by ``nickname`` or ``account``), a device
    (``udid``, of ``model`` when given), or a buyer on a device (the store: an account and
    the device it signed in on).

    The purchases that count are the buyer's: by nickname, else by account, else those of
    every buyer who registered the device with the package's source. The whitelist counts
    only when a device is named.
    """

    nickname: str | None = None
    account: str | None = None
    udid: str | None = None
    model: str | None = None

    @classmethod
    def device(cls, udid: str, model: str | None = None) -> Claimant:
        return cls(udid=udid, model=model)


@dataclass(frozen=True, slots=True)
class Licence:
    """Whether a claimant holds a package, and every reason it does.

    A package is held through a completed purchase (of it or of its whole source), or by a
    device on the package's whitelist. Gifts will be one more reason here, beside these, read
    by the same one statement (:mod:`pkgcat.storage.licences`).
    """

    purchase: Ownership | None = None
    """The earliest completed purchase that owns it, if any."""
    whitelisted_at: datetime | None = None
    """When the device was put on the package's whitelist, if it is there."""

    @property
    def owned(self) -> bool:
        return self.purchase is not None or self.whitelisted_at is not None

    @property
    def since(self) -> datetime | None:
        """The earliest moment the claimant held the package, whichever way."""
        moments = [
            moment
            for moment in (
                None if self.purchase is None else self.purchase.purchased_at,
                self.whitelisted_at,
            )
            if moment is not None
        ]
        return min(moments, default=None)


NOT_OWNED = Licence()


@dataclass(frozen=True, slots=True)
class WhitelistEntry:
    """A device allowed one package by its seller, whatever it bought (YouRepo's whitelist)."""

    udid: str
    description: str
    added_at: datetime


@dataclass(frozen=True, slots=True)
class SalesTotal:
    """The sums of a sales ledger in one currency, over its whole range and filters."""

    currency: str
    sales: int
    """Completed purchases."""
    gross: Decimal
    commission: Decimal
    refunds: int
    """Refunded and charged-back purchases."""
    refunded: Decimal
    """The gross amount of those."""
    fee: Decimal = Decimal(0)
    """The platforms' fees of the completed purchases."""
