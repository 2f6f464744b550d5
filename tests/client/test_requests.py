"""What the client sends (key placement, parameters), its retries, and paging, on a server double."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from pkgcat.client import (
    APIConnectionError,
    AsyncClient,
    Buyer,
    Client,
    PkgcatError,
    ProtocolError,
    RateLimitError,
    ServerError,
)
from tests.client.conftest import BASE, KEY, Double, Waits, answer, recorded

USAGE = recorded("usage_a")["response"]


def ok() -> httpx.Response:
    return answer(0, USAGE)


def client(double: Double, waits: Waits, **options: Any) -> Client:
    return Client(BASE, KEY, transport=double.transport, sleep=waits, **options)


# --- what goes on the wire -------------------------------------------------------------------


def test_the_key_travels_in_the_bearer_header_by_default(waits: Waits) -> None:
    double = Double(ok())
    client(double, waits).usage(days=7)
    request = double.requests[0]
    assert request.method == "GET"
    assert request.url.path == "/1.0/application/usage.json"
    assert dict(request.url.params) == {"days": "7"}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(request.url)
    assert request.headers["user-agent"].startswith("pkgcat-client/")


def test_key_in_query_sends_secret_key_and_no_header(waits: Waits) -> None:
    double = Double(answer(0, recorded("details_a")["response"]))
    client(double, waits, key_in="query").package("com.havoclabs.velvet")
    request = double.requests[0]
    assert request.url.path == "/1.0/package/details.json"
    assert dict(request.url.params) == {"package": "com.havoclabs.velvet", "secret_key": KEY}
    assert "authorization" not in request.headers


def test_buyers_parameters_and_a_base_url_with_a_path(waits: Waits) -> None:
    double = Double(answer(0, recorded("buyers_a")["response"]))
    Client(BASE + "/api/", KEY, transport=double.transport).buyers("p.q", limit=2, page=2)
    url = double.requests[0].url
    assert url.path == "/api/1.0/package/buyers.json"
    assert dict(url.params) == {"package": "p.q", "limit": "2", "page": "2"}


@pytest.mark.parametrize(
    ("args", "options", "message"),
    [
        (("ftp://x", KEY), {}, "base_url"),
        (("catalogue.test", KEY), {}, "base_url"),
        ((BASE, ""), {}, "secret_key"),
        ((BASE, " pkc_x"), {}, "secret_key"),
        ((BASE, "pkc_AbCd…"), {}, "secret_key"),
        ((BASE, "pkc_a\nb"), {}, "secret_key"),
        ((BASE, KEY), {"key_in": "cookie"}, "key_in"),
        ((BASE, KEY), {"max_retries": -1}, "max_retries"),
        ((BASE, KEY), {"tz": "Mars/Olympus"}, "tz"),
        (("http://[::1", KEY), {}, "base_url"),
    ],
)
def test_bad_configuration_is_refused_at_construction(
    args: tuple[str, str], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Client(*args, **options)


def test_the_key_is_not_in_the_clients_repr() -> None:
    with Client(BASE, KEY) as c:
        assert KEY not in repr(c)
        assert KEY not in repr(vars(c))


def test_a_closed_client_refuses_to_send(waits: Waits) -> None:
    with client(Double(ok()), waits) as c:
        c.usage()
    with pytest.raises(RuntimeError):
        c.usage()


# --- retries ---------------------------------------------------------------------------------


def test_429_waits_what_retry_after_says_then_succeeds(waits: Waits) -> None:
    double = Double(answer(13, "slow down", headers={"Retry-After": "3"}), ok())
    assert len(client(double, waits).usage()) == 4
    assert waits == [3.0]
    assert len(double.requests) == 2
    assert double.requests[1].headers["authorization"] == f"Bearer {KEY}"


def test_429_without_a_delay_backs_off(waits: Waits) -> None:
    double = Double(httpx.Response(429, text="busy"), ok())
    client(double, waits).usage()
    assert len(waits) == 1
    assert 0.25 <= waits[0] <= 0.5


def test_429_with_a_wait_too_long_goes_to_the_caller_at_once(waits: Waits) -> None:
    double = Double(answer(13, "slow down", headers={"Retry-After": "3600"}), ok())
    with pytest.raises(RateLimitError) as caught:
        client(double, waits).usage()
    assert caught.value.retry_after == 3600
    assert waits == []
    assert len(double.requests) == 1


def test_5xx_backs_off_exponentially_with_jitter(waits: Waits) -> None:
    double = Double(
        httpx.Response(502, text="bad gateway"),
        answer(15, "internal error"),
        httpx.Response(503, text="unavailable"),
        ok(),
    )
    assert client(double, waits, max_retries=3).usage()[0].usage == 143
    assert len(double.requests) == 4
    for wait, (low, high) in zip(waits, [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0)], strict=True):
        assert low <= wait <= high


def test_backoff_is_capped(waits: Waits) -> None:
    double = Double(httpx.Response(500, text="down"))
    with pytest.raises(ServerError):
        client(double, waits, max_retries=7).usage()
    assert len(waits) == 7
    assert all(4.0 <= wait <= 8.0 for wait in waits[4:])


def test_retries_are_bounded_by_max_retries(waits: Waits) -> None:
    double = Double(answer(15, "internal error; request id x-1", headers={"X-Request-Id": "x-1"}))
    with pytest.raises(ServerError) as caught:
        client(double, waits, max_retries=2).usage()
    assert len(double.requests) == 3
    assert len(waits) == 2
    assert caught.value.request_id == "x-1"


def test_no_retry_with_max_retries_zero(waits: Waits) -> None:
    double = Double(httpx.Response(503, text="down"), ok())
    with pytest.raises(ServerError):
        client(double, waits, max_retries=0).usage()
    assert len(double.requests) == 1


@pytest.mark.parametrize("error", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
def test_connection_errors_are_retried(waits: Waits, error: Exception) -> None:
    double = Double(error, error, ok())
    assert client(double, waits).usage()[-1].usage == 10
    assert len(double.requests) == 3
    assert len(waits) == 2


def test_connection_errors_past_the_retries_raise_api_connection_error(waits: Waits) -> None:
    double = Double(httpx.ConnectError("refused"))
    with pytest.raises(APIConnectionError) as caught:
        client(double, waits, max_retries=1).usage()
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert len(double.requests) == 2


def test_an_unsupported_protocol_is_not_retried(waits: Waits) -> None:
    double = Double(httpx.UnsupportedProtocol("no"), ok())
    with pytest.raises(APIConnectionError):
        client(double, waits).usage()
    assert len(double.requests) == 1


@pytest.mark.parametrize("code", [1, 2, 5, 6, 7, 8, 12])
def test_4xx_other_than_429_are_never_retried(waits: Waits, code: int) -> None:
    double = Double(answer(code, "no"), ok())
    with pytest.raises(PkgcatError):
        client(double, waits).usage()
    assert len(double.requests) == 1
    assert waits == []


def test_a_protocol_error_is_not_retried(waits: Waits) -> None:
    double = Double(httpx.Response(200, text="<html>"), ok())
    with pytest.raises(ProtocolError):
        client(double, waits).usage()
    assert len(double.requests) == 1


def test_the_async_client_retries_the_same_way(waits: Waits) -> None:
    double = Double(
        answer(13, "slow down", headers={"Retry-After": "2"}),
        httpx.ConnectError("refused"),
        httpx.Response(500, text="oops"),
        ok(),
    )

    async def run() -> int:
        async with AsyncClient(
            BASE, KEY, transport=double.transport, sleep=waits.asleep, max_retries=3
        ) as c:
            return (await c.usage(days=3))[0].usage

    assert asyncio.run(run()) == 143
    assert waits[0] == 2.0
    assert 0.5 <= waits[1] <= 1.0
    assert 1.0 <= waits[2] <= 2.0
    assert double.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_the_async_client_maps_errors_and_key_in_query(waits: Waits) -> None:
    double = Double(answer(12, "not yours"))

    async def run() -> None:
        async with AsyncClient(BASE, KEY, transport=double.transport, key_in="query") as c:
            await c.buyers("p")

    with pytest.raises(PkgcatError, match="not yours") as caught:
        asyncio.run(run())
    assert type(caught.value).__name__ == "PermissionDeniedError"
    assert double.requests[0].url.params["secret_key"] == KEY


# --- paging ----------------------------------------------------------------------------------


def pages(total: int, applied_max: int = 100) -> Any:
    """A buyers endpoint before 1.1 over ``total`` numbered buyers, clamping the limit like ours.

    It knows no cursors: it ignores ``cursor`` and answers page 1 when no page is asked for.
    """
    template = recorded("buyers_a")["response"]["buyers"][0]

    def handle(request: httpx.Request) -> httpx.Response:
        limit = min(int(request.url.params["limit"]), applied_max)
        page = int(request.url.params.get("page", "1"))
        start = (page - 1) * limit
        buyers = [template | {"txn_id": f"T{n}"} for n in range(start, min(start + limit, total))]
        return answer(
            0, {"start": start, "limit": limit, "total": str(total), "page": page, "buyers": buyers}
        )

    return handle


@pytest.mark.parametrize(
    ("total", "page_size", "requests"),
    [(7, 3, 3), (6, 3, 3), (0, 100, 1), (250, 100, 3), (250, 500, 3)],
)
def test_iter_buyers_walks_every_page_and_stops_on_the_first_short_one(
    waits: Waits, total: int, page_size: int, requests: int
) -> None:
    double = Double(pages(total))
    seen = [b.txn_id for b in client(double, waits).iter_buyers("p", page_size=page_size)]
    assert seen == [f"T{n}" for n in range(total)]
    assert len(double.requests) == requests
    # The first request asks for cursor mode; a server without it answers page 1, and the
    # walk goes on by page numbers.
    assert double.requests[0].url.params["cursor"] == ""
    pages_asked = [int(r.url.params.get("page", "1")) for r in double.requests]
    assert pages_asked == list(range(1, requests + 1))


def test_async_iter_buyers(waits: Waits) -> None:
    double = Double(pages(5))

    async def run() -> list[Buyer]:
        async with AsyncClient(BASE, KEY, transport=double.transport) as c:
            return [b async for b in c.iter_buyers("p", page_size=2)]

    assert [b.txn_id for b in asyncio.run(run())] == ["T0", "T1", "T2", "T3", "T4"]
    assert len(double.requests) == 3
