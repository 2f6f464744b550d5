"""The Redis rate limiter against real Redis servers: decisions, exactness, batching, outages.

The Redis is ``PKGCAT_TEST_REDIS_URL``'s, or the one at the default local address
(``redis://127.0.0.1:6379/0``); without either the tests that need one skip, except in CI
(``CI`` set), where they fail.
Tests that must read server-wide counters, or stop and restart the server, start
a ``redis-server`` of their own on a free port: a shared server's counters move
with other clients' traffic, and stopping it would disturb them.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from pkgcat.domain import RateDecision
from pkgcat.storage.redis.limiter import RedisLimiter
from tests.backends import REDIS_VARIABLE, service_url, unavailable
from tests.proxy import Proxy, proxied
from tests.servers import free_port

LOGGER = "pkgcat.storage.redis"
WAIT = 10.0
"""Upper bound, in seconds, of any single wait in these tests (they take far less), and the
Redis timeout of the tests about decisions: the 0.25 s default, made for a server answering
requests, once failed a connection open under the whole suite's load, and the limiter failed
open as it should, which those tests do not test."""


@pytest.fixture
def redis_url() -> str:
    url = service_url(REDIS_VARIABLE, "Redis")
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as error:
        pytest.fail(f"no Redis answers at PKGCAT_TEST_REDIS_URL: {type(error).__name__}")
    finally:
        client.close()
    return url


def new_namespace() -> str:
    return f"pkgcat-test-{uuid.uuid4().hex}"


@pytest.fixture
def namespace(redis_url: str) -> Iterator[str]:
    """A namespace of the test's own on the shared Redis; its keys are deleted afterwards."""
    name = new_namespace()
    yield name
    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{name}:*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


class PrivateRedis:
    """A ``redis-server`` of one test: a free port, a temp dir, nothing persisted.

    Its keys disappear with the process, so stopping it is its cleanup.
    """

    def __init__(self, binary: str, directory: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._binary = binary
        self._directory = directory
        self._process: subprocess.Popen[bytes] | None = None
        # One connection for the test's own reads, so that reading the server's
        # counters costs the same every time (no connect, no handshake).
        self._observer: redis.Redis | None = None

    def start(self) -> None:
        assert self._process is None
        options = {
            "--port": str(self.port),
            "--bind": "127.0.0.1",
            "--save": "",  # nothing written to disk: the data dies with the process
            "--appendonly": "no",
            "--daemonize": "no",  # stays our child, so the test can stop it
            "--dir": str(self._directory),
        }
        command = [self._binary, *(part for pair in options.items() for part in pair)]
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + WAIT
        self._observer = self.client()
        while True:  # until it accepts connections
            try:
                self._observer.ping()
                return
            except redis.ConnectionError:
                if self._process.poll() is not None:
                    raise RuntimeError(f"redis-server exited on port {self.port}") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.close()
            self._observer = None
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=WAIT)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=2, socket_timeout=2)

    def stats(self) -> dict[str, Any]:
        """INFO everything the tests read: one command on the observer's open connection."""
        assert self._observer is not None
        info: dict[str, Any] = self._observer.info("all")
        return info


@pytest.fixture
def private_redis(redis_url: str, tmp_path: Path) -> Iterator[PrivateRedis]:
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server is not on PATH")
    assert binary is not None
    server = PrivateRedis(binary, tmp_path)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def infos_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.INFO]


async def hit(limiter: RedisLimiter, application_id: int = 1) -> RateDecision:
    return await asyncio.wait_for(limiter.hit(application_id), timeout=WAIT)


def test_decisions_follow_the_fixed_window(redis_url: str, namespace: str) -> None:
    async def main() -> None:
        limiter = RedisLimiter(redis_url, "3/minute", namespace, timeout=WAIT)
        try:
            decisions = [await hit(limiter) for _ in range(4)]
            assert [d.allowed for d in decisions] == [True, True, True, False]
            assert [d.remaining for d in decisions] == [2, 1, 0, 0]
            assert all(d.limit == 3 for d in decisions)
            assert all(1 <= d.reset_after <= 60 for d in decisions)
            # Another application has a window of its own...
            assert await hit(limiter, 2) == RateDecision(True, 3, 2, 60, 60)
            assert not (await hit(limiter, 1)).allowed
            # ...and so has another catalogue sharing the Redis.
            other = RedisLimiter(redis_url, "3/minute", namespace + "-other", timeout=WAIT)
            try:
                assert (await hit(other, 1)).remaining == 2
            finally:
                await other.close()
        finally:
            await limiter.close()

    asyncio.run(main())
    with redis.Redis.from_url(redis_url) as client:
        key = f"{namespace}:ratelimit:1"
        assert int(client.get(key) or 0) == 5  # refused hits count, as in ``limits``
        assert 0 < client.pttl(key) <= 60_000
        client.delete(f"{namespace}-other:ratelimit:1")


def test_a_counter_without_expiry_gets_one(redis_url: str, namespace: str) -> None:
    key = f"{namespace}:ratelimit:7"
    with redis.Redis.from_url(redis_url) as client:
        client.set(key, 5)  # left without a TTL, it would refuse the application forever

    async def main() -> RateDecision:
        limiter = RedisLimiter(redis_url, "5/minute", namespace, timeout=WAIT)
        try:
            return await hit(limiter, 7)
        finally:
            await limiter.close()

    decision = asyncio.run(main())
    assert decision == RateDecision(allowed=False, limit=5, remaining=0, reset_after=60, window=60)
    with redis.Redis.from_url(redis_url) as client:
        assert 0 < client.pttl(key) <= 60_000


def test_two_workers_share_one_exact_count(redis_url: str, namespace: str) -> None:
    async def main() -> list[RateDecision]:
        # Two limiters with their own connection pools, as two worker processes have; a
        # patient timeout, as a busy machine's Redis may be slow: failing open is not tested here.
        first = RedisLimiter(redis_url, "100/minute", namespace, timeout=5.0)
        second = RedisLimiter(redis_url, "100/minute", namespace, timeout=5.0)
        try:
            return await asyncio.gather(*(hit(first if n % 2 else second, 42) for n in range(200)))
        finally:
            await first.close()
            await second.close()

    decisions = asyncio.run(main())
    allowed = [d for d in decisions if d.allowed]
    assert len(allowed) == 100
    # Each count 1..100 was handed out exactly once.
    assert sorted(d.remaining for d in allowed) == list(range(100))
    assert all(d.remaining == 0 for d in decisions if not d.allowed)
    with redis.Redis.from_url(redis_url) as client:
        assert int(client.get(f"{namespace}:ratelimit:42") or 0) == 200


def test_the_hits_of_one_turn_share_one_round_trip(private_redis: PrivateRedis) -> None:
    """Observed on the server, whose INFO counts the socket reads and writes it makes.

    Reading INFO costs some reads and writes itself, measured first with no traffic
    in between; what the hits add on top of that is theirs. N hits of one turn
    must add one read (the whole pipeline fits Redis' 16 KB read buffer), one
    write (all the replies) and one script call per application, on the connection
    already open. As a control, N hits awaited one by one add N reads, which
    shows that the measure does see separate round trips. The server is the
    test's own, so no other client moves its counters.
    """
    hits = 50

    def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
        calls = "cmdstat_evalsha"
        return {
            "reads": after["total_reads_processed"] - before["total_reads_processed"],
            "writes": after["total_writes_processed"] - before["total_writes_processed"],
            "connections": after["total_connections_received"]
            - before["total_connections_received"],
            "scripts": after[calls]["calls"] - before.get(calls, {"calls": 0})["calls"],
        }

    async def main() -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        limiter = RedisLimiter(private_redis.url, "1000/minute", new_namespace(), timeout=WAIT)
        try:
            await hit(limiter)  # opens the connection and caches the script
            start = private_redis.stats()
            idle = private_redis.stats()
            decisions = await asyncio.gather(*(limiter.hit(n % 5) for n in range(hits)))
            batched = private_redis.stats()
            assert all(d.allowed for d in decisions)
            for n in range(hits):
                await hit(limiter, n % 5)
            one_by_one = private_redis.stats()
        finally:
            await limiter.close()
        return delta(start, idle), delta(idle, batched), delta(batched, one_by_one)

    idle, batched, one_by_one = asyncio.run(main())
    assert idle["scripts"] == idle["connections"] == 0
    assert batched["connections"] == one_by_one["connections"] == 0
    assert batched["scripts"] == 5  # the five applications, whatever their hits
    assert one_by_one["scripts"] == hits
    assert batched["reads"] - idle["reads"] == 1
    assert batched["writes"] - idle["writes"] == 1
    assert one_by_one["reads"] - idle["reads"] == hits


def test_hits_arriving_while_a_batch_is_in_flight_leave_together(
    private_redis: PrivateRedis,
) -> None:
    """One pipeline in flight at a time: what arrives meanwhile is the next batch.

    The server is paused (CLIENT PAUSE) so the first batch stays in flight while
    ten more hits arrive, one per event-loop turn. They must reach Redis when the
    first returns, on the connection already open, and take their counts in the
    order they arrived, not as ten pipelines of one hit on ten new connections.
    """

    async def main() -> tuple[list[RateDecision], dict[str, Any], dict[str, Any]]:
        limiter = RedisLimiter(private_redis.url, "100/minute", new_namespace(), timeout=WAIT)
        try:
            await hit(limiter)  # opens the connection and caches the script
            before = private_redis.stats()
            with private_redis.client() as client:
                client.execute_command("CLIENT", "PAUSE", 300)
            first = asyncio.ensure_future(limiter.hit(0))
            later = []
            for _ in range(10):
                await asyncio.sleep(0)
                later.append(asyncio.ensure_future(limiter.hit(0)))
            decisions = await asyncio.gather(first, *later)
            return decisions, before, private_redis.stats()
        finally:
            await limiter.close()

    decisions, before, after = asyncio.run(main())
    assert [d.remaining for d in decisions] == list(range(99, 88, -1))
    # One new connection: the test's own, that paused the server.
    assert after["total_connections_received"] == before["total_connections_received"] + 1


def test_a_lost_script_cache_costs_no_count(private_redis: PrivateRedis) -> None:
    """After SCRIPT FLUSH (or a restart) the calls meet NOSCRIPT; only they are sent again."""

    def noscripts_and_evals(stats: dict[str, Any]) -> tuple[int, int]:
        return (
            stats.get("errorstat_NOSCRIPT", {"count": 0})["count"],
            stats.get("cmdstat_eval", {"calls": 0})["calls"],
        )

    async def main() -> tuple[list[RateDecision], tuple[int, int], tuple[int, int]]:
        limiter = RedisLimiter(private_redis.url, "10/minute", new_namespace(), timeout=WAIT)
        try:
            await hit(limiter)
            with private_redis.client() as client:
                client.script_flush()
            before = noscripts_and_evals(private_redis.stats())
            decisions = await asyncio.gather(*(limiter.hit(n) for n in (1, 1, 2)))
            after = noscripts_and_evals(private_redis.stats())
            return decisions, before, after
        finally:
            await limiter.close()

    decisions, before, after = asyncio.run(main())
    # Counts 2 and 3 of application 1, 1 of application 2: each hit counted exactly once.
    assert [d.remaining for d in decisions] == [8, 7, 9]
    # One call per application met NOSCRIPT in the batch by SHA, and was sent again as EVAL.
    assert (after[0] - before[0], after[1] - before[1]) == (2, 2)


def test_a_call_that_fails_leaves_the_next_batch_its_own_replies(
    redis_url: str, namespace: str
) -> None:
    """A counter that is not a number fails its call, not the connection.

    Its batch fails open as a whole (application 9's count was taken all the same),
    and the next batch reads its own replies, not the rest of the last one's.
    """
    with redis.Redis.from_url(redis_url) as client:
        client.set(f"{namespace}:ratelimit:8", "not a count")

    async def main() -> tuple[list[RateDecision], RateDecision]:
        limiter = RedisLimiter(
            redis_url, "5/minute", namespace, timeout=WAIT, retry_after_failure=0
        )
        try:
            failed = await asyncio.gather(limiter.hit(8), limiter.hit(9))
            return list(failed), await hit(limiter, 9)
        finally:
            await limiter.close()

    failed, after = asyncio.run(main())
    assert failed == [RateDecision(True, 5, 5, 60, 60)] * 2  # open: the full limit left
    assert after.remaining == 3  # application 9's second hit in its window


def test_the_password_and_database_of_the_address_are_used(private_redis: PrivateRedis) -> None:
    """The limiter's own connection logs in and selects the address's database."""
    password = "s3cret-" + uuid.uuid4().hex[:8]
    with private_redis.client() as client:
        client.config_set("requirepass", password)
    name = new_namespace()
    url = f"redis://:{password}@127.0.0.1:{private_redis.port}/3"

    async def main() -> list[RateDecision]:
        limiter = RedisLimiter(url, "5/minute", name, timeout=WAIT)
        try:
            return [await hit(limiter, 4) for _ in range(2)]
        finally:
            await limiter.close()

    decisions = asyncio.run(main())
    assert [d.remaining for d in decisions] == [4, 3]  # counted in Redis, not failed open
    key = f"{name}:ratelimit:4"
    for database, count in ((3, b"2"), (0, None)):
        with redis.Redis(port=private_redis.port, db=database, password=password) as client:
            assert client.get(key) == count


def test_a_connection_the_server_closed_while_idle_is_opened_again(
    private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis (its ``timeout``, a proxy) may close an idle connection: the next batch opens a
    new one and is counted, instead of failing open with a warning."""

    async def main() -> list[RateDecision]:
        limiter = RedisLimiter(private_redis.url, "5/minute", new_namespace(), timeout=WAIT)
        try:
            first = await hit(limiter)
            with private_redis.client() as client:
                assert client.client_kill_filter(_type="normal", skipme=True) >= 1
            # Turns of the loop, so that it reads the end of the closed connection.
            for _ in range(20):
                await asyncio.sleep(0)
            return [first, await hit(limiter)]
        finally:
            await limiter.close()

    caplog.set_level(logging.INFO, logger=LOGGER)
    decisions = asyncio.run(main())
    assert [d.remaining for d in decisions] == [4, 3]
    assert warnings_of(caplog) == []


def test_a_batch_that_timed_out_leaves_no_reply_for_the_next(
    private_redis: PrivateRedis,
) -> None:
    """A batch that times out takes its connection with it.

    Redis, paused for writes, holds the second hit's call; the limiter fails open at its
    timeout and drops the connection, so Redis never runs that call and the third hit reads
    its own reply: the window's second count, and two counts in Redis. Left on the
    connection, the held call would have run once Redis was unpaused, and each later
    batch would have read the reply of the one before.
    """
    name = new_namespace()

    async def main() -> list[RateDecision]:
        limiter = RedisLimiter(
            private_redis.url, "5/minute", name, timeout=1.0, retry_after_failure=0
        )
        try:
            first = await hit(limiter)
            with private_redis.client() as client:
                client.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
                try:
                    timed_out = await hit(limiter)
                finally:
                    client.execute_command("CLIENT", "UNPAUSE")
            return [first, timed_out, await hit(limiter)]
        finally:
            await limiter.close()

    decisions = asyncio.run(main())
    assert [d.remaining for d in decisions] == [4, 5, 3]  # the second failed open
    with private_redis.client() as client:
        assert client.get(f"{name}:ratelimit:1") == b"2"


def test_no_redis_fails_open_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    url = f"redis://:not-to-be-logged@127.0.0.1:{free_port()}/0"

    async def main() -> list[RateDecision]:
        # No pause after a failure: every hit below really tries the closed port.
        limiter = RedisLimiter(url, "3/minute", new_namespace(), retry_after_failure=0)
        try:
            decisions = [await hit(limiter) for _ in range(5)]
            decisions += await asyncio.gather(*(hit(limiter, n) for n in range(5)))
            return decisions
        finally:
            await limiter.close()

    decisions = asyncio.run(main())
    assert (
        decisions
        == [RateDecision(allowed=True, limit=3, remaining=3, reset_after=60, window=60)] * 10
    )
    [warning] = warnings_of(caplog)
    assert "rate limits are not enforced" in warning.getMessage()
    assert "not-to-be-logged" not in caplog.text
    assert not infos_of(caplog)


def test_a_silent_redis_times_out_and_is_left_alone_after_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that accepts connections but never answers (hung, or a black hole).

    Connections wait in the listening socket's backlog, so the test counts the
    limiter's attempts without ever answering one.
    """
    caplog.set_level(logging.INFO, logger=LOGGER)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"

        async def main() -> list[RateDecision]:
            limiter = RedisLimiter(
                url, "3/minute", new_namespace(), timeout=0.05, retry_after_failure=3600
            )
            try:
                decisions = [await hit(limiter)]  # waits for the timeout, then fails open
                decisions += [await hit(limiter) for _ in range(3)]
                decisions += await asyncio.gather(*(hit(limiter) for _ in range(3)))
                return decisions
            finally:
                await limiter.close()

        decisions = asyncio.run(main())
        listener.setblocking(False)
        attempts = 0
        while True:
            try:
                connection, _ = listener.accept()
            except BlockingIOError:
                break
            connection.close()
            attempts += 1

    assert all(d.allowed and d.remaining == 3 for d in decisions)
    assert attempts == 1  # the hits after the failure made no network call
    [warning] = warnings_of(caplog)
    assert "Timeout" in warning.getMessage()


def test_limits_are_enforced_again_when_redis_comes_back(
    private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    fail_open = RateDecision(allowed=True, limit=2, remaining=2, reset_after=60, window=60)

    async def main() -> None:
        limiter = RedisLimiter(
            private_redis.url, "2/minute", new_namespace(), timeout=1.0, retry_after_failure=0
        )
        try:
            assert [(await hit(limiter)).allowed for _ in range(3)] == [True, True, False]
            assert not warnings_of(caplog)

            private_redis.stop()
            assert [await hit(limiter) for _ in range(3)] == [fail_open] * 3
            assert len(warnings_of(caplog)) == 1
            assert not infos_of(caplog)

            # A new, empty server on the same address: a fresh window, enforced again.
            private_redis.start()
            decisions = [await hit(limiter) for _ in range(3)]
            assert [d.allowed for d in decisions] == [True, True, False]
            assert [d.remaining for d in decisions] == [1, 0, 0]
            [info] = infos_of(caplog)
            assert "answers again" in info.getMessage()
            assert len(warnings_of(caplog)) == 1
        finally:
            await limiter.close()

    asyncio.run(main())
    # The new server had no script cached: the first call fell back to EVAL once.
    assert private_redis.stats()["cmdstat_eval"]["calls"] == 1


def test_a_connection_lost_in_an_outage_is_replaced_before_the_first_batch_after_it(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis gone without a word reaching the limiter (its host down: no FIN, no reset), then
    back. The batches' connection, idle through the outage, still looks open; the PING sent
    on it first (the connection was idle past ``idle_check``) meets a reset, and is sent
    again on a new connection, which the batch then takes: counted, and no warning."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    name = new_namespace()

    async def main(through: str, proxy: Proxy) -> list[RateDecision]:
        # Any pause counts as idle: the check runs before every batch of this test.
        limiter = RedisLimiter(through, "5/minute", name, timeout=WAIT, idle_check=1e-9)
        try:
            first = await hit(limiter)
            connects = proxy.accepted
            proxy.forget()
            proxy.restore()
            after = [await hit(limiter) for _ in range(2)]
            assert proxy.accepted == connects + 1  # one new connection, for the lost one
            return [first, *after]
        finally:
            await limiter.close()

    with proxied(redis_url) as (proxy, through):
        decisions = asyncio.run(main(through, proxy))
    assert [d.remaining for d in decisions] == [4, 3, 2]  # none failed open
    assert warnings_of(caplog) == []
    with redis.Redis.from_url(redis_url) as client:
        assert client.get(f"{name}:ratelimit:1") == b"3"
        client.delete(f"{name}:ratelimit:1")
