"""The payment-platform seam: the store asks a platform to take a payment.

A platform answers :meth:`Platform.pay` with what the device must do next:
``done`` (the payment completed; the store records the purchase), ``open``
(a page to open, where the payment continues) or ``failed``. One platform is
chosen by ``PKGCAT_STORE_PLATFORM``:

- ``stripe``: a Checkout Session per payment, its outcome learned from Stripe's
  signed webhooks (:mod:`pkgcat.store.stripe_platform`).
- ``test``: every payment completes at once, with no money; its purchases are
  marked ``test`` (platform and transaction id). Meant for the demo and
  development; a live platform and the test one are never enabled together,
  since the setting names one.
- ``none``: nothing can be bought (package info says ``available: false``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal, Protocol

from pkgcat.config import Settings
from pkgcat.money.platform import MoneyPlatform, TestMoney

Next = Literal["done", "open", "failed"]


@dataclass(frozen=True, slots=True)
class Payment:
    """A payment to take: its id, the amount and currency, and what it is for."""

    payment_id: str
    amount: str
    currency: str
    description: str


@dataclass(frozen=True, slots=True)
class Outcome:
    next: Next
    url: str | None = None
    txn_id: str | None = None
    """The platform's reference of a completed payment (the purchase's ``txn_id``)."""


class Platform(Protocol):
    name: str
    """What the purchases rows say in ``payment_platform``."""

    def new_id(self) -> str: ...

    async def pay(self, payment: Payment) -> Outcome: ...


class TestPlatform:
    """Completes every payment at once, with no money moved; everything it makes says test."""

    name = "test"

    def new_id(self) -> str:
        return f"test_{secrets.token_hex(12)}"

    async def pay(self, payment: Payment) -> Outcome:
        return Outcome("done", txn_id=payment.payment_id)


def platform_for(settings: Settings) -> Platform | None:
    """The platform ``PKGCAT_STORE_PLATFORM`` names; None for ``none``."""
    if settings.store_platform == "test":
        return TestPlatform()
    if settings.store_platform == "stripe":
        from pkgcat.store.stripe_platform import StripePlatform  # the stripe extra

        assert settings.stripe_secret_key is not None
        assert settings.store_url is not None
        return StripePlatform(
            settings.stripe_secret_key.get_secret_value(),
            settings.store_url,
            settings.stripe_api_base,
        )
    return None


def money_platform_for(settings: Settings) -> MoneyPlatform | None:
    """What the ledger asks of the platform ``PKGCAT_STORE_PLATFORM`` names (fees, refunds,
    sellers' accounts, payouts); None for ``none``."""
    if settings.store_platform == "test":
        return TestMoney()
    if settings.store_platform == "stripe":
        from pkgcat.store.stripe_connect import StripeMoney  # the stripe extra

        assert settings.stripe_secret_key is not None
        return StripeMoney(settings.stripe_secret_key.get_secret_value(), settings.stripe_api_base)
    return None
