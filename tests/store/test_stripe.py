"""Stripe mode against a local double of its API, with webhooks signed by Stripe's real scheme."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from pkgcat.config import Settings
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.repository.test_served import stanzas
from tests.store.conftest import Mailbox, store_settings
from tests.store.sileo import Sileo
from tests.store.stripe_double import StripeDouble, event, signed, stripe_double

SECRET = "whsec_" + "a" * 32
BASE = "/store/"


@pytest.fixture
def double() -> Iterator[StripeDouble]:
    with stripe_double() as running:
        yield running


@pytest.fixture
def shop(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
    double: StripeDouble,
) -> Api:
    settings = store_settings(
        mailbox[1],
        store_platform="stripe",
        stripe_secret_key="sk_test_" + "b" * 24,
        stripe_webhook_secret=SECRET,
        stripe_api_base=double.base,
    )
    return make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)


def _ledger(database_url: str, email: str) -> list[tuple[str, str]]:
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            rows = db.execute(
                text("SELECT status, txn_id FROM purchases WHERE nickname = :e"), {"e": email}
            )
            return [(row.status, row.txn_id) for row in rows]
    finally:
        engine.dispose()


def _deliver(shop: Api, body: bytes, secret: str = SECRET) -> dict[str, object]:
    answer = shop.http.post(
        f"{BASE}stripe/webhook",
        content=body,
        headers={"stripe-signature": signed(body, secret), "content-type": "application/json"},
    )
    assert answer.status_code in (200, 400), answer.text
    found: dict[str, object] = answer.json()
    return found


def test_a_purchase_opens_checkout_and_completes_only_by_a_signed_event_applied_once(
    shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, database_url: str
) -> None:
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "stripe@example.test").status_code == 303
    opened = device.purchase("com.alpha.paid").json()
    assert opened["status"] == 1
    assert opened["url"].startswith("https://checkout.stripe.test/c/pay/cs_test_")
    [sent] = double.sessions
    assert sent["line_items[0][price_data][unit_amount]"] == "199"
    assert sent["line_items[0][price_data][currency]"] == "usd"
    assert sent["success_url"] == "http://testserver/store/payment/return"
    payment_id = sent["client_reference_id"]
    # Until Stripe says it is paid, nothing is owned and no purchase is written.
    assert _ledger(database_url, "stripe@example.test") == []
    assert device.package_info("com.alpha.paid").json()["purchased"] is False
    back = shop.http.get(f"{BASE}payment/return", follow_redirects=False)
    assert back.headers["location"] == "sileo://payment_completed"

    # A forged event (another secret) changes nothing.
    completed = event(
        "checkout.session.completed",
        {
            "id": "cs_test_1",
            "object": "checkout.session",
            "client_reference_id": payment_id,
            "payment_status": "paid",
            "payment_intent": "pi_test_1",
        },
    )
    forged = _deliver(shop, completed, secret="whsec_" + "f" * 32)
    assert "does not verify" in str(forged["error"])
    assert _ledger(database_url, "stripe@example.test") == []

    applied = [_deliver(shop, completed)["applied"] for _ in range(10)]
    assert applied == [True] + [False] * 9
    assert _ledger(database_url, "stripe@example.test") == [("Completed", "pi_test_1")]
    assert device.package_info("com.alpha.paid").json()["purchased"] is True
    authorized = device.authorize_download("com.alpha.paid", "2.0", BASE)
    assert authorized.status_code == 200, authorized.text
    path = "/" + authorized.json()["url"].split("/", 3)[3]
    download = shop.http.get(path)
    assert download.status_code == 200
    # What apt checks: the bytes are the ones the signed index lists for this package.
    [listed] = [
        s
        for s in stanzas(shop.http.get("/repo/Packages").content)
        if s["Package"] == "com.alpha.paid"
    ]
    assert hashlib.sha256(download.content).hexdigest() == listed["SHA256"]

    refunded = event(
        "charge.refunded",
        {"id": "ch_1", "object": "charge", "payment_intent": "pi_test_1", "refunded": True},
    )
    assert [_deliver(shop, refunded)["applied"] for _ in range(3)] == [True, False, False]
    assert _ledger(database_url, "stripe@example.test") == [("Refunded", "pi_test_1")]
    assert device.package_info("com.alpha.paid").json()["purchased"] is False
    assert device.authorize_download("com.alpha.paid", "2.0", BASE).status_code == 403


def test_an_abandoned_or_refused_payment_leaves_no_purchase(
    shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, database_url: str
) -> None:
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "abandon@example.test").status_code == 303
    assert device.purchase("com.alpha.paid").json()["status"] == 1
    payment_id = double.sessions[-1]["client_reference_id"]
    expired = event(
        "checkout.session.expired",
        {"id": "cs_x", "object": "checkout.session", "client_reference_id": payment_id},
    )
    assert _deliver(shop, expired)["applied"] is True
    late = event(
        "checkout.session.completed",
        {
            "id": "cs_x",
            "object": "checkout.session",
            "client_reference_id": payment_id,
            "payment_status": "paid",
            "payment_intent": "pi_late",
        },
    )
    _deliver(shop, late)
    assert _ledger(database_url, "abandon@example.test") == []

    double.fail = True
    assert device.purchase("com.alpha.other").json() == {"status": -1}
    assert _ledger(database_url, "abandon@example.test") == []


def test_test_mode_cannot_be_on_with_a_live_platform_s_keys() -> None:
    with pytest.raises(ValidationError, match="test mode cannot be on"):
        Settings(
            store_url="https://shop.example.test/store/",
            smtp_host="127.0.0.1",
            smtp_from="store@example.test",
            store_platform="test",
            stripe_secret_key="sk_live_" + "c" * 24,
        )
