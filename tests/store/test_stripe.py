"""Stripe mode against a local double of its API, with webhooks signed by Stripe's real scheme."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from pkgcat.config import Settings
from pkgcat.ingest.operator_data import import_purchases
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.ingest.test_operator_data import write_csv
from tests.repository.test_served import stanzas
from tests.store.conftest import Mailbox, store_settings
from tests.store.sileo import Sileo
from tests.store.stripe_double import StripeDouble, event, event_body, signed, stripe_double

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
                text("SELECT status, txn_id FROM purchases WHERE nickname = :e ORDER BY txn_id"),
                {"e": email},
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


def _open_payment(
    shop: Api, mailbox: tuple[Mailbox, int], double: StripeDouble, email: str
) -> tuple[Sileo, str]:
    """A signed-in device with an open Checkout Session for com.alpha.paid, and its payment id."""
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], email).status_code == 303
    assert device.purchase("com.alpha.paid").json()["status"] == 1
    return device, double.sessions[-1]["client_reference_id"]


def _applied_events(database_url: str) -> list[str]:
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            return list(db.execute(text("SELECT event_id FROM store_events")).scalars())
    finally:
        engine.dispose()


def _session(payment_id: str, **over: object) -> dict[str, object]:
    """A paid Checkout Session as Stripe sends it (stripe-python 14.4.2,
    ``stripe/checkout/_session.py`` lines 2183, 2352, 2379: ``client_reference_id`` and
    ``payment_intent`` strings or null, ``payment_status`` one of three strings)."""
    return {
        "id": "cs_test_shape",
        "object": "checkout.session",
        "client_reference_id": payment_id,
        "payment_status": "paid",
        "payment_intent": "pi_test_shape",
    } | over


MALFORMED: list[tuple[Callable[[dict[str, Any]], object], str]] = [
    # stripe-python 14.4.2, stripe/_event.py lines 38-39 and 74-75: ``data`` is an object whose
    # ``object`` is an object, and ``id`` a string.
    (lambda e: e | {"data": "a string"}, "the event's data must be a JSON object"),
    (
        lambda e: e | {"data": {"object": [e["data"]["object"]]}},
        "data.object must be a JSON object",
    ),
    (lambda e: e | {"data": {}}, "data.object is missing"),
    (lambda e: e | {"id": 7}, "the event's id must be a string"),
    (lambda e: e | {"id": ""}, "the event's id must not be empty"),
    (lambda e: {k: v for k, v in e.items() if k != "id"}, "the event's id is missing"),
    (lambda e: e | {"id": "evt_" + "x" * 300}, "the event's id must be at most 255 characters"),
    (lambda e: e | {"type": ["checkout.session.completed"]}, "the event's type must be a string"),
    (lambda e: [e], "the event must be a JSON object"),
    (
        lambda e: e | {"data": {"object": e["data"]["object"] | {"payment_intent": {"id": "pi"}}}},
        "data.object.payment_intent must be a string",
    ),
    (
        lambda e: (
            e | {"data": {"object": e["data"]["object"] | {"payment_intent": "pi_" + "9" * 200}}}
        ),
        "data.object.payment_intent must be at most 128 characters",
    ),
    (
        lambda e: e | {"data": {"object": e["data"]["object"] | {"client_reference_id": 12}}},
        "data.object.client_reference_id must be a string",
    ),
    (
        lambda e: e | {"data": {"object": e["data"]["object"] | {"payment_status": True}}},
        "data.object.payment_status must be a string",
    ),
    (
        lambda e: e | {"data": {"object": e["data"]["object"] | {"object": "charge"}}},
        "data.object.object must be 'checkout.session'",
    ),
]


@pytest.mark.parametrize(("spoil", "reason"), MALFORMED, ids=range(len(MALFORMED)))
def test_a_signed_event_not_shaped_as_stripe_sends_it_is_refused_and_applies_nothing(
    shop: Api,
    mailbox: tuple[Mailbox, int],
    double: StripeDouble,
    database_url: str,
    spoil: Callable[[dict[str, Any]], object],
    reason: str,
) -> None:
    """Was a 500 (``data`` a string, ``data.object`` a list): refused now, 400, nothing applied."""
    device, payment_id = _open_payment(shop, mailbox, double, "shape@example.test")
    good = event_body("checkout.session.completed", _session(payment_id))
    answer = _deliver(shop, json.dumps(spoil(good)).encode())
    assert reason in str(answer["error"])
    assert _applied_events(database_url) == []
    assert _ledger(database_url, "shape@example.test") == []
    assert device.package_info("com.alpha.paid").json()["purchased"] is False
    # Nothing of it was kept: the same event, well formed, is applied as new.
    assert _deliver(shop, json.dumps(good).encode())["applied"] is True
    assert _ledger(database_url, "shape@example.test") == [("Completed", "pi_test_shape")]


@pytest.mark.parametrize(
    ("kind", "obj", "reason"),
    [
        # stripe-python 14.4.2, stripe/_charge.py line 2344: ``refunded`` is a bool.
        ("charge.refunded", {"id": "ch_1", "object": "charge", "payment_intent": "pi_1",
                             "refunded": "true"}, "data.object.refunded must be true or false"),
        ("charge.refunded", {"id": "ch_1", "object": "charge", "payment_intent": "pi_1"},
         "data.object.refunded is missing"),
        # stripe/_dispute.py line 466: ``payment_intent`` a string (an id) or null.
        ("charge.dispute.created", {"id": "dp_1", "object": "dispute", "payment_intent": 5},
         "data.object.payment_intent must be a string"),
        ("checkout.session.expired", {"id": "cs_1", "object": "checkout.session",
                                      "client_reference_id": ["pay_1"]},
         "data.object.client_reference_id must be a string"),
    ],
)  # fmt: skip
def test_every_field_the_store_reads_is_checked_in_every_event_it_acts_on(
    shop: Api, database_url: str, kind: str, obj: dict[str, object], reason: str
) -> None:
    assert reason in str(_deliver(shop, event(kind, obj))["error"])
    assert _applied_events(database_url) == []


IMPORTED = {
    "package": "com.alpha.paid", "source": "", "nickname": "elsewhere", "status": "Completed",
    "total": "1.99", "commission": "0.30", "currency": "USD",
    "date": "2024-03-10T12:00:00+00:00", "payment_platform": "stripe",
}  # fmt: skip
"""A purchase an operator imports from another storefront that also took it through Stripe."""


def test_the_platform_s_events_and_imported_purchases_never_touch_each_other(
    shop: Api,
    mailbox: tuple[Mailbox, int],
    double: StripeDouble,
    database_url: str,
    tmp_path: Path,
) -> None:
    """A signed refund naming the ``txn_id`` of a purchase imported under ``payment_platform:
    stripe`` made it Refunded; a completion whose PaymentIntent an imported purchase had was a
    500 (the unique ``txn_id``). Neither changes an imported purchase now."""
    device, payment_id = _open_payment(shop, mailbox, double, "own@example.test")
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            buyer = db.execute(
                text("SELECT id FROM buyers WHERE email = 'own@example.test'")
            ).scalar_one()
        rows = [
            IMPORTED | {"txn_id": "pi_imported"},
            # Even one that names the store buyer's account and device.
            IMPORTED | {"txn_id": "pi_imported_as_buyer", "account": f"store-buyer-{buyer}",
                        "udid": device.udid, "device_model": device.model},
            IMPORTED | {"txn_id": "pi_test_shape"},  # the PaymentIntent the store's session gets
        ]  # fmt: skip
        import_purchases(engine, write_csv(tmp_path / "imported.csv", rows))
        for txn in ("pi_imported", "pi_imported_as_buyer"):
            refund = {
                "id": f"ch_{txn}",
                "object": "charge",
                "payment_intent": txn,
                "refunded": True,
            }
            dispute = {"id": f"dp_{txn}", "object": "dispute", "payment_intent": txn}
            assert _deliver(shop, event("charge.refunded", refund))["applied"] is True
            assert _deliver(shop, event("charge.dispute.created", dispute))["applied"] is True
        assert _ledger(database_url, "elsewhere") == [
            ("Completed", "pi_imported"),
            ("Completed", "pi_imported_as_buyer"),
            ("Completed", "pi_test_shape"),
        ]
        completion = event_body("checkout.session.completed", _session(payment_id))
        completed = json.dumps(completion).encode()
        answer = shop.http.post(
            f"{BASE}stripe/webhook",
            content=completed,
            headers={"stripe-signature": signed(completed, SECRET)},
        )
        assert answer.status_code == 409, answer.text
        assert "pi_test_shape is already the txn_id of another purchase" in answer.json()["error"]
        assert completion["id"] not in _applied_events(database_url)
        assert _ledger(database_url, "own@example.test") == []
        with engine.begin() as db:  # the operator settles whose reference it is
            db.execute(text("DELETE FROM purchases WHERE txn_id = 'pi_test_shape'"))
    finally:
        engine.dispose()
    # Stripe's retry completes the store's own payment, which follows its platform's events.
    assert _deliver(shop, completed)["applied"] is True
    refund = {"id": "ch_own", "object": "charge", "payment_intent": "pi_test_shape"}
    assert _deliver(shop, event("charge.refunded", refund | {"refunded": True}))["applied"]
    assert _ledger(database_url, "own@example.test") == [("Refunded", "pi_test_shape")]


@pytest.mark.parametrize(
    ("offset", "reason"),
    [
        (600, "timestamp is 600 s ahead of this server's clock; at most 300 s"),
        (301, "timestamp is 301 s ahead"),
        (-600, "timestamp is 600 s old; at most 300 s"),
    ],
)
def test_a_signature_dated_past_the_tolerance_either_way_is_refused(
    shop: Api,
    mailbox: tuple[Mailbox, int],
    double: StripeDouble,
    database_url: str,
    offset: int,
    reason: str,
) -> None:
    """stripe-python 14.4.2 (stripe/_webhook.py line 89) refuses only ``timestamp < time() -
    tolerance``: an event dated 600 s ahead was accepted. Both ways are refused now."""
    _device, payment_id = _open_payment(shop, mailbox, double, "clock@example.test")
    body = event("checkout.session.completed", _session(payment_id))
    at = int(time.time()) + offset
    answer = shop.http.post(
        f"{BASE}stripe/webhook",
        content=body,
        headers={"stripe-signature": signed(body, SECRET, at)},
    )
    assert answer.status_code == 400, answer.text
    assert reason in answer.json()["error"]
    assert _applied_events(database_url) == []
    assert _ledger(database_url, "clock@example.test") == []
    # Within the tolerance either way (a clock 60 s off), the same event is applied.
    late = shop.http.post(
        f"{BASE}stripe/webhook",
        content=body,
        headers={"stripe-signature": signed(body, SECRET, int(time.time()) + 60)},
    )
    assert late.json() == {"received": True, "applied": True}


@pytest.mark.parametrize(
    "header",
    [
        # A non-ASCII signature compared first: was a 500.
        lambda body: signed(body, SECRET).replace(",v1=", ",v1=\xe9,v1=").encode("latin-1"),
        lambda body: signed(body, SECRET) + ",t=1",  # a second t: which one was signed?
        lambda body: signed(body, SECRET).replace("t=", "t= "),
        lambda _body: "",
        lambda body: signed(body, SECRET).replace(",v1=", ",v2="),
    ],
    ids=["non-ascii", "two-t", "spaced-t", "empty", "no-v1"],
)
def test_a_malformed_stripe_signature_header_is_a_400(
    shop: Api, database_url: str, header: Callable[[bytes], str | bytes]
) -> None:
    """stripe-python 14.4.2 (stripe/_webhook.py lines 52-56) reads the first ``t`` with
    ``int()``; its compare (stripe/_util.py line 170, hmac.compare_digest) raises TypeError
    on a non-ASCII signature."""
    body = event(
        "charge.dispute.created", {"id": "dp_h", "object": "dispute", "payment_intent": None}
    )
    answer = shop.http.post(
        f"{BASE}stripe/webhook", content=body, headers={"stripe-signature": header(body)}
    )
    assert answer.status_code == 400, answer.text
    assert "Stripe-Signature" in answer.json()["error"]
    assert _applied_events(database_url) == []
