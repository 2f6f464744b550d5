"""Several ``pkgcat serve`` processes over one PostgreSQL and one Redis, as on several hosts.

Real servers on 127.0.0.1, a PostgreSQL database of the test's own, the test
Redis (or a ``redis-server`` the test starts and stops). Every load here is
bounded in count, and every wait in time.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from pkgcat.storage.engine import engine_for
from tests.servers import PKGCAT, free_port, stop

pytestmark = pytest.mark.server

DETAILS = "/1.0/package/details.json"


def counted(database_url: str) -> int:
    """Every request counted so far, of every application, as the database holds them."""
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            return int(
                db.execute(text("SELECT coalesce(sum(count), 0) FROM usage_days")).scalar_one()
            )
    finally:
        engine.dispose()


def _environment(database_url: str, redis_url: str, rate_limit: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env |= {
        "PKGCAT_DATABASE_URL": database_url,
        "PKGCAT_REDIS_URL": redis_url,
        "PKGCAT_RATE_LIMIT": rate_limit,
        "PKGCAT_RATE_LIMIT_NAMESPACE": f"test-{secrets.token_hex(6)}",
    }
    return env


def seed(env: dict[str, str]) -> list[dict[str, Any]]:
    """The demo catalogue, once, into the shared database; its applications and keys."""
    seeded = subprocess.run(
        [PKGCAT, "demo", "--json"], env=env, capture_output=True, text=True, check=True
    )
    apps: list[dict[str, Any]] = json.loads(seeded.stdout)["applications"]
    return apps


@contextmanager
def serving(env: dict[str, str], log: Path, workers: int = 1) -> Iterator[str]:
    """One ``pkgcat serve`` on a free port, until the block ends; yields its base URL."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [PKGCAT, "serve", "--port", str(port), "--workers", str(workers)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, f"the server exited: {log.read_text()}"
                try:
                    if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not answer within 30 s"
                time.sleep(0.05)  # polling for readiness, not timing anything
            yield base
        finally:
            stop(process)


async def burst(requests: list[tuple[str, str, str]], connections: int) -> list[httpx.Response]:
    """Every (base URL, key, package) details request, ``connections`` of them in flight at once."""
    bases = sorted({base for base, _, _ in requests})
    share = max(1, connections // len(bases))
    limits = httpx.Limits(max_connections=share, max_keepalive_connections=share)
    # Waiting for a connection is part of the plan, not a failure: no pool timeout.
    timeout = httpx.Timeout(30, pool=None)
    clients = {
        base: httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) for base in bases
    }
    in_flight = asyncio.Semaphore(connections)

    async def one(base: str, key: str, package: str) -> httpx.Response:
        async with in_flight:
            return await clients[base].get(
                DETAILS, params={"package": package}, headers=_bearer(key)
            )

    try:
        return await asyncio.gather(*(one(*request) for request in requests))
    finally:
        for client in clients.values():
            await client.aclose()


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_two_servers_count_every_request_exactly_once(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = _environment(postgres_url, redis_url, "1000000/hour")
    app = seed(env)[0]
    before = counted(postgres_url)
    with (
        serving(env, tmp_path / "first.log") as first,
        serving(env, tmp_path / "second.log") as second,
    ):
        plan = [
            ((first, second)[n % 2], app["secret_key"], app["paid_package"]) for n in range(2000)
        ]
        answers = asyncio.run(burst(plan, connections=100))
    assert [a.status_code for a in answers].count(200) == 2000
    assert counted(postgres_url) == before + 2000


def test_the_limit_holds_across_two_servers(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    limit = 150
    env = _environment(postgres_url, redis_url, f"{limit}/minute")
    app = seed(env)[0]
    before = counted(postgres_url)
    with (
        serving(env, tmp_path / "first.log") as first,
        serving(env, tmp_path / "second.log") as second,
    ):
        plan = [
            ((first, second)[n % 2], app["secret_key"], app["paid_package"])
            for n in range(2 * limit)
        ]
        answers = asyncio.run(burst(plan, connections=60))
    codes = [a.status_code for a in answers]
    assert (codes.count(200), codes.count(429)) == (limit, limit)
    # Only the requests served were counted.
    assert counted(postgres_url) == before + limit


@contextmanager
def own_redis(directory: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A ``redis-server`` of this test on a free port, nothing kept on disk."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not on PATH; CI must run this test", pytrace=False)
        pytest.skip("redis-server is not on PATH")
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"redis://127.0.0.1:{port}/0", process
    finally:
        process.kill()
        process.wait()


def test_redis_stopping_mid_run_costs_no_request(postgres_url: str, tmp_path: Path) -> None:
    with ExitStack() as stack:
        redis_url, redis_process = stack.enter_context(own_redis(tmp_path))
        env = _environment(postgres_url, redis_url, "1000000/hour")
        app = seed(env)[0]
        before = counted(postgres_url)
        base = stack.enter_context(serving(env, tmp_path / "serve.log"))
        plan = [(base, app["secret_key"], app["paid_package"])] * 200
        served = asyncio.run(burst(plan, connections=20))
        redis_process.kill()
        redis_process.wait()
        unlimited = asyncio.run(burst(plan, connections=20))
    # Documented: without Redis the limit is not enforced; requests are served and counted.
    assert {a.status_code for a in served + unlimited} == {200}
    assert counted(postgres_url) == before + 400
