"""The seller's money through the served app, on SQLite and PostgreSQL: ``source/balance``,
``source/payouts`` and ``purchase/refund``.

The cycle docs/money.md promises, as a seller reads it: a test-mode sale is pending, is
available once its hold (0 days here) ends, is paid out once by two hosts' schedulers
racing, and a refund after the payout leaves the numbers right in balance.json,
sales.json and payouts.json.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any, cast

import httpx
import orjson
import pytest
from sqlalchemy import Engine, select

from pkgcat import events
from pkgcat.client import Client
from pkgcat.storage import payouts, store
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from tests.client.conftest import BASE, InProcess, invoke
from tests.conftest import Api, AppFactory
from tests.money.conftest import DAY, Sell, Time, money_of, purchase, scheduler_of
from tests.webhooks.conftest import PASSPHRASE

MONEY_EVENTS = ("payout.paid", "payout.failed", "balance.available")
_MONEY = {
    "store_platform": "test",
    "payout_hold_days": 0,
    "payout_days": "*",
    "payout_minimum": "1 USD",
}


@pytest.fixture
def money_api(make_api: AppFactory) -> Api:
    return make_api(**_MONEY)


@pytest.fixture
def alpha(admin: CatalogueAdmin) -> str:
    """A key of alpha-a (source Alpha) with the money scope."""
    return admin.create_key("Alpha", "alpha-a", ("money",)).secret_key


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.json()["code"] == 0
    return response.json()["response"]


def refund(api: Api, key: str, idempotency: str | None = None, **fields: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    if idempotency is not None:
        headers["idempotency-key"] = idempotency
    response: httpx.Response = api.http.post(
        "/1.0/purchase/refund.json", json=fields, headers=headers
    )
    return response


def _race(engines: list[Engine], clock: Time, **over: Any) -> None:
    """One scheduler run per engine (a host each), started at once."""
    start = threading.Barrier(len(engines))

    def host(each: Engine) -> None:
        scheduler = scheduler_of(each, clock, **over)
        start.wait()
        scheduler.run_once()

    threads = [threading.Thread(target=host, args=(each,)) for each in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _sale(api: Api, key: str, txn: str) -> dict[str, Any]:
    found = ok(api.get("/1.0/source/sales.json", key, start="2024-03-01"))
    (sale,) = [s for s in found["sales"] if s["txn_id"] == txn]
    return dict(sale)


def test_a_sale_is_pending_then_available_then_paid_once_and_a_refund_after_it_adds_up(
    money_api: Api,
    alpha: str,
    engine: Engine,
    database_url: str,
    sell: Sell,
    time_: Time,
) -> None:
    """Neither read existed: balance.json and payouts.json answered code 1."""
    money_of(engine, time_).connect(1, "https://seller.test/done", "https://seller.test/again")
    txn = sell("9.00", terms=store.SaleTerms(Decimal(15), hold_seconds=0))

    [usd] = ok(money_api.get("/1.0/source/balance.json", alpha))["balances"]
    assert (usd["currency"], usd["test"], usd["pending"], usd["available"]) == (
        "USD", True, "7.65", "0.00",  # 9.00 less 15 %: 1.35
    )  # fmt: skip
    assert usd["next_payout"]["amount"] == "7.65"  # released by then (the hold is 0 days)
    assert ok(money_api.get("/1.0/source/payouts.json", alpha))["payouts"] == []

    scheduler_of(engine, time_, payout_minimum="100 USD").run_once()  # released, not paid
    [usd] = ok(money_api.get("/1.0/source/balance.json", alpha))["balances"]
    assert (usd["pending"], usd["available"]) == ("0.00", "7.65")

    engines = [engine_for(database_url) for _ in range(2)]
    try:
        for _round in range(2):
            _race(engines, time_)
    finally:
        for each in engines:
            each.dispose()
    page = ok(money_api.get("/1.0/source/payouts.json", alpha))
    [payout] = page["payouts"]
    assert (payout["amount"], payout["status"], payout["test"], page["has_more"]) == (
        "7.65", "paid", True, False,
    )  # fmt: skip
    assert [(e["kind"], e["txn_id"], e["available"]) for e in payout["entries"]] == [
        ("release", txn, "7.65"), ("payout", None, "-7.65"),
    ]  # fmt: skip
    [usd] = ok(money_api.get("/1.0/source/balance.json", alpha))["balances"]
    assert (usd["pending"], usd["available"]) == ("0.00", "0.00")

    time_.now += DAY
    made = ok(refund(money_api, alpha, "r-1", txn_id=txn, amount="4.00"))
    assert (made["txn_id"], made["amount"], made["status"], made["test"]) == (
        txn, "4.00", "succeeded", True,
    )  # fmt: skip
    assert ok(refund(money_api, alpha, "r-1", txn_id=txn, amount="4.00")) == made  # once
    [usd] = ok(money_api.get("/1.0/source/balance.json", alpha))["balances"]
    assert (usd["pending"], usd["available"]) == ("0.00", "-3.40")  # 4.00 less its 0.60
    assert "below the minimum" in usd["next_payout"]["blocked"]
    assert _sale(money_api, alpha, txn)["status"] == "Completed"  # in part: still owned

    rest = ok(refund(money_api, alpha, "r-2", txn_id=txn))
    assert rest["amount"] == "5.00"
    assert purchase(engine, txn)["status"] == "Refunded"
    sale = _sale(money_api, alpha, txn)
    assert (sale["status"], sale["gross"], sale["commission"], sale["net"]) == (
        "Refunded", "9.00", "1.35", "7.65",
    )  # fmt: skip
    [usd] = ok(money_api.get("/1.0/source/balance.json", alpha))["balances"]
    assert (usd["pending"], usd["available"]) == ("0.00", "-7.65")  # all of it given back
    [again] = ok(money_api.get("/1.0/source/payouts.json", alpha))["payouts"]
    assert again == payout  # what was paid stays as paid


def test_payouts_come_in_cursor_pages_newest_first(
    money_api: Api, alpha: str, engine: Engine, sell: Sell, time_: Time
) -> None:
    money_of(engine, time_).connect(1, "https://seller.test/done", "https://seller.test/again")
    for _day in range(3):
        sell("2.00")
        scheduler_of(engine, time_).run_once()
        time_.now += DAY
    first = ok(money_api.get("/1.0/source/payouts.json", alpha, limit="2"))
    assert (len(first["payouts"]), first["has_more"], first["limit"]) == (2, True, 2)
    second = ok(money_api.get("/1.0/source/payouts.json", alpha, limit="2",
                              cursor=first["cursor"]))  # fmt: skip
    assert (len(second["payouts"]), second["has_more"], second["cursor"]) == (1, False, None)
    periods = [p["period"] for p in first["payouts"] + second["payouts"]]
    assert periods == ["2024-04-02", "2024-04-01", "2024-03-31"]
    beta = money_api.keys["beta-a"]  # another source sees none of them
    assert ok(money_api.get("/1.0/source/payouts.json", beta))["payouts"] == []
    assert ok(money_api.get("/1.0/source/balance.json", beta))["balances"] == []


def test_a_refund_needs_the_money_scope_and_a_purchase_of_the_callers_source(
    money_api: Api, admin: CatalogueAdmin, engine: Engine, sell: Sell
) -> None:
    txn = sell("9.00")
    reader = money_api.keys["alpha-a"]  # read only
    refused = refund(money_api, reader, txn_id=txn)
    assert (refused.status_code, refused.json()["code"]) == (403, 9)
    beta = admin.create_key("Beta", "beta-a", ("money",)).secret_key
    other = refund(money_api, beta, txn_id=txn)
    assert (other.status_code, other.json()["code"]) == (400, 2)
    assert other.json()["response"].startswith("txn_id:")
    alpha = admin.create_key("Alpha", "alpha-a", ("money",)).secret_key
    too_much = refund(money_api, alpha, txn_id=txn, amount="9.01")
    assert (too_much.status_code, too_much.json()["code"]) == (400, 2)
    assert too_much.json()["response"].startswith("amount:")
    assert purchase(engine, txn)["status"] == "Completed"


def test_the_typed_client_and_pkgcat_client_read_and_refund(
    money_api: Api, alpha: str, engine: Engine, sell: Sell, time_: Time
) -> None:
    money_of(engine, time_).connect(1, "https://seller.test/done", "https://seller.test/again")
    paid = sell("2.00")
    scheduler_of(engine, time_).run_once()
    time_.now += DAY
    held = sell("9.00")
    with Client(BASE, alpha, transport=InProcess(money_api.http)) as client:
        [usd] = client.balance()
        assert (usd.currency, usd.test, usd.pending, usd.available) == (
            "USD", True, Decimal("9.00"), Decimal("0.00"),
        )  # fmt: skip
        [payout] = list(client.iter_payouts(page_size=1))
        assert (payout.amount, payout.status) == (Decimal("2.00"), "paid")
        assert [e.txn_id for e in payout.entries] == [paid, None]
        made = client.refund(held, "1.50", idempotency_key="cli-1")
        assert (made.amount, made.status, made.test) == (Decimal("1.50"), "succeeded", True)
        assert client.refund(held, "1.50", idempotency_key="cli-1") == made
    transport = InProcess(money_api.http)
    shown = invoke(transport, alpha, "money", "refund", held, "--json")
    assert shown.exit_code == 0, shown.output
    assert '"amount": "7.50"' in shown.stdout
    listed = invoke(transport, alpha, "money", "balance")
    assert listed.exit_code == 0, listed.output
    assert "USD" in listed.stdout
    pages = invoke(transport, alpha, "money", "payouts", "--limit", "1")
    assert pages.exit_code == 0, pages.output
    assert payout.id in pages.stdout
    assert purchase(engine, held)["status"] == "Refunded"


def test_sales_and_buyers_show_gross_commission_fee_and_net_that_add_up_to_the_cent(
    money_api: Api, alpha: str, sell: Sell
) -> None:
    """net was gross - commission: the platform's fee, recorded on the purchase, was not in
    it, so sales.json said 7.65 where the ledger credited 7.09."""
    txn = sell("9.00", terms=store.SaleTerms(Decimal(15), hold_seconds=0, fee=56))
    sale = _sale(money_api, alpha, txn)
    assert (sale["gross"], sale["commission"], sale["fee"], sale["net"]) == (
        "9.00", "1.35", "0.56", "7.09",
    )  # fmt: skip
    found = ok(money_api.get("/1.0/source/sales.json", alpha, start="2024-03-01"))
    [usd] = [t for t in found["totals"] if t["currency"] == "USD"]
    sums = {k: sum(Decimal(s[k]) for s in found["sales"] if s["currency"] == "USD"
                   and s["status"] == "Completed") for k in ("gross", "commission", "fee", "net")}  # fmt: skip
    assert {k: Decimal(usd[k]) for k in sums} == sums
    assert Decimal(usd["net"]) == Decimal(usd["gross"]) - Decimal(usd["commission"]) - Decimal(
        usd["fee"]
    )
    buyers = ok(money_api.get("/1.0/package/buyers.json", alpha, package="com.alpha.paid"))
    (buyer,) = [b for b in buyers["buyers"] if b["txn_id"] == txn]
    assert (buyer["total"], buyer["commission"], buyer["fee"], buyer["net"]) == (
        "9.00", "1.35", "0.56", "7.09",
    )  # fmt: skip
    [balance] = ok(money_api.get("/1.0/source/balance.json", alpha))["balances"]
    assert balance["pending"] == sale["net"]  # what the ledger credits is what sales.json says


def test_a_release_and_a_payout_paid_or_failed_are_told_to_the_sources_webhooks(
    make_api: AppFactory,
    admin: CatalogueAdmin,
    engine: Engine,
    sell: Sell,
    time_: Time,
) -> None:
    """No such events were declared: payouts moved the ledger in silence."""
    api = make_api(**_MONEY, webhook_passphrase=PASSPHRASE, webhook_allow_loopback=True,
                   webhook_delivery="separate")  # fmt: skip
    hooks = admin.create_key("Alpha", "alpha-a", ("webhooks",)).secret_key
    created = api.http.post(
        "/1.0/webhook/create.json",
        json={"url": "http://127.0.0.1:9/in", "events": list(MONEY_EVENTS)},
        headers={"authorization": f"Bearer {hooks}"},
    )
    ok(created)
    money_of(engine, time_).connect(1, "https://seller.test/done", "https://seller.test/again")
    txn = sell("9.00", terms=store.SaleTerms(Decimal(15), hold_seconds=0))
    sell("3.00", source_id=2, package_id=5)  # Beta's: nobody hears it
    scheduler_of(engine, time_).run_once()
    [payout] = money_of(engine, time_).payouts(1).payouts
    with engine.begin() as db:  # the bank returns it days later, as Stripe tells
        assert payouts.fail(db, payout.id, code="account_closed", message="closed", now=time_.now)
        assert not payouts.fail(db, payout.id, code="account_closed", message="closed",
                                now=time_.now)  # fmt: skip
    told = _told(engine)
    assert [(name, source) for name, source, _ in told] == [
        ("balance.available", 1), ("payout.paid", 1), ("payout.failed", 1),
    ]  # fmt: skip
    assert told[0][2] == {"currency": "USD", "test": True, "amount": "7.65", "txn_id": txn}
    assert told[1][2] | {"id": None} == {
        "id": None, "currency": "USD", "test": True, "period": "2024-03-31", "amount": "7.65",
        "status": "paid", "failure_code": None, "failure_message": None,
    }  # fmt: skip
    assert (told[2][2]["status"], told[2][2]["failure_message"]) == ("failed", "closed")
    body = events.read("payout.failed", 1, told[2][2]).body(cast(events.Renderer, None))
    assert (body.live, body.data["id"]) == (False, payout.id)  # test money: not live


def _told(engine: Engine) -> list[tuple[str, int, Any]]:
    with engine.connect() as db:
        rows = db.execute(
            select(t.webhook_events.c.type, t.webhook_events.c.source_id, t.webhook_events.c.data)
            .where(t.webhook_events.c.type.in_(MONEY_EVENTS))
            .order_by(t.webhook_events.c.seq)
        ).all()
    return [(row[0], row[1], orjson.loads(row[2])) for row in rows]
