"""A request does not ask asyncio for the running loop: on Python 3.11 each asking is a
``getpid`` system call, and the request path asked twice, three times with the rate limit in
Redis (docs/benchmarks.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import orjson
import pytest
from starlette.types import Message

from pkgcat.app import create_app
from pkgcat.config import Settings
from tests.conftest import Clock

DETAILS = "/1.0/package/details.json"
REQUESTS = 200


def _scope(path: str, query: bytes = b"", key: str = "") -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"test"), (b"authorization", f"Bearer {key}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


_REQUESTING: ContextVar[bool] = ContextVar("requesting", default=False)
"""True in the requests' tasks and what they start; false in the worker's own background
tasks (the indexes' publisher and follower), started at its start, which ask on a clock of
their own: on a busy machine the same requests take longer and would seem to ask more."""


def _askings(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """A list that grows by one each time a request, or what it starts, asks asyncio for the
    running loop."""
    asked: list[None] = []
    real: Callable[[], asyncio.AbstractEventLoop] = asyncio.events.get_running_loop

    def counted() -> asyncio.AbstractEventLoop:
        if _REQUESTING.get():
            asked.append(None)
        return real()

    # Both names: asyncio.current_task() reads the events module's, pkgcat the package's.
    monkeypatch.setattr(asyncio.events, "get_running_loop", counted)
    monkeypatch.setattr(asyncio, "get_running_loop", counted)
    return asked


def _serve(settings: Settings, clock: Clock, key: str, asked: list[None]) -> tuple[list[int], int]:
    """Statuses of REQUESTS details requests, sent 50 at a time, and the askings they made
    (the first two bursts, which find every part and cache new to the loop, left out)."""
    app = create_app(settings, clock=clock)
    statuses: list[int] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def burst() -> None:
        details = _scope(DETAILS, b"package=com.alpha.paid", key)
        requesting = _REQUESTING.set(True)  # the requests' tasks copy it
        try:
            await asyncio.gather(*(app(dict(details), receive, send) for _ in range(50)))
        finally:
            _REQUESTING.reset(requesting)

    async def caches() -> object:
        """What /readyz says of the worker's caches."""
        body = bytearray()

        async def read(message: Message) -> None:
            body.extend(message.get("body", b""))

        await app(_scope("/readyz"), receive, read)
        return orjson.loads(body).get("caches")

    async def main() -> int:
        # Started as a server starts it (PostgreSQL's catalogue then listens for changes and
        # keeps what it read).
        lifespan: asyncio.Queue[Message] = asyncio.Queue()
        sent: asyncio.Queue[Message] = asyncio.Queue()
        running = asyncio.ensure_future(
            app({"type": "lifespan", "asgi": {"version": "3.0"}}, lifespan.get, sent.put)
        )
        await lifespan.put({"type": "lifespan.startup"})
        assert (await sent.get())["type"] == "lifespan.startup.complete"
        await burst()
        # Until PostgreSQL's change feed listens, its caches are off and every request reads
        # the database: served, that lasts the worker's first moments only. The burst after
        # it fills them.
        for _ in range(1000):  # 10 s at most
            if await caches() == "current":
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the worker's caches never caught up")
        await burst()
        before = len(asked)
        for _ in range(REQUESTS // 50):
            await burst()
        askings = len(asked) - before
        await lifespan.put({"type": "lifespan.shutdown"})
        await running
        return askings

    return statuses, asyncio.run(main())


def test_a_request_does_not_ask_for_the_running_loop(
    database_url: str, clock: Clock, catalogue: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _askings(monkeypatch)
    settings = Settings(database_url=database_url, rate_limit="1000000/hour")
    statuses, askings = _serve(settings, clock, catalogue["alpha-a"], asked)
    assert statuses.count(200) == REQUESTS + 100
    # What is left comes a few times a batch of counts (asyncpg's own timeouts), so once a
    # request only when requests come one at a time: before, 2 a request on both databases.
    assert askings < REQUESTS // 4


def test_nor_with_the_rate_limit_in_redis(
    database_url: str,
    redis_url: str,
    clock: Clock,
    catalogue: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _askings(monkeypatch)
    settings = Settings(
        database_url=database_url,
        redis_url=redis_url,
        rate_limit="1000000/hour",
        rate_limit_namespace=f"test-loop-{id(asked)}",
    )
    statuses, askings = _serve(settings, clock, catalogue["alpha-a"], asked)
    assert statuses.count(200) == REQUESTS + 100
    # redis-py's timeouts ask a few times a batch too: before, just over 3 a request.
    assert askings < REQUESTS // 4
