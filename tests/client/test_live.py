"""The client against our server in-process, in shape A and in shape B."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import pytest

from pkgcat.client import (
    AsyncClient,
    AuthenticationError,
    Buyer,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    Relation,
    UsageDay,
)
from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.client.conftest import BASE, Connect, Waits
from tests.conftest import AppFactory, Clock

RELEASED = f.T0  # every factory package's release instant


def test_usage_in_both_shapes(connect: Connect, clock: Clock) -> None:
    for app in ("alpha-a", "alpha-b"):
        days = connect(app).usage(days=3)
        assert [d.day for d in days] == [clock.now.date() - timedelta(days=n) for n in (3, 2, 1, 0)]
        assert all(d.date.utcoffset() == timedelta(0) and d.date.hour == 0 for d in days)
        assert [d.usage for d in days] == [0, 0, 0, 1]  # this request, counted; B sent it as "1"


def test_package_in_both_shapes_reads_the_same_values(connect: Connect) -> None:
    a = connect("alpha-a").package("com.alpha.paid")
    b = connect("alpha-b").package("com.alpha.paid")
    assert a.date == b.date == RELEASED
    assert (a.price, a.size, a.total_download, a.online) == (Decimal("1.99"), 1400, 1234, True)
    assert a.depends.groups == (
        (Relation("firmware", ">=", "14.0"),),
        (Relation("mobilesubstrate"),),
    )
    assert a.sha256 is not None
    assert a.architecture == "iphoneos-arm64"
    assert a.source.origin == "Alpha Origin"
    assert (b.sha256, b.architecture, b.replaces, b.source.origin) == (None, None, None, None)
    shared = [n for n in a.__slots__ if n not in {"architecture", "replaces", "sha256", "source"}]
    differing = {n for n in shared if getattr(a, n) != getattr(b, n)}
    assert differing == {"icon", "screenshots", "url"}  # the addresses' schemes, and only them
    assert b.icon == a.icon.replace("https://", "http://")


def test_a_shape_b_zone_needs_tz_to_read_the_right_instant(
    admin: CatalogueAdmin, connect: Connect
) -> None:
    issued = admin.load(
        applications=[f.application(5, 1, "alpha-b-paris", shape="B", timezone="Europe/Paris")]
    )
    key = issued[5].secret_key
    right = connect(key, tz="Europe/Paris").package("com.alpha.paid")
    assert right.date == RELEASED
    assert right.date.utcoffset() == timedelta(hours=1)
    wrong = connect(key).package("com.alpha.paid")
    assert wrong.date - RELEASED == timedelta(hours=1)  # 13:00 Paris read as 13:00 UTC
    days = connect(key, tz="Europe/Paris").usage(days=1)
    # Midnight of 31 March 2024 in Paris is still winter time: summer time starts at 02:00.
    assert days[-1].date == datetime(2024, 3, 31, tzinfo=UTC) - timedelta(hours=1)


def test_buyers_page_and_every_buyer(admin: CatalogueAdmin, connect: Connect, clock: Clock) -> None:
    admin.load(
        purchases=[
            f.purchase(1, 4, clock.now - timedelta(minutes=n), txn_id=f"M-{n:04d}")
            for n in range(1, 231)
        ]
    )
    for app in ("alpha-a", "alpha-b"):
        client = connect(app)
        page = client.buyers("com.alpha.other", limit=70, page=2)
        assert (page.start, page.limit, page.total, page.page) == (70, 70, 232, 2)
        assert len(page.buyers) == 70
        assert page.buyers[0].date == clock.now - timedelta(minutes=71)
        everyone = list(client.iter_buyers("com.alpha.other", page_size=100))
        assert len(everyone) == len({b.txn_id for b in everyone}) == 232
        assert {b.allowed_for for b in everyone} == {"package", "source"}
        assert sum(b.total for b in everyone) == 231 * Decimal("1.99") + Decimal("9.00")


def test_a_deployment_in_shape_b(connect: Connect) -> None:
    package = connect("alpha-a", settings={"shape": "B"}).package("com.alpha.paid")
    assert package.sha256 is None
    assert package.date == RELEASED


def test_the_key_in_the_query_works_on_our_server(connect: Connect) -> None:
    assert connect("beta-a", key_in="query").package("com.beta.paid").currency == "EUR"


def test_errors_from_our_server(connect: Connect) -> None:
    with pytest.raises(AuthenticationError) as auth:
        connect("pkc_" + "z" * 40).usage()
    assert (auth.value.code, auth.value.status) == (5, 401)
    assert auth.value.request_id
    client = connect("alpha-a")
    with pytest.raises(InvalidArgumentError) as days:
        client.usage(days=0)
    assert days.value.parameter == "days"
    with pytest.raises(InvalidArgumentError) as free:
        client.buyers("com.alpha.free")
    assert free.value.parameter == "package"
    with pytest.raises(NotFoundError):
        client.package("com.nobody.nothing")
    with pytest.raises(PermissionDeniedError) as denied:
        connect("beta-a").buyers("com.alpha.paid")
    assert (denied.value.code, denied.value.status) == (12, 403)


def test_the_rate_limit_is_retried_after_retry_after_then_reported(
    connect: Connect, waits: Waits
) -> None:
    client = connect("alpha-a", settings={"rate_limit": "2/minute"}, max_retries=1)
    client.usage(days=1)
    client.usage(days=1)
    with pytest.raises(RateLimitError) as caught:
        client.usage(days=1)  # the test clock does not move: still refused after the wait
    assert caught.value.retry_after is not None
    assert 1 <= caught.value.retry_after <= 60
    assert waits == [caught.value.retry_after]


def test_the_async_client_on_our_app(make_api: AppFactory, clock: Clock) -> None:
    api = make_api(shape="B")

    async def run() -> tuple[list[UsageDay], list[Buyer]]:
        transport = httpx.ASGITransport(app=api.http.app)
        async with AsyncClient(BASE, api.keys["alpha-a"], transport=transport) as client:
            days = await client.usage(days=2)
            buyers = [b async for b in client.iter_buyers("com.alpha.paid", page_size=2)]
            return days, buyers

    days, buyers = asyncio.run(run())
    assert [d.usage for d in days] == [0, 0, 1]
    assert days[-1].date == datetime(2024, 3, 31, tzinfo=UTC)
    assert [b.txn_id for b in buyers] == ["P-NEW", "S-MID", "P-OLD"]
    assert buyers[0].date == clock.now - timedelta(days=1)
