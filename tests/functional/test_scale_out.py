"""Several ``pkgcat serve`` processes over one PostgreSQL and one Redis, as on several hosts.

Real servers on 127.0.0.1, a PostgreSQL database of the test's own, the test
Redis (or a ``redis-server`` the test starts and stops). Every load here is
bounded in count, and every wait in time.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.backends import unavailable
from tests.servers import Request, Served, counted, environment, free_port, seed, send_all, serving

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _environment(database_url: str, redis_url: str, rate_limit: str) -> dict[str, str]:
    return environment(
        database_url,
        redis_url=redis_url,
        rate_limit=rate_limit,
        rate_limit_namespace=f"test-{secrets.token_hex(6)}",
    )


def alternating(servers: list[Served], app: dict[str, Any], count: int) -> list[Request]:
    """``count`` details requests of ``app``'s paid package, sent to each server in turn."""
    return [
        (servers[n % len(servers)].base, app["secret_key"], app["paid_package"])
        for n in range(count)
    ]


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
        answers = send_all(alternating([first, second], app, 2000), clients=16)
    assert answers.count(200) == 2000
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
        plan = alternating([first, second], app, 2 * limit)
        codes = send_all(plan, clients=16)
    assert (codes.count(200), codes.count(429)) == (limit, limit)
    # Only the requests served were counted.
    assert counted(postgres_url) == before + limit


@contextmanager
def own_redis(directory: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A ``redis-server`` of this test on a free port, nothing kept on disk."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server is not on PATH")
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
        server = stack.enter_context(serving(env, tmp_path / "serve.log"))
        plan = alternating([server], app, 200)
        served = send_all(plan, clients=8)
        redis_process.kill()
        redis_process.wait()
        unlimited = send_all(plan, clients=8)
    # Documented: without Redis the limit is not enforced; requests are served and counted.
    assert set(served + unlimited) == {200}
    assert counted(postgres_url) == before + 400
