"""The payment platform ``PKGCAT_STORE_PLATFORM`` names, built from the settings.

Each platform implements the seam of :mod:`pkgcat.store.payments` and builds itself
from the settings; :data:`PLATFORMS` names them. The seam imports no platform and no
platform imports this table, so none of them import one another in a circle; Stripe's
module (the ``stripe`` extra) is imported only when it is the one chosen.
"""

from __future__ import annotations

from collections.abc import Callable

from pkgcat.config import Settings
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
