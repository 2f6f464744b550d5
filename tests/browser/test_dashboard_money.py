"""The dashboard's Money view in Chromium: balances and their chart, payouts, their CSV (with
the formula-cell rule of the other CSVs) and a refund asked once more before it is made,
against a served demo catalogue in the store's test mode."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Dialog, expect
from sqlalchemy import Engine, select

from pkgcat.config import Settings
from pkgcat.money.platform import TestMoney
from pkgcat.money.schedule import Schedule
from pkgcat.money.scheduler import Scheduler
from pkgcat.money.service import Money
from pkgcat.storage import money as terms
from pkgcat.storage import schema as t
from pkgcat.storage import store
from pkgcat.storage.engine import engine_for
from tests.browser.conftest import Watched
from tests.browser.test_dashboard import column, downloaded, sign_in
from tests.servers import Served, environment, granted_key, seed, serving

pytestmark = [pytest.mark.server, pytest.mark.browser]

MONEY: dict[str, Any] = {"store_platform": "test", "payout_days": "*", "payout_minimum": "1 USD"}
FORMULA_TXN = "=HYPERLINK(1)"
"""A transaction id a spreadsheet would run: the CSV defuses it."""


@pytest.fixture
def selling(
    tmp_path: Path, watched: Watched
) -> Iterator[tuple[Served, Engine, str]]:  # watched first: skips without Chromium
    """The demo catalogue served in test mode; an engine on it and a key of the money scope."""
    env = environment(f"sqlite:///{tmp_path / 'served.db'}", **MONEY)
    apps = seed(env)
    key = granted_key(env, apps[0], "money")
    engine = engine_for(env["PKGCAT_DATABASE_URL"])
    try:
        with serving(env, tmp_path / "server.log", apps=apps) as server:
            yield server, engine, key
    finally:
        engine.dispose()


def _buyer(engine: Engine) -> int:
    """A store buyer signed in on a device, as the store's sign-in makes one."""
    now = int(time.time())
    store.save_code(engine, "buyer@example.test", "c" * 64, now + 3600)
    buyer = store.sign_in(
        engine, "buyer@example.test", "c" * 64, "t" * 64, "s" * 64, "udid1", "iPhone", now
    )
    assert buyer is not None
    return buyer


def _sell(engine: Engine, buyer: int, source: int, package: int, txn: str, hold: int) -> None:
    """A completed test-mode store sale of 9.00 USD at 15 %, as the store records it."""
    now = int(time.time())
    store.start_payment(engine, f"pay-{txn}", store.StorePurchase(
        source_id=source, package_id=package, buyer_id=buyer, email="buyer@example.test",
        udid="udid1", model="iPhone", total="9.00", currency="USD", platform="test",
        txn_id=f"pay-{txn}", purchased_at=now,
    ))  # fmt: skip
    with engine.begin() as db:
        assert store.complete_payment(
            db, f"pay-{txn}", txn, now, terms=store.SaleTerms(Decimal(15), hold_seconds=hold)
        )


def test_balances_payouts_their_csv_and_a_confirmed_refund(
    selling: tuple[Served, Engine, str], watched: Watched
) -> None:
    server, engine, key = selling
    app = server.apps[0]
    source = terms.source_id(engine, app["source"])
    assert source is not None
    with engine.connect() as db:
        package = db.execute(
            select(t.packages.c.id).where(t.packages.c.package == app["paid_package"])
        ).scalar_one()
    settings = Settings(**MONEY)
    Money(settings, engine, TestMoney()).connect(source, "https://s.test/ok", "https://s.test/re")
    buyer = _buyer(engine)
    _sell(engine, buyer, source, package, FORMULA_TXN, hold=0)
    Scheduler(Schedule.of(settings), engine, {True: TestMoney(), False: None}).run_once()
    _sell(engine, buyer, source, package, "TXN-HELD", hold=30 * 86400)

    page = watched.page
    sign_in(page, server.base, key)
    page.get_by_role("button", name="Money").click()
    balances = page.locator("#money-balances")
    expect(balances.locator("tbody tr")).to_have_count(1)
    assert column(balances, 0) == ["USD (test)"]
    assert (column(balances, 1), column(balances, 2)) == (["7.65"], ["0.00"])
    assert page.evaluate("() => Boolean(Chart.getChart(document.querySelector('#money-chart')))")
    payouts = page.locator("#payouts-table")
    expect(payouts.locator("tbody tr")).to_have_count(1)
    assert (column(payouts, 2), column(payouts, 4), column(payouts, 5)) == (
        ["7.65"], ["paid"], ["2"],
    )  # fmt: skip

    name, rows = downloaded(page, page.get_by_role("button", name="Download the payouts as CSV"))
    assert name.startswith("payouts-")
    assert [(r["entry_kind"], r["entry_txn_id"], r["entry_available"]) for r in rows] == [
        ("release", "'" + FORMULA_TXN, "7.65"), ("payout", "", "-7.65"),
    ]  # fmt: skip

    asked: list[str] = []

    def refuse(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", refuse)
    page.get_by_label("Transaction").fill(FORMULA_TXN)
    page.get_by_role("button", name="Refund", exact=True).click()
    assert asked == [
        f"Refund all that is left of {FORMULA_TXN} to its buyer? This cannot be undone."
    ]
    assert store_status(engine, FORMULA_TXN) == "Completed"  # not confirmed: nothing done

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Refund", exact=True).click()
    expect(page.locator("#refund-result")).to_have_text(
        f"Refunded 9.00 USD of {FORMULA_TXN} (succeeded)."
    )
    expect(balances.locator("tbody tr > :nth-child(3)")).to_have_text("-7.65")
    assert store_status(engine, FORMULA_TXN) == "Refunded"
    watched.snap("dashboard-money")


def store_status(engine: Engine, txn: str) -> str:
    with engine.connect() as db:
        status: str = db.execute(
            select(t.purchases.c.status).where(t.purchases.c.txn_id == txn)
        ).scalar_one()
    return status
