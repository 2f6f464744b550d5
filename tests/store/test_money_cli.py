"""A test-mode sale as a device makes it, through ``pkgcat money``: pending, released after
a hold of 0 days, paid out once by two runs at once, a refund after it, numbers right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.store.conftest import Mailbox, store_settings
from tests.store.sileo import Sileo

BASE = "/store/"
MONEY = {
    "PKGCAT_STORE_PLATFORM": "test", "PKGCAT_PAYOUT_HOLD_DAYS": "0", "PKGCAT_PAYOUT_DAYS": "*",
    "PKGCAT_PAYOUT_MINIMUM": "1 USD",
}  # fmt: skip


def _run(env: dict[str, str], *args: str) -> Any:
    done = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.fixture
def shop(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
) -> Api:
    """The store in test mode, holding sales 0 days; payouts only by ``pkgcat money run``."""
    settings = store_settings(mailbox[1], payout_hold_days=0, payout_scheduler="separate")
    return make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)


def test_a_test_mode_sale_is_pending_then_available_then_paid_once_and_refunded_right(
    shop: Api, mailbox: tuple[Mailbox, int], cli_env: dict[str, str], database_url: str
) -> None:
    env = cli_env | MONEY
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "cli@example.test").status_code == 303
    assert device.purchase("com.alpha.paid").json() == {"status": 0}
    [balance] = json.loads(_run(env, "money", "balance", "Alpha", "--json"))
    assert (balance["test"], balance["pending"], balance["available"]) == (True, "1.99", "0.00")
    assert balance["blocked"] == "no payout account is connected"

    _run(env, "money", "connect", "Alpha", "--return-url", "https://seller.example.test/ok",
         "--refresh-url", "https://seller.example.test/again")  # fmt: skip
    # Two processes at once, as two hosts' crons would run it.
    command = [sys.executable, "-m", "pkgcat", "money", "run"]
    running = [
        subprocess.Popen(command, env=os.environ | env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in running]
    assert [process.returncode for process in running] == [0, 0]
    assert sorted(o.split(",")[2].strip() for o in outputs) == [
        "0 payout(s) made", "1 payout(s) made",
    ]  # fmt: skip
    [payout] = json.loads(_run(env, "money", "payouts", "Alpha", "--json"))
    assert (payout["amount"], payout["status"], payout["test"]) == ("1.99", "paid", True)

    engine = engine_for(database_url)
    try:
        from pkgcat.config import Settings
        from pkgcat.money.platform import TestMoney
        from pkgcat.money.service import Money

        with engine.connect() as db:
            from sqlalchemy import text

            txn = db.execute(
                text("SELECT txn_id FROM purchases WHERE nickname = 'cli@example.test'")
            ).scalar_one()
        overrides: dict[str, Any] = {k[len("PKGCAT_") :].lower(): v for k, v in MONEY.items()}
        money = Money(Settings(database_url=database_url, **overrides), engine, TestMoney())
        money.refund(1, txn, key="after-the-payout")
    finally:
        engine.dispose()
    assert device.package_info("com.alpha.paid").json()["purchased"] is False
    [balance] = json.loads(_run(env, "money", "balance", "Alpha", "--json"))
    assert Decimal(balance["available"]) == Decimal("-1.99")

    _run(env, "money", "adjust", "Alpha", "1.99", "USD", "--test", "--reason", "goodwill")
    _run(env, "money", "commission", "Alpha", "12.5")
    [balance] = json.loads(_run(env, "money", "balance", "Alpha", "--json"))
    assert balance["available"] == "0.00"
    entries = json.loads(_run(env, "money", "ledger", "Alpha", "--json"))
    assert [e["kind"] for e in entries] == ["sale", "release", "payout", "refund", "adjustment"]
    assert sum(Decimal(e["pending"]) + Decimal(e["available"]) for e in entries) == 0
