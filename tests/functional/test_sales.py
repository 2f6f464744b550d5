"""source/sales.json: the sales ledger between two days of the application's zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import write_transaction
from tests import factories as f
from tests.conftest import Api, Clock

SALES = "/1.0/source/sales.json"


def ledger(api: Api, app: str = "alpha-a", **params: Any) -> dict[str, Any]:
    response = api.get(SALES, api.keys[app], **params)
    assert response.status_code == 200, response.text
    return response.json()["response"]  # type: ignore[no-any-return]  # checked by the schema


def refused(api: Api, http: int, code: int, app: str = "alpha-a", **params: Any) -> str:
    response = api.get(SALES, api.keys[app], **params)
    assert (response.status_code, response.json()["code"]) == (http, code), response.text
    message: str = response.json()["response"]
    return message


def txns(page: dict[str, Any]) -> list[str]:
    return [s["txn_id"] for s in page["sales"]]


def test_default_range_newest_first_with_fields(api: Api) -> None:
    page = ledger(api)
    assert (page["start"], page["end"]) == ("2024-03-02", "2024-03-31")
    assert txns(page) == ["P-NEW", "S-MID", "P-OLD", "O-OTHER"]
    assert page["sales"][1] == {
        "txn_id": "S-MID",
        "date": "2024-03-29T12:00:00+00:00",
        "package": None,
        "allowed_for": "source",
        "nickname": page["sales"][1]["nickname"],
        "status": "Completed",
        "gross": "9.00",
        "commission": "0.30",
        "fee": "0.00",
        "net": "8.70",
        "currency": "USD",
        "payment_platform": "paypal",
    }
    assert page["sales"][0]["package"] == "com.alpha.paid"
    assert page["totals"] == [
        {
            "currency": "USD",
            "sales": 4,
            "gross": "14.97",
            "commission": "1.20",
            "fee": "0.00",
            "net": "13.77",
            "refunds": 0,
            "refunded": "0.00",
        }
    ]
    assert (page["limit"], page["has_more"], page["cursor"]) == (25, False, None)


def test_both_shapes_answer_the_same(api: Api) -> None:
    assert ledger(api, "alpha-b") == ledger(api)


def test_start_and_end_are_inclusive_days(api: Api) -> None:
    assert txns(ledger(api, start="2024-03-28", end="2024-03-29")) == ["S-MID", "P-OLD"]
    assert txns(ledger(api, start="2024-03-30", end="2024-03-30")) == ["P-NEW"]
    assert txns(ledger(api, end="2024-03-28")) == ["P-OLD", "O-OTHER"]
    page = ledger(api, start="2024-03-29")
    assert (page["start"], page["end"], txns(page)) == (
        "2024-03-29",
        "2024-03-31",
        ["P-NEW", "S-MID"],
    )


def test_package_keeps_only_its_own_purchases(api: Api) -> None:
    page = ledger(api, package="com.alpha.paid")
    assert txns(page) == ["P-NEW", "P-OLD"]
    assert page["totals"][0]["sales"] == 2
    assert txns(ledger(api, package=" com.alpha.other ")) == ["O-OTHER"]


@pytest.fixture
def refunds(admin: CatalogueAdmin, clock: Clock) -> None:
    now = clock.now
    admin.load(
        purchases=[
            f.purchase(1, 1, now - timedelta(hours=5), txn_id="R-1", status="Refunded"),
            f.purchase(1, 4, now - timedelta(hours=6), txn_id="C-1", status="Chargeback",
                       total="4.99"),
            f.purchase(1, 1, now - timedelta(hours=7), txn_id="E-1", currency="EUR",
                       total="2.50", commission="0.40"),
        ]
    )  # fmt: skip


def test_status_filter_any_case(api: Api, refunds: None) -> None:
    assert txns(ledger(api, status="REFUNDED")) == ["R-1"]
    assert txns(ledger(api, status="chargeback")) == ["C-1"]
    assert txns(ledger(api, status="Completed")) == ["E-1", "P-NEW", "S-MID", "P-OLD", "O-OTHER"]
    refunded = ledger(api, status="refunded")["totals"]
    assert refunded == [
        {
            "currency": "USD",
            "sales": 0,
            "gross": "0.00",
            "commission": "0.00",
            "fee": "0.00",
            "net": "0.00",
            "refunds": 1,
            "refunded": "1.99",
        }
    ]


def test_totals_per_currency_sorted_and_refunds_apart(api: Api, refunds: None) -> None:
    eur, usd = ledger(api, limit=1)["totals"]
    assert eur == {
        "currency": "EUR",
        "sales": 1,
        "gross": "2.50",
        "commission": "0.40",
        "fee": "0.00",
        "net": "2.10",
        "refunds": 0,
        "refunded": "0.00",
    }
    assert (usd["sales"], usd["gross"], usd["refunds"], usd["refunded"]) == (4, "14.97", 2, "6.98")


def test_a_refund_changes_the_totals(admin: CatalogueAdmin, api: Api) -> None:
    before = ledger(api)["totals"][0]
    with write_transaction(admin.engine) as db:
        db.execute(
            update(t.purchases).where(t.purchases.c.txn_id == "S-MID").values(status="Refunded")
        )
    after = ledger(api)["totals"][0]
    assert (before["sales"], before["gross"], before["refunds"]) == (4, "14.97", 0)
    assert (after["sales"], after["gross"], after["net"]) == (3, "5.97", "5.07")
    assert (after["refunds"], after["refunded"]) == (1, "9.00")
    assert ledger(api)["sales"][1]["status"] == "Refunded"


@pytest.fixture
def many(admin: CatalogueAdmin, clock: Clock) -> None:
    admin.load(
        purchases=[
            f.purchase(
                1, 4 if n % 3 else None, clock.now - timedelta(minutes=n), txn_id=f"M-{n:04d}"
            )
            for n in range(1, 131)
        ]
    )


def walk(api: Api, app: str = "alpha-a", inserted: Any = None, **params: Any) -> list[str]:
    seen: list[str] = []
    cursor = None
    totals = None
    while True:
        page = ledger(api, app, cursor=cursor, **params)
        seen += txns(page)
        if totals is not None and inserted is None:
            assert page["totals"] == totals  # the whole ledger's, on every page
        totals = page["totals"]
        assert page["has_more"] is (page["cursor"] is not None)
        cursor = page["cursor"]
        if cursor is None:
            return seen
        if inserted is not None:
            inserted()


def test_a_walk_sees_every_sale_once_in_order(api: Api, many: None) -> None:
    seen = walk(api, limit=40)
    assert len(seen) == len(set(seen)) == 134
    assert seen[:3] == ["M-0001", "M-0002", "M-0003"]


def test_a_walk_sees_each_sale_once_while_purchases_arrive(
    admin: CatalogueAdmin, api: Api, clock: Clock, many: None
) -> None:
    before = set(walk(api, limit=100))
    arrivals = iter(range(1000))

    def arrive() -> None:
        n = next(arrivals)
        admin.load(
            purchases=[
                f.purchase(1, 1, clock.now - timedelta(seconds=n), txn_id=f"NEW-{n}"),
                # Also one older than everything seen so far, within the range.
                f.purchase(1, None, clock.now - timedelta(days=20, seconds=n), txn_id=f"OLD-{n}"),
            ]
        )

    seen = walk(api, inserted=arrive, limit=30)
    assert len(seen) == len(set(seen))
    assert before <= set(seen)
    assert not {s for s in seen if s.startswith("NEW-")}  # newer than the walk's first page


def test_cursors_are_bound_to_their_ledger(api: Api, many: None) -> None:
    cursor = ledger(api, limit=10)["cursor"]
    assert ledger(api, "alpha-b", limit=10, cursor=cursor)["sales"]  # the same source
    for app, params in (
        ("beta-a", {}),  # another source's
        ("alpha-a", {"status": "completed"}),
        ("alpha-a", {"start": "2024-03-03"}),
        ("alpha-a", {"end": "2024-03-30"}),
        ("alpha-a", {"package": "com.alpha.other"}),
    ):
        message = refused(api, 400, 2, app, limit=10, cursor=cursor, **params)
        assert message == "cursor: not a cursor of this list; start again without it"
    tampered = cursor[:5] + ("A" if cursor[5] != "A" else "B") + cursor[6:]
    refused(api, 400, 2, limit=10, cursor=tampered)
    refused(api, 400, 2, limit=10, cursor="A" * 513)
    buyers = api.get(
        "/1.0/package/buyers.json",
        api.keys["alpha-a"],
        package="com.alpha.other",
        limit=10,
        cursor="",
    ).json()["response"]["cursor"]
    refused(api, 400, 2, limit=10, cursor=buyers)  # another operation's


def test_a_source_never_sees_another_sources_sales(api: Api, many: None) -> None:
    page = ledger(api, "beta-a", start="2024-01-01", limit=100)
    assert txns(page) == ["B-1"]
    assert [t["currency"] for t in page["totals"]] == ["EUR"]
    for status in ("completed", "refunded"):
        assert set(txns(ledger(api, "beta-a", status=status))) <= {"B-1"}
    message = refused(api, 403, 12, "beta-a", package="com.alpha.paid")
    assert message.startswith("package: 'com.alpha.paid' belongs to another source")
    refused(api, 404, 8, "beta-a", package="com.alpha.offline")
    refused(api, 404, 8, package="com.nobody")


def test_day_boundaries_follow_the_zone_across_a_dst_change(
    admin: CatalogueAdmin, api: Api
) -> None:
    """Europe/Paris moves to summer time on 2024-03-31: that day lasts 23 hours."""

    def at(month: int, day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
        return datetime(2024, month, day, hour, minute, second, tzinfo=UTC)

    admin.load(
        purchases=[
            f.purchase(2, 5, at(3, 29, 22, 59, 59), txn_id="D-29-LAST"),
            f.purchase(2, 5, at(3, 29, 23, 0, 0), txn_id="D-30-FIRST"),
            f.purchase(2, 5, at(3, 30, 22, 59, 59), txn_id="D-30-LAST"),
            f.purchase(2, 5, at(3, 30, 23, 0, 0), txn_id="D-31-FIRST"),
            f.purchase(2, 5, at(3, 31, 1, 0, 0), txn_id="D-31-SUMMER"),
            f.purchase(2, 5, at(3, 31, 21, 59, 59), txn_id="D-31-LAST"),
            f.purchase(2, 5, at(3, 31, 22, 0, 0), txn_id="D-APRIL"),
        ]
    )
    day30 = ledger(api, "beta-paris", start="2024-03-30", end="2024-03-30")
    assert txns(day30) == ["D-30-LAST", "B-1", "D-30-FIRST"]
    day31 = ledger(api, "beta-paris", start="2024-03-31", end="2024-03-31")
    assert txns(day31) == ["D-31-LAST", "D-31-SUMMER", "D-31-FIRST"]
    assert [s["date"] for s in day31["sales"][:3]] == [
        "2024-03-31T23:59:59+02:00",
        "2024-03-31T03:00:00+02:00",
        "2024-03-31T00:00:00+01:00",
    ]
    # The same instants in UTC belong to other days.
    utc31 = ledger(api, "beta-a", start="2024-03-31", end="2024-03-31")
    assert txns(utc31) == ["D-APRIL", "D-31-LAST", "D-31-SUMMER"]


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"start": "2024-3-01"}, "start"),
        ({"start": "2024-02-30"}, "start"),
        ({"start": " 2024-03-01"}, "start"),
        ({"end": "yesterday"}, "end"),
        ({"end": "2024-04-01"}, "end"),  # after today
        ({"start": "2024-03-20", "end": "2024-03-10"}, "start"),
        ({"start": "2023-03-31", "end": "2024-03-31"}, "start"),  # 367 days
        ({"status": "pending"}, "status"),
        ({"status": ""}, "status"),
        ({"package": ""}, "package"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "%%%"}, "cursor"),
    ],
)
def test_invalid_arguments_are_code_2_naming_the_parameter(
    api: Api, params: dict[str, str], name: str
) -> None:
    message = refused(api, 400, 2, **params)
    assert message.startswith(f"{name}: "), message


def test_range_limits(api: Api) -> None:
    page = ledger(api, start="2023-04-01", end="2024-03-30")  # 365 days
    assert page["start"] == "2023-04-01"
    clamped = ledger(api, limit=500)
    assert clamped["limit"] == 100
    assert len(ledger(api, limit=1)["sales"]) == 1


def test_seller_operations_are_counted_under_their_names(api: Api) -> None:
    key = api.keys["alpha-a"]
    api.get(SALES, key)
    api.get(SALES, key, status="nonsense")  # refused, but counted as any request
    api.get("/1.0/package/check.json", key, package="com.alpha.paid", nickname="ada")
    api.get("/1.0/source/packages.json", key)
    today = api.get("/1.0/application/usage.json", key, days=1, by="operation").json()
    operations = today["response"][-1]["operations"]
    assert operations["source/sales"] == 2
    assert operations["package/check"] == 1
    assert operations["source/packages"] == 1
