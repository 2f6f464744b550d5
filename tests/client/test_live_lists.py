"""API 1.1 through the client, against our server in-process, in shape A and in shape B."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from decimal import Decimal

import httpx
import pytest
from sqlalchemy import insert

from pkgcat.client import (
    AsyncClient,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    Purchase,
)
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import write_transaction
from tests import factories as f
from tests.client.conftest import BASE, Connect
from tests.conftest import AppFactory, Clock

RELEASED = f.T0


@pytest.mark.parametrize("app", ["alpha-a", "alpha-b"])
def test_packages_of_the_callers_source(connect: Connect, app: str) -> None:
    client = connect(app)
    page = client.packages()
    assert [p.package for p in page.packages] == [
        "com.alpha.free", "com.alpha.offline", "com.alpha.other", "com.alpha.paid",
    ]  # fmt: skip
    assert (page.has_more, page.cursor, page.limit) == (False, None, 25)
    by_id = {p.package: p for p in page.packages}
    assert by_id["com.alpha.free"].price == Decimal("0.00")
    assert by_id["com.alpha.free"].paid is False
    assert by_id["com.alpha.offline"].online is False
    assert by_id["com.alpha.paid"].price == Decimal("1.99")
    assert by_id["com.alpha.paid"].updated == RELEASED  # shape B's wall time, read in UTC
    assert by_id["com.alpha.paid"].rating == 4.2  # 42 over 10 votes
    assert [p.package for p in client.packages(paid=True, online=True).packages] == [
        "com.alpha.other", "com.alpha.paid",
    ]  # fmt: skip


def test_iter_packages_follows_cursors_to_the_same_list(connect: Connect) -> None:
    client = connect("alpha-a")
    whole = client.packages().packages
    first = client.packages(limit=1)
    assert first.has_more
    assert first.cursor is not None
    assert tuple(client.iter_packages(page_size=1)) == whole


def test_check_by_nickname_and_account(
    admin: CatalogueAdmin, connect: Connect, clock: Clock
) -> None:
    admin.load(
        purchases=[
            f.purchase(1, None, clock.now - timedelta(days=4), nickname="ada", account="acct-ada",
                       txn_id="ADA-SOURCE"),
            f.purchase(1, 1, clock.now - timedelta(days=2), nickname="ada", account=None,
                       txn_id="ADA-PKG"),
            f.purchase(1, 4, clock.now - timedelta(days=1), nickname="bob", txn_id="BOB-REF",
                       status="Refunded", account=None),
        ]
    )  # fmt: skip
    for app in ("alpha-a", "alpha-b"):
        client = connect(app)
        owned = client.check("com.alpha.paid", nickname="ada")
        assert owned.owned is True
        assert owned.since == clock.now - timedelta(days=4)  # the earliest purchase that counts
        assert owned.purchase == Purchase("ADA-SOURCE", "source")
        assert client.check("com.alpha.paid", account="acct-ada").owned is True
        refunded = client.check("com.alpha.other", nickname="bob")
        assert (refunded.owned, refunded.since, refunded.purchase) == (False, None, None)


def test_check_by_device_and_model(admin: CatalogueAdmin, connect: Connect, clock: Clock) -> None:
    admin.load(
        purchases=[f.purchase(1, 1, clock.now - timedelta(days=2), nickname="ann", txn_id="ANN-1")]
    )
    with write_transaction(admin.engine) as db:
        db.execute(
            insert(t.buyer_devices),
            [{"source_id": 1, "nickname": "ann", "udid": "UDID-ANN", "device_model": "iPad8,1"}],
        )
    client = connect("alpha-b")
    owned = client.check("com.alpha.paid", udid="UDID-ANN")
    assert (owned.owned, owned.purchase) == (True, Purchase("ANN-1", "package"))
    assert owned.since == clock.now - timedelta(days=2)
    assert client.check("com.alpha.paid", udid="UDID-ANN", model="iPad8,1").owned is True
    assert client.check("com.alpha.paid", udid="UDID-ANN", model="iPhone9,1").owned is False
    with pytest.raises(InvalidArgumentError) as alone:
        client.check("com.alpha.paid", nickname="ann", model="iPad8,1")
    assert alone.value.parameter == "model"


def test_check_errors(connect: Connect) -> None:
    client = connect("alpha-a")
    with pytest.raises(InvalidArgumentError) as nobody:
        client.check("com.alpha.paid")
    assert nobody.value.parameter is not None
    with pytest.raises(InvalidArgumentError):
        client.check("com.alpha.paid", nickname="a", account="b")
    with pytest.raises(PermissionDeniedError):
        client.check("com.beta.paid", nickname="a")
    with pytest.raises(NotFoundError):
        client.check("com.nobody.nothing", nickname="a")


def test_sales_walk_and_totals(admin: CatalogueAdmin, connect: Connect, clock: Clock) -> None:
    admin.load(
        purchases=[
            f.purchase(1, 4, clock.now - timedelta(hours=n), txn_id=f"W-{n:03d}", total="4.99",
                       commission="0.75")
            for n in range(1, 41)
        ]
        + [f.purchase(1, 1, clock.now - timedelta(hours=3), txn_id="R-1", status="Chargeback")]
    )  # fmt: skip
    for app in ("alpha-a", "alpha-b"):
        client = connect(app)
        pages = list(client.sales_pages(page_size=7))
        assert len(pages) == 7  # 41 purchases and the catalogue's 4: 6 full pages and one of 3
        sales = [s for page in pages for s in page.sales]
        assert len(sales) == len({s.txn_id for s in sales}) == 45
        assert [s.date for s in sales] == sorted((s.date for s in sales), reverse=True)
        assert all(page.totals == pages[0].totals for page in pages)
        (usd,) = pages[0].totals
        completed = [s for s in sales if s.status == "Completed"]
        assert usd.sales == len(completed) == 44
        assert usd.gross == sum(s.gross for s in completed)
        assert usd.net == usd.gross - usd.commission == sum(s.net for s in completed)
        assert (usd.refunds, usd.refunded) == (1, Decimal("1.99"))
        whole_source = [s for s in sales if s.allowed_for == "source"]
        assert [s.package for s in whole_source] == [None]
        only = list(client.iter_sales(package_id="com.alpha.paid", status="chargeback"))
        assert [s.txn_id for s in only] == ["R-1"]
        assert pages[0].end == clock.now.date()
        assert pages[0].start == clock.now.date() - timedelta(days=29)


def test_sales_range_errors(connect: Connect, clock: Clock) -> None:
    client = connect("alpha-a")
    with pytest.raises(InvalidArgumentError) as late:
        client.sales(end=clock.now.date() + timedelta(days=1))
    assert late.value.parameter == "end"
    with pytest.raises(InvalidArgumentError) as long:
        client.sales(start=clock.now.date() - timedelta(days=400))
    assert long.value.parameter is not None
    with pytest.raises(InvalidArgumentError) as forged:
        client.sales(cursor="not-a-cursor")
    assert forged.value.parameter == "cursor"


def test_buyers_in_cursor_mode_walk_in_fewer_requests(
    admin: CatalogueAdmin, make_api: AppFactory, connect: Connect, clock: Clock
) -> None:
    admin.load(purchases=[f.purchase(1, 4, clock.now - timedelta(minutes=n)) for n in range(1, 8)])
    client = connect("alpha-a")
    page = client.buyers("com.alpha.other", limit=3, cursor="")
    assert (page.limit, page.total, page.has_more, len(page.buyers)) == (3, 9, True, 3)
    walked = list(client.iter_buyers("com.alpha.other", page_size=3))
    assert len(walked) == len({b.txn_id for b in walked}) == 9
    numbered = [b for n in (1, 2, 3) for b in client.buyers("com.alpha.other", 3, n).buyers]
    assert walked == numbered  # the same buyers in the same order, however the list is walked
    with pytest.raises(InvalidArgumentError) as both:
        client.buyers("com.alpha.other", page=2, cursor="")  # type: ignore[call-overload]
    assert both.value.parameter is not None
    usage = client.usage(days=1)[-1].usage
    # One cursor page, a walk of three pages, three numbered pages, a refusal, this.
    assert usage == 1 + 3 + 3 + 1 + 1


def test_the_async_client_on_the_new_operations(make_api: AppFactory, clock: Clock) -> None:
    api = make_api(shape="B")

    async def run() -> tuple[int, bool, int]:
        transport = httpx.ASGITransport(app=api.http.app)
        async with AsyncClient(BASE, api.keys["alpha-a"], transport=transport) as client:
            packages = [p async for p in client.iter_packages(page_size=2)]
            owned = await client.check("com.alpha.paid", nickname="nobody")
            sales = [s async for s in client.iter_sales(page_size=2)]
            return len(packages), owned.owned, len(sales)

    assert asyncio.run(run()) == (4, False, 4)


@pytest.mark.parametrize("app", ["alpha-a", "alpha-b"])
def test_usage_by_range_and_by_operation(connect: Connect, clock: Clock, app: str) -> None:
    client = connect(app)
    client.package("com.alpha.paid")
    client.packages()
    client.check("com.alpha.paid", nickname="nobody")
    today = clock.now.date()
    days = client.usage(start=today - timedelta(days=2), end=today, by="operation")
    assert [d.day for d in days] == [today - timedelta(days=n) for n in (2, 1, 0)]
    assert days[0].operations == {}
    assert days[-1].operations == {
        "package/details": 1,
        "source/packages": 1,
        "package/check": 1,
        "application/usage": 1,
    }
    assert days[-1].usage == sum(days[-1].operations.values())
    plain = client.usage(start=today, end=today)
    assert [(d.day, d.operations) for d in plain] == [(today, None)]
    with pytest.raises(InvalidArgumentError) as both:
        client.usage(days=3, start=today)
    assert both.value.parameter is not None
