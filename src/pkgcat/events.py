"""Every webhook event type, declared once: its name, its facts, its body and what it tells of.

An event type is a dataclass registered with :func:`declare` (slotted; not frozen, since a frozen
dataclass's ``__init__`` costs several times more for a sale's dozen fields, and an import of
purchases makes one event per purchase):

- ``name``: the type as endpoints subscribe to it and bodies carry it (``sale.completed``);
- its fields: the facts the outbox stores, in the transaction of the change
  (:mod:`pkgcat.storage.writes.outbox`), as :meth:`Event.facts` writes them and
  :meth:`Event.read` reads them back;
- :meth:`Event.body`: what ``data`` holds, written by a :class:`Renderer` in the
  endpoint's shape (:mod:`pkgcat.webhooks.bodies`), and whether money is behind it;
- its docstring: when it is emitted, as docs/webhooks.md's table says it (a test holds
  the two together).

The types of one family share their facts and body: a ``sale.*`` event's facts are the
purchase as recorded, stored as a JSON array in the order of :class:`SaleEvent`'s fields
(an import writes up to one event per purchase, and an array costs half the bytes and time
of an object); a ``package.*`` event's are the version shown, stored as an object. Rows
written since webhooks began are in these forms, and keep reading back.

Everything that lists event types reads :data:`DECLARED`: the endpoints' filters and the
API's parameters (:mod:`pkgcat.http.operations`), the dashboard's sample events, the sample
event of each type (:meth:`Event.sample`). docs/architecture.md ("Adding an event") says
what a new type takes: its declaration here, and the emit call of the change it tells of.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar, NamedTuple, Protocol, Self, TypeVar

from pkgcat.domain import TEST_PLATFORM, Purchase, Sale, Scope


class Body(NamedTuple):
    """An event's ``data``, and whether money may be behind it (``livemode``)."""

    data: Mapping[str, Any]
    live: bool


class Renderer(Protocol):
    """Writes the values events carry in one endpoint's shape and zone."""

    def sale(self, sale: Sale) -> Mapping[str, Any]:
        """The sale as ``source/sales.json`` shows it."""
        ...

    def package(self, package: str, published: Mapping[str, Any]) -> Mapping[str, Any]:
        """The package as ``package/details.json`` shows it now, or ``published`` when it is gone."""
        ...


@dataclass(slots=True)
class Event(ABC):
    """An event of one source. Each declared type sets ``name`` and says when it is emitted."""

    name: ClassVar[str]
    source_id: int

    @abstractmethod
    def facts(self) -> object:
        """What the outbox stores of the event, as JSON."""
        ...

    @classmethod
    @abstractmethod
    def read(cls, source_id: int, stored: Any) -> Self:
        """The event again, from its stored facts (:meth:`facts`)."""
        ...

    @abstractmethod
    def body(self, render: Renderer) -> Body:
        """The body's ``data`` in the renderer's shape, and whether money is behind it."""
        ...

    @classmethod
    @abstractmethod
    def sample(cls, source_id: int, now: int) -> Self:
        """A made-up event of this type, for a test send: it tells of nothing recorded."""
        ...


@dataclass(slots=True)
class SaleEvent(Event):
    """A purchase, as recorded when the event was written; its body is the sale as
    ``source/sales.json`` shows it, the same in both shapes."""

    on_status: ClassVar[str]
    """The purchase status that emits this type."""

    txn_id: str
    package: str | None
    allowed_for: Scope
    nickname: str
    status: str
    total: str
    commission: str
    currency: str
    purchased_at: int
    profile_url: str
    payment_platform: str
    fee: str | None = None
    """The platform's fee as the purchase records it; None: none (and in events written
    before fees were kept, whose facts end before it)."""

    def facts(self) -> tuple[Any, ...]:
        # Written out: the stored order, and an import calls it once per purchase. No fee,
        # none stored: the facts are as they were before fees were kept.
        facts = (
            self.txn_id, self.package, self.allowed_for, self.nickname, self.status, self.total,
            self.commission, self.currency, self.purchased_at, self.profile_url,
            self.payment_platform,
        )  # fmt: skip
        return facts if self.fee is None else (*facts, self.fee)

    @classmethod
    def read(cls, source_id: int, stored: Any) -> Self:
        return cls(source_id, *stored)

    def sale(self) -> Sale:
        purchase = Purchase(
            nickname=self.nickname,
            status=self.status,
            total=Decimal(self.total),
            commission=Decimal(self.commission),
            currency=self.currency,
            purchased_at=datetime.fromtimestamp(self.purchased_at, UTC),
            txn_id=self.txn_id,
            profile_url=self.profile_url,
            allowed_for=self.allowed_for,
            payment_platform=self.payment_platform,
            fee=Decimal(self.fee) if self.fee else Decimal(0),
        )
        return Sale(purchase, self.package)

    def body(self, render: Renderer) -> Body:
        return Body(render.sale(self.sale()), live=self.payment_platform != TEST_PLATFORM)

    @classmethod
    def sample(cls, source_id: int, now: int) -> Self:
        return cls(
            source_id, "TEST-0001", None, "source", "test-buyer", cls.on_status, "1.00", "0.15",
            "USD", now, "", TEST_PLATFORM,
        )  # fmt: skip


@dataclass(slots=True)
class PackageEvent(Event):
    """A version of a package, as shown when the event was written; its body is the package as
    ``package/details.json`` shows it in the application's shape when the event is sent (the
    latest details), or this version alone when the package is gone since."""

    package: str
    version: str
    architecture: str

    def facts(self) -> dict[str, str]:
        return {"package": self.package, "version": self.version, "architecture": self.architecture}

    @classmethod
    def read(cls, source_id: int, stored: Any) -> Self:
        return cls(source_id, stored["package"], stored["version"], stored["architecture"])

    def body(self, render: Renderer) -> Body:
        return Body(render.package(self.package, self.facts()), live=True)

    @classmethod
    def sample(cls, source_id: int, now: int) -> Self:  # noqa: ARG003 - the same for every type
        return cls(source_id, "com.example.test-event", "1.0", "all")


@dataclass(slots=True)
class ShopEvent(Event):
    """A change made to a package's shop by its seller or the operator; its body is the
    package, who made the change (``seller:APPLICATION`` or ``operator:COMMAND``) and what
    was set, the same in both shapes."""

    example: ClassVar[dict[str, Any]]
    """What a test send of this type says was set."""

    package: str
    by: str
    change: dict[str, Any]

    def facts(self) -> dict[str, Any]:
        return {"package": self.package, "by": self.by, "change": self.change}

    @classmethod
    def read(cls, source_id: int, stored: Any) -> Self:
        return cls(source_id, stored["package"], stored["by"], dict(stored["change"]))

    def body(self, render: Renderer) -> Body:  # noqa: ARG002 - the same in both shapes
        return Body({"package": self.package, "by": self.by, **self.change}, live=True)

    @classmethod
    def sample(cls, source_id: int, now: int) -> Self:  # noqa: ARG003 - the same for every type
        return cls(source_id, "com.example.test-event", "seller:example", dict(cls.example))


@dataclass(slots=True)
class MoneyEvent(Event):
    """A move of the source's money in its ledger (:mod:`pkgcat.storage.ledger`); its body is
    what moved, the same in both shapes, amounts as decimal text in the currency's decimals;
    ``livemode`` false for test money."""

    example: ClassVar[dict[str, Any]]
    """What a test send of this type says moved."""

    details: dict[str, Any]

    def facts(self) -> dict[str, Any]:
        return self.details

    @classmethod
    def read(cls, source_id: int, stored: Any) -> Self:
        return cls(source_id, dict(stored))

    def body(self, render: Renderer) -> Body:  # noqa: ARG002 - the same in both shapes
        return Body(dict(self.details), live=not self.details.get("test", False))

    @classmethod
    def sample(cls, source_id: int, now: int) -> Self:  # noqa: ARG003 - the same for every type
        return cls(source_id, dict(cls.example))


_PAYOUT_EXAMPLE = {
    "id": "po_0123456789abcdef01234567", "currency": "USD", "test": True, "period": "2024-04-01",
    "amount": "20.00", "status": "paid", "failure_code": None, "failure_message": None,
}  # fmt: skip


E = TypeVar("E", bound=type[Event])
DECLARED: list[type[Event]] = []
"""Every event type, in the order endpoints and documents list them."""


def declare(kind: E) -> E:
    """Add an event type to :data:`DECLARED` (a name taken twice is a mistake, found at import)."""
    assert kind.name not in {k.name for k in DECLARED}, f"{kind.name} is declared twice"
    DECLARED.append(kind)
    return kind


# The event types -------------------------------------------------------------------------------


@declare
@dataclass(slots=True)
class SaleCompleted(SaleEvent):
    """a purchase is recorded with status `Completed`"""

    name = "sale.completed"
    on_status = "Completed"


@declare
@dataclass(slots=True)
class SaleRefunded(SaleEvent):
    """a purchase is recorded as `Refunded`, or a recorded one changes to it"""

    name = "sale.refunded"
    on_status = "Refunded"


@declare
@dataclass(slots=True)
class SaleChargeback(SaleEvent):
    """a purchase is recorded as `Chargeback`, or a recorded one changes to it"""

    name = "sale.chargeback"
    on_status = "Chargeback"


@declare
@dataclass(slots=True)
class PackagePublished(PackageEvent):
    """a package of the source appears: first published (`pkgcat publish`) or first imported
    (`pkgcat import-repo`)"""

    name = "package.published"


@declare
@dataclass(slots=True)
class PackageUpdated(PackageEvent):
    """a package's shown record changes: a new version published, or an import that changed it"""

    name = "package.updated"


@declare
@dataclass(slots=True)
class PackagePageChanged(ShopEvent):
    """a package's page is changed: its name, descriptions, section, compatibility, links,
    icon, header or screenshots"""

    name = "package.page_changed"
    example: ClassVar[dict[str, Any]] = {"fields": {"name": "Example"}}


@declare
@dataclass(slots=True)
class PackagePriceChanged(ShopEvent):
    """a package's price or currency is set, by its seller or the operator's `import-prices`"""

    name = "package.price_changed"
    example: ClassVar[dict[str, Any]] = {"price": "1.99", "currency": "USD"}


@declare
@dataclass(slots=True)
class PackageAvailabilityChanged(ShopEvent):
    """a package is set online or offline by its seller"""

    name = "package.availability_changed"
    example: ClassVar[dict[str, Any]] = {"online": False}


@declare
@dataclass(slots=True)
class PackageVersionReleased(ShopEvent):
    """a version becomes the one served: released, or rolled back to"""

    name = "package.version_released"
    example: ClassVar[dict[str, Any]] = {"version": "1.0", "previous": "1.1"}


@declare
@dataclass(slots=True)
class PackageVersionWithdrawn(ShopEvent):
    """a version is withdrawn from the indexes"""

    name = "package.version_withdrawn"
    example: ClassVar[dict[str, Any]] = {"version": "1.1", "served": "1.0"}


@declare
@dataclass(slots=True)
class PackageChangelogChanged(ShopEvent):
    """a version's changelog is set"""

    name = "package.changelog_changed"
    example: ClassVar[dict[str, Any]] = {"version": "1.0", "changelog": "First release."}


@declare
@dataclass(slots=True)
class PackageSaleChanged(ShopEvent):
    """a package's sale price is set for a window of time, or removed"""

    name = "package.sale_changed"
    example: ClassVar[dict[str, Any]] = {
        "sale_price": "0.99", "starts_at": 1_711_886_400, "ends_at": 1_712_491_200,
    }  # fmt: skip


@declare
@dataclass(slots=True)
class GiftCodesCreated(ShopEvent):
    """gift codes are made for a package"""

    name = "gift.codes_created"
    example: ClassVar[dict[str, Any]] = {"count": 10, "expires_at": 1_714_478_400}


@declare
@dataclass(slots=True)
class GiftGiven(ShopEvent):
    """a copy of a package is given to an email address: owned at once, or a code mailed"""

    name = "gift.given"
    example: ClassVar[dict[str, Any]] = {"email": "buyer@example.com", "delivered": "mailed"}


@declare
@dataclass(slots=True)
class DiscountCreated(ShopEvent):
    """a discount code is made for a package"""

    name = "discount.created"
    example: ClassVar[dict[str, Any]] = {
        "code": "SPRING20", "kind": "percent", "value": "20", "max_uses": 100,
        "ends_at": 1_714_478_400,
    }  # fmt: skip


@declare
@dataclass(slots=True)
class DiscountEnded(ShopEvent):
    """a discount code is ended by its seller before its end date"""

    name = "discount.ended"
    example: ClassVar[dict[str, Any]] = {"code": "SPRING20", "uses": 12}


@declare
@dataclass(slots=True)
class PayoutPaid(MoneyEvent):
    """a payout reaches the seller's bank (Stripe's `payout.paid`; in test mode, as it is sent)"""

    name = "payout.paid"
    example: ClassVar[dict[str, Any]] = _PAYOUT_EXAMPLE


@declare
@dataclass(slots=True)
class PayoutFailed(MoneyEvent):
    """a payout fails (refused by the platform, returned by the bank, its transfer reversed):
    its amount is back in the available balance, and the body says why"""

    name = "payout.failed"
    example: ClassVar[dict[str, Any]] = _PAYOUT_EXAMPLE | {
        "status": "failed", "failure_code": "account_closed",
        "failure_message": "The bank account has been closed.",
    }  # fmt: skip


@declare
@dataclass(slots=True)
class BalanceAvailable(MoneyEvent):
    """a store sale's hold ends: what it left pending becomes available to be paid out"""

    name = "balance.available"
    example: ClassVar[dict[str, Any]] = {
        "currency": "USD", "test": True, "amount": "7.09", "txn_id": "test_txn_1",
    }  # fmt: skip


# Reading the declarations ------------------------------------------------------------------------

NAMES: tuple[str, ...] = tuple(kind.name for kind in DECLARED)
"""Every event type's name, as endpoints subscribe to it."""
BY_NAME: dict[str, type[Event]] = {kind.name: kind for kind in DECLARED}
SALE_BY_STATUS: dict[str, type[SaleEvent]] = {
    kind.on_status: kind for kind in DECLARED if issubclass(kind, SaleEvent)
}
"""The sale event a purchase's recorded status emits."""


def described(kind: type[Event]) -> str:
    """When events of this type are emitted, in one line (its docstring)."""
    return " ".join((kind.__doc__ or "").split())


def read(name: str, source_id: int, stored: Any) -> Event:
    """A stored event, as its type declares it; :class:`KeyError` for a type not declared."""
    return BY_NAME[name].read(source_id, stored)


def package_event(
    new: bool, source_id: int, package: str, version: str, architecture: str
) -> PackageEvent:
    """``package.published`` for a package that appears (``new``), else ``package.updated``."""
    kind = PackagePublished if new else PackageUpdated
    return kind(source_id, package, version, architecture)
