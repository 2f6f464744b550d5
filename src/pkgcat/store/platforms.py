"""The payment platform ``PKGCAT_STORE_PLATFORM`` names, built from the settings.

Each platform implements the seam of :mod:`pkgcat.store.payments` and builds itself
from the settings; :data:`PLATFORMS` names them. The seam imports no platform and no
platform imports this table, so none of them import one another in a circle; Stripe's
module (the ``stripe`` extra) is imported only when it is the one chosen.
"""

from __future__ import annotations

from collections.abc import Callable

from pkgcat.config import Settings
from pkgcat.money.platform import MoneyPlatform, TestMoney
from pkgcat.store.payments import Platform, TestPlatform


def _test(_settings: Settings) -> Platform:
    return TestPlatform()


def _stripe(settings: Settings) -> Platform:
    from pkgcat.store.stripe_platform import StripePlatform  # the stripe extra: when chosen

    return StripePlatform.from_settings(settings)


PLATFORMS: dict[str, Callable[[Settings], Platform]] = {"test": _test, "stripe": _stripe}
"""Each value of ``PKGCAT_STORE_PLATFORM`` but ``none``, and how its platform is built."""


def platform_for(settings: Settings) -> Platform | None:
    """The platform ``PKGCAT_STORE_PLATFORM`` names; None for ``none``."""
    build = PLATFORMS.get(settings.store_platform)
    return None if build is None else build(settings)


def _test_money(_settings: Settings) -> MoneyPlatform:
    return TestMoney()


def _stripe_money(settings: Settings) -> MoneyPlatform:
    from pkgcat.store.stripe_connect import StripeMoney  # the stripe extra: when chosen

    assert settings.stripe_secret_key is not None
    return StripeMoney(settings.stripe_secret_key.get_secret_value(), settings.stripe_api_base)


MONEY_PLATFORMS: dict[str, Callable[[Settings], MoneyPlatform]] = {
    "test": _test_money,
    "stripe": _stripe_money,
}
"""What the ledger asks of each platform (fees, refunds, sellers' accounts, payouts)."""


def money_platform_for(settings: Settings) -> MoneyPlatform | None:
    """The ledger's side of the platform ``PKGCAT_STORE_PLATFORM`` names; None for ``none``."""
    build = MONEY_PLATFORMS.get(settings.store_platform)
    return None if build is None else build(settings)
