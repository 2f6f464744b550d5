"""The licence checks' fixtures: devices that bought a package, are on its whitelist, both, or
neither, and the services over a real database of the test's own (on both backends)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, TypeVar

import pytest

from pkgcat.config import Settings
from pkgcat.licences import LicenceService
from pkgcat.services import CatalogueService
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.backends import Storage, WriteEngine, open_public_limits, open_storage
from pkgcat.storage.public_limits import PublicLimits
from pkgcat.storage.writes import whitelist
from tests import factories as f
from tests.conftest import Clock

T = TypeVar("T")

BOUGHT = "00008030-001A2D3E0C42802E"
"""Registered by ada, who bought com.alpha.paid (row 1) with it, as an iPhone12,1."""
SPARE = "00008030-0011223344556677"
"""Ada's other device, registered with no model: every purchase of hers counts on it too."""
WHITELISTED = "fafefdfdfafefdfdfafefdfdfafefdfdfafefdfd"
"""On com.alpha.paid's whitelist (YouRepo's example form: 40 hex digits), bought nothing."""
BOTH = "00008101-000A1B2C3D4E5F6A"
"""Bought through bob's whole-source purchase and on the whitelist too."""
REFUNDED = "00008020-000F0E0D0C0B0A09"
"""Eve's: her purchase was charged back."""
UNKNOWN = "00008110-0000000000000000"
"""Neither bought nor whitelisted, anywhere."""
ELSEWHERE = "00008120-0000000000000001"
"""Whitelisted for Beta's package only, and registered there by a buyer of Beta's."""
MODEL = "iPhone12,1"
WHITELISTED_AT = f.T0 + timedelta(days=5)


def _purchase(source_id: int, package_id: int | None, days: int, **over: Any) -> dict[str, Any]:
    row = {"account": None, "udid": None, "device_model": None}
    return row | f.purchase(source_id, package_id, f.T0 + timedelta(days=days), **over)


@pytest.fixture
def devices(admin: CatalogueAdmin, catalogue: dict[str, str]) -> None:
    """The devices above, on the shared two-source catalogue (com.alpha.paid is package 1)."""
    admin.load(
        purchases=[
            _purchase(1, 1, 2, txn_id="ADA-1", nickname="ada", account="acc-ada",
                      udid=BOUGHT, device_model=MODEL),
            _purchase(1, None, 1, txn_id="BOB-S", nickname="bob", udid=BOTH),
            _purchase(1, 1, 3, txn_id="EVE-C", nickname="eve", status="Chargeback",
                      udid=REFUNDED),
            _purchase(2, 5, 1, txn_id="MAL-B", nickname="mallory", udid=ELSEWHERE),
        ],
        devices=[
            {"source_id": 1, "nickname": "ada", "account": "acc-ada", "udid": BOUGHT,
             "device_model": MODEL},
            {"source_id": 1, "nickname": "ada", "account": "acc-ada", "udid": SPARE,
             "device_model": None},
            {"source_id": 1, "nickname": "bob", "account": None, "udid": BOTH,
             "device_model": None},
            {"source_id": 1, "nickname": "eve", "account": None, "udid": REFUNDED,
             "device_model": None},
            {"source_id": 2, "nickname": "mallory", "account": None, "udid": ELSEWHERE,
             "device_model": None},
        ],
    )  # fmt: skip
    when = int(WHITELISTED_AT.timestamp())
    whitelist.add(admin.engine, 1, [(WHITELISTED, "beta tester"), (BOTH, "press")], when)
    whitelist.add(admin.engine, 5, [(ELSEWHERE, "Beta's tester")], when)


@dataclass
class Services:
    """One worker's services, as the server builds them."""

    service: CatalogueService
    licences: LicenceService
    storage: Storage
    limits: PublicLimits


class Worker(Protocol):
    def __call__(self, work: Callable[[Services], Awaitable[T]], **settings: Any) -> T: ...


@pytest.fixture
def worker(database_url: str, clock: Clock) -> Worker:
    """``work`` on a fresh worker's services (``settings`` overridden), in an event loop of
    its own; everything is closed afterwards."""

    def runner(work: Callable[[Services], Awaitable[T]], **settings: Any) -> T:
        async def main() -> T:
            chosen = Settings(database_url=database_url, **settings)
            storage = open_storage(chosen)
            limits = open_public_limits(chosen)
            engine = WriteEngine(database_url)
            service = CatalogueService(
                storage.catalogue,
                storage.usage,
                storage.limiter,
                default_shape=chosen.shape,
                default_timezone=chosen.timezone,
                clock=clock,
            )
            licences = LicenceService(
                service, storage.catalogue, limits, engine, clock=lambda: clock().timestamp()
            )
            try:
                return await work(Services(service, licences, storage, limits))
            finally:
                await limits.close()
                await storage.close()
                engine.dispose()

        return asyncio.run(main())

    return runner


@pytest.fixture
def public_key(admin: CatalogueAdmin, catalogue: dict[str, str]) -> str:
    """A public key of Alpha's first application, for every package of Alpha."""
    return admin.create_key("Alpha", "alpha-a", kind="public").secret_key
