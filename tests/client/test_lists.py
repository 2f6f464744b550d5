"""API 1.1 from recorded bodies: the cursor lists, the check, usage by range and by operation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from pkgcat.client import (
    AsyncClient,
    Client,
    Ownership,
    ProtocolError,
    Purchase,
    SalesTotal,
)
from tests.client.conftest import BASE, KEY, Double, answer, recorded


def client_for(*bodies: dict[str, Any], **options: Any) -> tuple[Client, Double]:
    double = Double(*(answer(0, body["response"]) for body in bodies))
    return Client(BASE, KEY, transport=double.transport, **options), double


def query(request: httpx.Request) -> dict[str, str]:
    return dict(request.url.params)


@pytest.mark.parametrize("shape", ["a", "b"])
def test_packages_page_in_both_shapes(shape: str) -> None:
    client, double = client_for(recorded(f"packages_{shape}"))
    page = client.packages(paid=True, online=False, limit=3)
    assert query(double.requests[0]) == {"paid": "1", "online": "0", "limit": "3"}
    assert double.requests[0].url.path == "/1.0/source/packages.json"
    assert (page.limit, page.has_more, page.cursor) == (3, True, "aGF2b2MtcGFnZS0y")
    prism, stash, velvet = page.packages
    assert (prism.price, prism.rating, prism.downloads, prism.votes) == (
        Decimal("0.99"), 4.21, 40311, 512,
    )  # fmt: skip
    assert prism.updated == datetime(2026, 3, 2, 9, 15, tzinfo=UTC)
    assert (stash.online, stash.paid, stash.price, stash.rating) == (False, False, Decimal(0), None)
    assert velvet.price is None  # a paid package whose price is not known yet


def test_iter_packages_follows_the_cursor_until_has_more_is_false() -> None:
    client, double = client_for(recorded("packages_a"), recorded("packages_last"))
    packages = list(client.iter_packages(online=True, page_size=3))
    assert [p.package for p in packages] == [
        "com.havoclabs.prism", "com.havoclabs.stash", "com.havoclabs.velvet",
    ]  # fmt: skip
    assert [query(r) for r in double.requests] == [
        {"online": "1", "limit": "3"},
        {"online": "1", "limit": "3", "cursor": "aGF2b2MtcGFnZS0y"},
    ]


def test_check_owned_through_a_source_purchase_and_not_owned() -> None:
    client, double = client_for(recorded("check_a"), recorded("check_not_owned"))
    owned = client.check("com.havoclabs.velvet", udid="00008101-A1B2", model="iPhone13,2")
    assert owned == Ownership(
        package="com.havoclabs.velvet",
        owned=True,
        since=datetime(2026, 11, 13, 15, 38, 38, tzinfo=UTC),
        purchase=Purchase("YMWEBUMLFZF7GGGL8", "source"),
    )
    assert query(double.requests[0]) == {
        "package": "com.havoclabs.velvet", "udid": "00008101-A1B2", "model": "iPhone13,2",
    }  # fmt: skip
    missing = client.check("com.havoclabs.velvet", nickname="nobody")
    assert (missing.owned, missing.since, missing.purchase) == (False, None, None)
    assert query(double.requests[1]) == {"package": "com.havoclabs.velvet", "nickname": "nobody"}


def test_sales_page_amounts_and_totals_per_currency() -> None:
    client, double = client_for(recorded("sales_a"))
    page = client.sales(
        start=date(2026, 10, 24), end=date(2026, 11, 22), status="completed", limit=3
    )
    assert query(double.requests[0]) == {
        "start": "2026-10-24", "end": "2026-11-22", "status": "completed", "limit": "3",
    }  # fmt: skip
    assert (page.start, page.end) == (date(2026, 10, 24), date(2026, 11, 22))
    first, whole_source, refunded = page.sales
    assert (first.gross, first.commission, first.net) == (
        Decimal("2.49"), Decimal("0.37"), Decimal("2.12"),
    )  # fmt: skip
    assert first.date == datetime(2026, 11, 15, 18, 45, 53, tzinfo=UTC)
    assert (whole_source.package, whole_source.allowed_for) == (None, "source")
    assert (refunded.status, refunded.currency) == ("Refunded", "EUR")
    assert [t.currency for t in page.totals] == ["EUR", "USD"]
    assert page.totals[0] == SalesTotal(
        "EUR", 3, Decimal("2.97"), Decimal("0.45"), Decimal("2.52"), 1, Decimal("0.99")
    )
    assert all(t.net == t.gross - t.commission for t in page.totals)


def test_iter_sales_walks_every_page_with_the_same_filters() -> None:
    last = recorded("sales_a")
    last["response"] |= {"sales": last["response"]["sales"][:1], "has_more": False, "cursor": None}
    client, double = client_for(recorded("sales_a"), last)
    sales = list(client.iter_sales(package_id="com.havoclabs.velvet", page_size=3))
    assert len(sales) == 4
    second = query(double.requests[1])
    assert second == {"package": "com.havoclabs.velvet", "limit": "3", "cursor": "c2FsZXMtcGFnZS0y"}


def test_usage_by_range_and_by_operation() -> None:
    client, double = client_for(recorded("usage_operations_a"), recorded("usage_a"))
    days = client.usage(start=date(2026, 11, 19), end=date(2026, 11, 22), by="operation")
    assert query(double.requests[0]) == {
        "start": "2026-11-19",
        "end": "2026-11-22",
        "by": "operation",
    }
    assert days[0].operations == {"package/details": 100, "package/buyers": 43}
    assert days[1].operations == {}
    assert all(sum((d.operations or {}).values()) <= d.usage for d in days)
    plain = client.usage()
    assert query(double.requests[1]) == {"days": "30"}  # as before 1.1
    assert all(d.operations is None for d in plain)


def test_buyers_in_cursor_mode_and_the_walk() -> None:
    last = recorded("buyers_cursor_a")
    last["response"] |= {"buyers": last["response"]["buyers"][:1], "has_more": False}
    last["response"]["cursor"] = None
    client, double = client_for(recorded("buyers_cursor_a"), recorded("buyers_cursor_a"), last)
    page = client.buyers("com.havoclabs.velvet", limit=2, cursor="")
    assert (page.limit, page.total, page.has_more, page.cursor) == (2, 300, True, "YnV5ZXJzLTI")
    assert query(double.requests[0]) == {
        "package": "com.havoclabs.velvet",
        "limit": "2",
        "cursor": "",
    }
    walked = list(client.iter_buyers("com.havoclabs.velvet", page_size=2))
    assert [b.txn_id for b in walked] == [
        "YMWEBUMLFZF7GGGL8", "2G069Z2B3FZ2K8XUR", "YMWEBUMLFZF7GGGL8",
    ]  # fmt: skip
    assert [query(r).get("cursor") for r in double.requests[1:]] == ["", "YnV5ZXJzLTI"]


def test_iter_buyers_on_a_server_without_cursors_goes_on_by_page_numbers() -> None:
    # A server before 1.1 ignores `cursor` and answers numbered pages.
    first = recorded("buyers_a")
    first["response"] |= {"start": 0, "page": 1}
    short = recorded("buyers_a")
    short["response"] |= {"buyers": short["response"]["buyers"][:1]}
    client, double = client_for(first, short)
    walked = list(client.iter_buyers("com.havoclabs.velvet", page_size=2))
    assert len(walked) == 3
    assert query(double.requests[1]) == {
        "package": "com.havoclabs.velvet",
        "limit": "2",
        "page": "2",
    }


@pytest.mark.parametrize(
    ("name", "change", "field"),
    [
        ("packages_a", lambda r: r.update(cursor=None), "response.cursor: null while has_more"),
        ("packages_a", lambda r: r["packages"][0].update(rating="high"), "packages[0].rating"),
        ("packages_a", lambda r: r["packages"][1].pop("price"), "packages[1].price: missing"),
        ("sales_a", lambda r: r.update(start="24-10-2026"), "response.start"),
        ("sales_a", lambda r: r["totals"][0].update(sales=-1), "totals[0].sales"),
        ("check_a", lambda r: r.update(owned="perhaps"), "response.owned"),
        ("usage_operations_a", lambda r: r[0].update(operations=[]), "response[0].operations"),
    ],
)
def test_an_unreadable_field_of_the_new_operations_names_it(
    name: str, change: Any, field: str
) -> None:
    body = recorded(name)
    change(body["response"])
    client, _ = client_for(body)
    call: Callable[[], object] = {
        "packages": lambda: client.packages(),
        "sales": lambda: client.sales(),
        "check": lambda: client.check("x", nickname="n"),
        "usage": lambda: client.usage(by="operation"),
    }[name.split("_")[0]]
    with pytest.raises(ProtocolError, match=field.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_the_async_iterators_follow_cursors_too() -> None:
    last = recorded("sales_a")
    last["response"] |= {"has_more": False, "cursor": None}
    double = Double(
        answer(0, recorded("packages_a")["response"]),
        answer(0, recorded("packages_last")["response"]),
        answer(0, recorded("sales_a")["response"]),
        answer(0, last["response"]),
        answer(0, recorded("check_a")["response"]),
    )

    async def run() -> tuple[list[str], list[str], Ownership]:
        async with AsyncClient(BASE, KEY, transport=double.transport) as client:
            packages = [p.package async for p in client.iter_packages(page_size=3)]
            sales = [s.txn_id async for s in client.iter_sales(page_size=3)]
            return packages, sales, await client.check("p", account="acct-1")

    packages, sales, owned = asyncio.run(run())
    assert owned.owned is True
    assert len(packages) == 3
    assert len(sales) == 6
    assert query(double.requests[3])["cursor"] == "c2FsZXMtcGFnZS0y"
    assert query(double.requests[4]) == {"package": "p", "account": "acct-1"}
