"""Money's fixtures: an engine on the test's database, store sales made as the store makes
them, the money services with a clock the test moves."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, text

from pkgcat.config import Settings
from pkgcat.money.platform import TestMoney
from pkgcat.money.schedule import Schedule
from pkgcat.money.scheduler import Scheduler
from pkgcat.money.service import Money
from pkgcat.storage import store
from pkgcat.storage.engine import engine_for

NOW = 1_711_886_400  # 2024-03-31 12:00 UTC, the catalogue fixture's clock
DAY = 86400
_serial = itertools.count(1)


class Time:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return float(self.now)


@pytest.fixture
def engine(database_url: str, catalogue: dict[str, str]) -> Iterator[Engine]:
    made = engine_for(database_url)
    yield made
    made.dispose()


@pytest.fixture
def time_() -> Time:
    return Time()


def settings(**over: Any) -> Settings:
    values: dict[str, Any] = {
        "store_platform": "test", "payout_hold_days": 0, "payout_days": "*",
        "payout_minimum": "1 USD",
    }  # fmt: skip
    return Settings(**(values | over))


def money_of(engine: Engine, clock: Time, **over: Any) -> Money:
    return Money(settings(**over), engine, TestMoney(), clock=clock)


def scheduler_of(engine: Engine, clock: Time, **over: Any) -> Scheduler:
    return Scheduler(Schedule.of(settings(**over)), engine, {True: TestMoney(), False: None},
                     clock=clock)  # fmt: skip


Sell = Callable[..., str]


@pytest.fixture
def sell(engine: Engine, time_: Time) -> Sell:
    """A completed store sale, as the store records it; its txn_id."""
    store.save_code(engine, "buyer@example.test", "c" * 64, NOW + 10 * 365 * DAY)
    buyer = store.sign_in(
        engine, "buyer@example.test", "c" * 64, "t" * 64, "s" * 64, "udid1", "iPhone", NOW
    )
    assert buyer is not None

    def make(
        total: str = "9.00",
        currency: str = "USD",
        *,
        source_id: int = 1,
        package_id: int | None = 1,
        platform: str = "test",
        terms: store.SaleTerms | None = None,
    ) -> str:
        serial = next(_serial)
        payment, txn = f"pay_{serial}", f"{platform}_txn_{serial}"
        store.start_payment(engine, payment, store.StorePurchase(
            source_id=source_id, package_id=package_id, buyer_id=buyer,
            email="buyer@example.test", udid="udid1", model="iPhone", total=total,
            currency=currency, platform=platform, txn_id=payment, purchased_at=time_.now,
        ))  # fmt: skip
        with engine.begin() as db:
            assert store.complete_payment(
                db, payment, txn, time_.now, terms=terms or store.SaleTerms(hold_seconds=0)
            )
        return txn

    return make


def purchase(engine: Engine, txn_id: str) -> dict[str, Any]:
    with engine.connect() as db:
        row = db.execute(
            text("SELECT status, total, commission, fee FROM purchases WHERE txn_id = :t"),
            {"t": txn_id},
        ).one()
    return dict(row._mapping)
