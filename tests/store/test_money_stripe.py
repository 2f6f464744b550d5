"""The sellers' money through Stripe (Connect), against the local double of its API, events
signed with Stripe's real scheme on the store's one webhook route.

A sale's fee is read from its charge's balance transaction; a seller connects an Express
account through an account link; ``account.updated`` says it can be paid; two hosts' runs
make one Transfer and one Payout, each with its Idempotency-Key; ``payout.failed`` gives the
money back with Stripe's reason and the transfer is reversed; ``payout.paid`` settles; a
seller's refund is made once through Stripe, and a refund from Stripe's dashboard is
followed by the ledger.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from pkgcat.config import Settings
from pkgcat.money.schedule import Schedule
from pkgcat.money.scheduler import Scheduler
from pkgcat.money.service import Money
from pkgcat.storage import ledger
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from pkgcat.store.stripe_connect import StripeMoney
from tests.conftest import Api, AppFactory
from tests.store.conftest import Mailbox, store_settings
from tests.store.sileo import Sileo
from tests.store.stripe_double import Charge, StripeDouble, event, signed, stripe_double

SECRET = "whsec_" + "a" * 32
CONNECT_SECRET = "whsec_" + "c" * 32
KEY = "sk_test_" + "b" * 24
BASE = "/store/"
MONEY = {
    "commission_percent": Decimal(15), "payout_hold_days": 0, "payout_days": "*",
    "payout_minimum": "1 USD", "payout_scheduler": "separate",
}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        import time

        self.now = int(time.time())

    def __call__(self) -> float:
        return float(self.now)


@pytest.fixture
def double() -> Iterator[StripeDouble]:
    with stripe_double() as running:
        yield running


def _settings(double: StripeDouble, port: int) -> dict[str, Any]:
    return store_settings(
        port, store_platform="stripe", stripe_secret_key=KEY, stripe_webhook_secret=SECRET,
        stripe_connect_webhook_secret=CONNECT_SECRET, stripe_api_base=double.base, **MONEY,
    )  # fmt: skip


@pytest.fixture
def shop(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
    double: StripeDouble,
) -> Api:
    return make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **_settings(double, mailbox[1]))


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = engine_for(database_url)
    yield made
    made.dispose()


def _deliver(shop: Api, body: bytes, secret: str = SECRET) -> dict[str, object]:
    answer = shop.http.post(
        f"{BASE}stripe/webhook",
        content=body,
        headers={"stripe-signature": signed(body, secret), "content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()
    return found


def _sale(shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, intent: str) -> Sileo:
    """com.alpha.paid (1.99 USD) bought through Checkout, its charge's fee 0.36."""
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "money@example.test").status_code == 303
    assert device.purchase("com.alpha.paid").json()["status"] == 1
    double.charges[intent] = Charge(amount=199, currency="usd", fee=36)
    session = {
        "id": f"cs_{intent}", "object": "checkout.session", "payment_status": "paid",
        "client_reference_id": double.sessions[-1]["client_reference_id"],
        "payment_intent": intent,
    }  # fmt: skip
    assert _deliver(shop, event("checkout.session.completed", session))["applied"] is True
    return device


def _money(engine: Engine, double: StripeDouble, clock: Clock, mailbox: int) -> Money:
    settings = Settings(**_settings(double, mailbox))
    return Money(settings, engine, StripeMoney(KEY, double.base), clock=clock)


def _race(database_url: str, double: StripeDouble, clock: Clock, mailbox: int) -> None:
    """One scheduler run on each of two hosts (engines) at once."""
    schedule = Schedule.of(Settings(**_settings(double, mailbox)))
    start = threading.Barrier(2)

    def host() -> None:
        engine = engine_for(database_url)
        try:
            scheduler = Scheduler(schedule, engine, {False: StripeMoney(KEY, double.base)},
                                  clock=clock)  # fmt: skip
            start.wait()
            scheduler.run_once()
        finally:
            engine.dispose()

    threads = [threading.Thread(target=host) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _row(engine: Engine, sql: str, **params: object) -> Any:
    with engine.connect() as db:
        return db.execute(text(sql), params).one()


def test_a_sale_is_paid_out_once_through_connect_and_a_failed_payout_comes_back_with_why(
    shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, engine: Engine,
    database_url: str,
) -> None:  # fmt: skip
    _sale(shop, mailbox, double, "pi_money_1")
    clock = Clock()
    clock.now += 1  # after the sale: a hold of 0 days has ended
    # The fee is the charge's balance transaction's, read in one expanded request
    # (stripe/_payment_intent.py line 2961, stripe/_charge.py line 2235).
    [read] = [s for s in double.sent if s[1] == "/v1/payment_intents/pi_money_1"]
    assert read[0] == "GET"
    assert read[2]["expand[0]"] == "latest_charge.balance_transaction"
    sale = _row(engine, "SELECT total, commission, fee FROM purchases WHERE txn_id = 'pi_money_1'")
    assert tuple(sale) == ("1.99", "0.30", "0.36")  # net 1.33

    money = _money(engine, double, clock, mailbox[1])
    onboarding = money.connect(
        1, "https://seller.example.test/ok", "https://seller.example.test/again"
    )
    [account] = double.of("accounts")
    assert onboarding.account_id == account["id"]
    assert onboarding.url.startswith("https://connect.stripe.test/setup/")
    [sent_account] = [s[2] for s in double.sent if s[1] == "/v1/accounts"]
    assert sent_account["type"] == "express"
    assert sent_account["capabilities[transfers][requested]"] == "true"
    assert sent_account["settings[payouts][schedule][interval]"] == "manual"
    [balance] = money.balance(1)
    assert "cannot be paid yet" in str(balance.next_payout.blocked)

    _race(database_url, double, clock, mailbox[1])
    assert double.of("transfers") == []  # no payout to an account Stripe has not enabled
    enabled = {"id": account["id"], "object": "account", "payouts_enabled": True,
               "details_submitted": True, "requirements": {"disabled_reason": None}}  # fmt: skip
    # A Connect event, signed with the Connect endpoint's own secret.
    assert _deliver(shop, event("account.updated", enabled, account["id"]), CONNECT_SECRET)[
        "applied"
    ]
    [balance] = money.balance(1)
    assert balance.available == Decimal("1.33")
    assert balance.next_payout.blocked is None

    _race(database_url, double, clock, mailbox[1])
    [transfer] = double.of("transfers")
    [payout] = money.payouts(1).payouts
    assert (transfer["amount"], transfer["destination"]) == (133, account["id"])
    assert transfer["idempotency_key"] == f"pkgcat-transfer-{payout.id}"
    [sent_on] = double.of("payouts")
    assert sent_on["account"] == account["id"]  # the Stripe-Account header
    assert sent_on["idempotency_key"] == f"pkgcat-payout-{payout.id}"
    assert (payout.status, payout.amount, payout.test) == ("in_transit", Decimal("1.33"), False)

    failed = {"id": sent_on["id"], "object": "payout", "status": "failed",
              "failure_code": "account_closed",
              "failure_message": "The bank account has been closed.",
              "metadata": {"pkgcat_payout": payout.id}}  # fmt: skip
    assert _deliver(shop, event("payout.failed", failed, account["id"]), CONNECT_SECRET)["applied"]
    [payout] = money.payouts(1).payouts
    assert (payout.status, payout.failure_message) == (
        "failed",
        "The bank account has been closed.",
    )
    [balance] = money.balance(1)
    assert balance.available == Decimal("1.33")
    [back] = [e for e in ledger.entries(engine, 1) if e.kind == "payout_failed"]
    assert back.reason == "The bank account has been closed."

    _race(database_url, double, clock, mailbox[1])  # the transfer taken back, once
    [reversal] = double.of("reversals")
    assert reversal["transfer"] == transfer["id"]
    assert reversal["idempotency_key"] == f"pkgcat-reversal-{payout.id}"
    reversed_ = {"id": transfer["id"], "object": "transfer", "reversed": True,
                 "amount": 133, "amount_reversed": 133}  # fmt: skip
    assert _deliver(shop, event("transfer.reversed", reversed_))["applied"]
    [balance] = money.balance(1)
    assert balance.available == Decimal("1.33")  # given back once, not twice
    assert len(double.of("transfers")) == 1  # the same period is not paid again

    clock.now += 86400  # the next payout date
    _race(database_url, double, clock, mailbox[1])
    assert len(double.of("transfers")) == 2
    newest = money.payouts(1).payouts[0]
    paid = {"id": double.of("payouts")[-1]["id"], "object": "payout", "status": "paid",
            "metadata": {"pkgcat_payout": newest.id}}  # fmt: skip
    assert _deliver(shop, event("payout.paid", paid, account["id"]), CONNECT_SECRET)["applied"]
    assert money.payouts(1).payouts[0].status == "paid"
    [balance] = money.balance(1)
    assert (balance.pending, balance.available) == (Decimal("0.00"), Decimal("0.00"))


def test_a_seller_s_refund_is_made_once_and_a_dashboard_refund_is_followed_by_the_ledger(
    shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, engine: Engine
) -> None:
    clock = Clock()
    device = _sale(shop, mailbox, double, "pi_money_2")
    money = _money(engine, double, clock, mailbox[1])
    made = [money.refund(1, "pi_money_2", "0.99", key="seller-key-1") for _ in range(3)]
    assert {m.id for m in made} == {made[0].id}
    [refund] = double.of("refunds")
    assert (refund["amount"], refund["payment_intent"]) == (99, "pi_money_2")
    assert refund["idempotency_key"] == f"pkgcat-refund-{made[0].id}"
    assert device.package_info("com.alpha.paid").json()["purchased"] is True  # a part only
    # Stripe's own report of that refund adds nothing.
    partial = {"id": "ch_money_2", "object": "charge", "payment_intent": "pi_money_2",
               "refunded": False, "amount_refunded": 99}  # fmt: skip
    assert _deliver(shop, event("charge.refunded", partial))["applied"]
    [balance] = money.balance(1)
    assert balance.pending == Decimal("0.49")  # 1.33 - (0.99 - 0.15 of the commission)

    # The rest refunded in Stripe's dashboard: the ledger follows, the device loses it.
    whole = partial | {"refunded": True, "amount_refunded": 199}
    assert _deliver(shop, event("charge.refunded", whole))["applied"]
    [balance] = money.balance(1)
    assert balance.pending == Decimal("-0.36")  # Stripe keeps its fee; the seller bore it
    assert device.package_info("com.alpha.paid").json()["purchased"] is False
    status = _row(engine, "SELECT status FROM purchases WHERE txn_id = 'pi_money_2'")
    assert status[0] == "Refunded"
    origins = _row(engine, "SELECT count(*) FROM store_refunds WHERE origin = 'platform'")
    assert origins[0] == 1


def test_a_refund_through_the_api_is_made_once_and_stripe_s_errors_answer_in_the_envelope(
    shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, admin: CatalogueAdmin
) -> None:
    """purchase/refund.json through Stripe: the same Idempotency-Key again is the first
    answer and one Stripe refund; Stripe unable to answer is code 15 (HTTP 503) with nothing
    refunded; a refusal by Stripe is code 2 naming txn_id, with Stripe's reason."""
    key = admin.create_key("Alpha", "alpha-a", ("money",)).secret_key

    def refund(txn: str, idempotency: str) -> Any:
        headers = {"authorization": f"Bearer {key}", "idempotency-key": idempotency}
        return shop.http.post("/1.0/purchase/refund.json", json={"txn_id": txn}, headers=headers)

    device = _sale(shop, mailbox, double, "pi_money_api")
    made = refund("pi_money_api", "refund-api-1")
    assert made.status_code == 200, made.text
    answer = made.json()["response"]
    assert (answer["amount"], answer["currency"], answer["status"], answer["test"]) == (
        "1.99", "USD", "succeeded", False,
    )  # fmt: skip
    assert refund("pi_money_api", "refund-api-1").json() == made.json()  # the first answer
    [stripe_refund] = double.of("refunds")
    assert stripe_refund["idempotency_key"] == f"pkgcat-refund-{answer['id']}"
    assert device.package_info("com.alpha.paid").json()["purchased"] is False

    device = _sale(shop, mailbox, double, "pi_money_api_2")
    double.refuse["/v1/refunds"] = (
        400, {"type": "invalid_request_error", "message": "Charge has been disputed."},
    )  # fmt: skip
    refused = refund("pi_money_api_2", "refund-api-2")
    assert (refused.status_code, refused.json()["code"]) == (400, 2)
    assert refused.json()["response"].startswith("txn_id: stripe refused the refund")
    double.refuse["/v1/refunds"] = (500, {"type": "api_error", "message": "down"})
    down = refund("pi_money_api_2", "refund-api-3")
    assert (down.status_code, down.json()["code"]) == (503, 15)
    assert device.package_info("com.alpha.paid").json()["purchased"] is True
    assert len(double.of("refunds")) == 1
