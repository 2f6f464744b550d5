"""Many requests at once: every one counted, durably, before it is answered."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from pkgcat.app import create_app
from pkgcat.config import Settings
from tests.conftest import Clock, stored_count

USAGE = "/1.0/application/usage.json"
DETAILS = "/1.0/package/details.json"


def test_concurrent_requests_are_all_counted_before_their_answers(
    database_url: str, clock: Clock, catalogue: dict[str, str]
) -> None:
    app = create_app(Settings(database_url=database_url, rate_limit="1000/minute"), clock=clock)
    key = catalogue["alpha-a"]

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            answers = await asyncio.gather(
                *(
                    http.get(DETAILS, params={"secret_key": key, "package": "com.alpha.paid"})
                    for _ in range(60)
                )
            )
            # Each answer came after its count was committed: the file holds all of them.
            assert stored_count(database_url, 1) == 60
            usage = await http.get(USAGE, params={"secret_key": key, "days": 1})
            return [*answers, usage]

    responses = asyncio.run(burst())
    assert all(r.status_code == 200 for r in responses)
    assert responses[-1].json()["response"][-1]["usage"] == 61
    assert stored_count(database_url, 1) == 61


def test_no_answer_leaves_before_its_count_is_in_the_file(
    database_url: str, clock: Clock, catalogue: dict[str, str]
) -> None:
    app = create_app(Settings(database_url=database_url, rate_limit="1000/minute"), clock=clock)
    seen_at_answer: list[int] = []

    async def watched(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen_at_answer.append(stored_count(database_url, 1))
            await send(message)

        await app(scope, receive, sending)

    async def burst() -> None:
        transport = httpx.ASGITransport(app=watched)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            await asyncio.gather(
                *(
                    http.get(USAGE, params={"secret_key": catalogue["alpha-a"], "days": 1})
                    for _ in range(30)
                )
            )

    asyncio.run(burst())
    # The n-th answer to leave saw at least n counts already committed by others' connections.
    assert len(seen_at_answer) == 30
    assert all(seen >= n for n, seen in enumerate(seen_at_answer, start=1))
