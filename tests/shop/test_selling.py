"""Prices, availability, sales and discount codes on SQLite and PostgreSQL: amounts exact in
the currency's minor units, the operator's imports beside the seller's changes in one
history, a sale and a code applied at purchase and recorded on it, a code's last use won once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.shop import selling
from pkgcat.shop.errors import ShopRefused
from pkgcat.storage import store
from pkgcat.storage.engine import engine_for
from pkgcat.storage.shop.log import history
from tests.backends import rows
from tests.conftest import Api, AppFactory
from tests.repository.test_served import wait_for
from tests.shop.conftest import ALPHA, NOW, REPO, Mailbox, store_settings
from tests.store.sileo import Sileo, hidden_fields

SELLER = "seller:alpha-a"
OTHER = "com.alpha.other"  # 4.99 USD


@pytest.mark.parametrize(
    ("price", "currency", "field", "says"),
    [
        ("1.999", None, "price", "more decimals than USD has (2)"),
        ("1.5", "JPY", "price", "more decimals than JPY has (0)"),
        ("1.0001", "KWD", "price", "more decimals than KWD has (3)"),
        ("-1", None, "price", "between 0"),
        ("abc", None, "price", "not an amount"),
        ("1", "XYZ", "currency", "not an ISO 4217"),
    ],
)
def test_a_price_is_refused_naming_the_field_and_nothing_is_written(
    engine: Engine, database_url: str, price: str, currency: str | None, field: str, says: str
) -> None:
    with pytest.raises(ShopRefused) as refused:
        selling.set_price(
            engine, ALPHA, OTHER, price=price, currency=currency, actor=SELLER, now=NOW
        )
    assert (refused.value.field, says in refused.value.message) == (field, True), refused.value
    assert rows(
        database_url, "SELECT price, currency FROM packages WHERE package = 'com.alpha.other'"
    ) == [("4.99", "USD")]
    assert rows(database_url, "SELECT count(*) FROM package_history") == [(0,)]


def test_the_seller_and_the_operators_import_share_one_history(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    done = selling.set_price(
        engine, ALPHA, OTHER, price="500", currency="jpy", actor=SELLER, now=NOW
    )
    assert (done.price, done.currency) == ("500", "JPY")
    selling.set_price(engine, ALPHA, OTHER, online=False, actor=SELLER, now=NOW + 1)
    prices = tmp_path / "prices.csv"
    prices.write_text(f"package,price,currency\n{OTHER},3.99,USD\n")
    result = CliRunner().invoke(
        cli, ["import-prices", str(prices)], env={"PKGCAT_DATABASE_URL": database_url}
    )
    assert result.exit_code == 0, result.output
    entries = history(engine, ALPHA, OTHER)
    assert [(e.actor, e.change, e.facts) for e in entries] == [
        ("operator:import-prices", "package.price_changed", {"price": "3.99", "currency": "USD"}),
        (SELLER, "package.availability_changed", {"online": False}),
        (SELLER, "package.price_changed", {"price": "500", "currency": "JPY"}),
    ]


def test_a_sale_is_shown_applied_at_purchase_and_recorded_with_the_commission_on_what_was_paid(
    make_api: AppFactory,
    cli_env: dict[str, str],
    engine: Engine,
    mailbox: tuple[Mailbox, int],
    database_url: str,
) -> None:
    settings = store_settings(mailbox[1], repository_url=REPO, commission_percent="15")
    shop = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)
    for bad, field in (("0.001", "sale_price"), ("5.00", "sale_price"), ("0", "sale_price")):
        with pytest.raises(ShopRefused) as refused:
            selling.set_sale(engine, ALPHA, OTHER, price=bad, starts_at=NOW, ends_at=NOW + 10,
                             actor=SELLER, now=NOW)  # fmt: skip
        assert refused.value.field == field
    import time

    now = int(time.time())
    selling.set_sale(engine, ALPHA, OTHER, price="2.49", starts_at=now - 60, ends_at=now + 3600,
                     actor=SELLER, now=now)  # fmt: skip
    device = Sileo(shop.http, "/store/")
    info = device.package_info(OTHER).json()
    assert info["price"] == "$2.49 (was $4.99) (test)"
    wait_for(lambda: "2.49 USD (sale until" in shop.http.get(f"/repo/depictions/{OTHER}.html").text,
             "the sale in the depiction")  # fmt: skip
    assert device.sign_in(mailbox[0], "sale@example.test").status_code == 303
    assert device.purchase(OTHER).json() == {"status": 0}
    sale = rows(
        database_url,
        "SELECT total, list_price, discount_code, commission FROM purchases"
        " WHERE nickname = 'sale@example.test'",
    )
    # The commission is on what was paid: 15 % of 2.49 is 0.3735, rounded half up 0.37
    # (of the list price it would have been 0.75).
    assert sale == [("2.49", "4.99", None, "0.37")]


def test_a_discount_code_entered_on_the_sign_in_page_is_applied_once_and_counted(
    shop: Api, engine: Engine, mailbox: tuple[Mailbox, int], database_url: str
) -> None:
    code = selling.create_discount(engine, ALPHA, OTHER, code="spring-20", percent="20",
                                   max_uses=5, ends_at=NOW + 10**9, actor=SELLER, now=NOW)  # fmt: skip
    assert (code.code, code.value, code.state) == ("SPRING-20", "20", "active")
    with pytest.raises(ShopRefused) as taken:
        selling.create_discount(engine, ALPHA, "com.alpha.paid", code="SPRING-20", amount="0.50",
                                max_uses=1, ends_at=NOW + 10**9, actor=SELLER, now=NOW)  # fmt: skip
    assert (taken.value.field, taken.value.kind) == ("code", "conflict")
    device = Sileo(shop.http, "/store/")
    page = shop.http.get("/store/authenticate", params={"udid": device.udid, "model": device.model})
    wrong = shop.http.post(
        "/store/authenticate/email",
        data=hidden_fields(page.text) | {"email": "code@example.test", "discount_code": "NOPE"},
    )
    assert "discount_code: no such discount code" in wrong.text
    sent = shop.http.post(
        "/store/authenticate/email",
        data=hidden_fields(wrong.text)
        | {"email": "code@example.test", "discount_code": "spring-20"},
    )
    done = shop.http.post(
        "/store/authenticate/code",
        data=hidden_fields(sent.text) | {"code": mailbox[0].code_for("code@example.test")},
        follow_redirects=False,
    )
    assert done.status_code == 303, done.text
    from urllib.parse import parse_qs, urlsplit

    query = parse_qs(urlsplit(done.headers["location"]).query)
    device.token, device.payment_secret = query["token"][0], query["payment_secret"][0]
    assert device.package_info(OTHER).json()["price"].startswith("$3.99 (was $4.99)")
    assert device.purchase(OTHER).json() == {"status": 0}
    assert rows(
        database_url,
        "SELECT total, list_price, discount_code FROM purchases WHERE nickname = 'code@example.test'",
    ) == [("3.99", "4.99", "SPRING-20")]
    assert rows(database_url, "SELECT uses FROM discount_codes") == [(1,)]
    # Applied once: the entry is spent (a second purchase of the package would pay in full).
    assert rows(database_url, "SELECT count(*) FROM buyer_discounts") == [(0,)]


def test_two_purchases_at_once_on_a_codes_last_use_one_wins(
    engine: Engine, database_url: str
) -> None:
    """Two hosts (two engines) start a payment with the same code's last use at once."""
    code = selling.create_discount(engine, ALPHA, OTHER, code="LAST", amount="1.00", max_uses=1,
                                   ends_at=NOW + 10**9, actor=SELLER, now=NOW)  # fmt: skip
    buyers = []
    for n in range(2):
        email = f"last{n}@example.test"
        store.save_code(engine, email, "c" * 64, NOW + 600)
        buyer = store.sign_in(
            engine, email, "c" * 64, f"{n}" * 64, "s" * 64, f"udid{n}", "iPhone", NOW
        )
        assert buyer is not None
        buyers.append((buyer, email))
    hosts = [engine_for(database_url) for _ in buyers]
    start = threading.Barrier(2)
    outcome: list[str] = ["", ""]

    def pay(n: int) -> None:
        buyer, email = buyers[n]
        purchase = store.StorePurchase(
            source_id=ALPHA, package_id=4, buyer_id=buyer, email=email, udid=f"udid{n}",
            model="iPhone", total="3.99", currency="USD", platform="test", txn_id=f"pay_{n}",
            purchased_at=NOW + 1, list_price="4.99", discount_code=code.code,
            discount_id=code.id,
        )  # fmt: skip
        start.wait(timeout=10)
        try:
            store.start_payment(hosts[n], f"pay_{n}", purchase)
            outcome[n] = "claimed"
        except store.DiscountSpent:
            outcome[n] = "spent"

    threads = [threading.Thread(target=pay, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for host in hosts:
        host.dispose()
    assert sorted(outcome) == ["claimed", "spent"]
    assert rows(database_url, "SELECT uses, max_uses FROM discount_codes") == [(1, 1)]
    assert rows(database_url, "SELECT count(*) FROM store_payments") == [(1,)]
    # The winner's payment fails: its use is given back, for the next buyer.
    winner = outcome.index("claimed")
    store.fail_payment(engine, f"pay_{winner}")
    assert rows(database_url, "SELECT uses FROM discount_codes") == [(0,)]
