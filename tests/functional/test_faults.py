"""Faults of the database and of Redis: what a client sees, what the log says, and the recovery.

A locked database (SQLite's write lock, a PostgreSQL table lock) and an
unreachable one (PostgreSQL behind a proxy the test cuts) are answered 503 with
code 15 and ``Retry-After``, logged in one line without a trace, and not
counted; once the fault ends, requests succeed again with no restart.
``/readyz`` answers 503 while the database, or Redis when configured, cannot
be used, and 200 once they are back, with no request needed first and no 503
from a connection lost in the outage. Each fault lasts as long as the test
holds it, and no longer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from starlette.testclient import TestClient

from pkgcat.app import create_app
from pkgcat.config import Settings
from pkgcat.storage.migrate import upgrade
from pkgcat.storage.postgres.connection import asyncpg_dsn
from pkgcat.storage.sqlite import sqlite_path
from tests.conftest import Api, AppFactory, Clock, stored_count
from tests.proxy import Proxy, proxied
from tests.servers import counted, environment, poll, seed, serving

DETAILS = "/1.0/package/details.json"


@contextmanager
def counts_locked(database_url: str) -> Iterator[None]:
    """Another session holding the lock every count needs, until the block ends."""
    if database_url.startswith("sqlite"):
        writer = sqlite3.connect(sqlite_path(database_url), isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # SQLite's one write lock
        try:
            yield
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        return
    with psycopg.connect(asyncpg_dsn(database_url)) as session:
        session.execute("LOCK TABLE usage_days IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            session.rollback()


def assert_timed_out(response: httpx.Response, caplog: pytest.LogCaptureFixture) -> None:
    """503, code 16 (the API family's "your request timed out", YouRepo's table), Retry-After;
    the request id in one log line, and no trace."""
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    request_id = response.headers["x-request-id"]
    body = response.json()
    assert body["code"] == 16
    assert body["response"].startswith("your request timed out: no answer within ")
    assert body["response"].endswith(f"not counted, retry shortly; request id {request_id}")
    ours = [r for r in caplog.records if r.name.startswith("pkgcat")]
    lines = [r for r in ours if request_id in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    assert all(r.exc_info is None for r in ours)


def details(api: Api, key: str = "alpha-a") -> httpx.Response:
    # Starlette types its client against httpx2; the one installed answers httpx's Response.
    response: httpx.Response = api.http.get(
        DETAILS, params={"secret_key": api.keys[key], "package": "com.alpha.paid"}
    )
    return response


def assert_unavailable(
    response: httpx.Response, caplog: pytest.LogCaptureFixture, what: str = "database"
) -> None:
    """503, code 15, Retry-After; the request id in one log line, and no trace of ours.
    ``what`` is unavailable: the database, or the object store."""
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    request_id = response.headers["x-request-id"]
    assert response.json() == {
        "code": 15,
        "response": f"{what} unavailable; retry shortly; request id {request_id}",
    }
    ours = [r for r in caplog.records if r.name.startswith("pkgcat")]
    lines = [r for r in ours if request_id in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    # No trace from pkgcat (asyncpg's pool logs its own reconnection attempts).
    assert all(r.exc_info is None and "Traceback" not in r.getMessage() for r in ours)


def test_a_locked_database_is_503_code_16_with_retry_after_and_recovers(
    api: Api, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert details(api).status_code == 200
    before = stored_count(database_url, 1)
    # The count waits for the lock until the request's deadline (5 s by default, under the
    # busy budget and the statement timeout, 10 s each), then the request gives up.
    with counts_locked(database_url), caplog.at_level(logging.WARNING, logger="pkgcat.http"):
        response = details(api)
    assert_timed_out(response, caplog)
    assert stored_count(database_url, 1) == before  # refused, so not counted
    # The lock is gone: the next request is served and counted, with no restart.
    assert details(api).status_code == 200
    assert stored_count(database_url, 1) == before + 1


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_an_unreachable_postgresql_is_503_code_15_and_not_ready_until_it_is_back(
    database_url: str, clock: Clock, catalogue: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with proxied(database_url) as (proxy, through):
        app = create_app(Settings(database_url=through), clock=clock)
        with TestClient(app, raise_server_exceptions=False) as client:
            api = Api(http=client, keys=catalogue, pushed=True)
            assert details(api).status_code == 200
            assert client.get("/readyz").status_code == 200
            before = stored_count(database_url, 1)

            proxy.cut()
            with caplog.at_level(logging.WARNING, logger="pkgcat.http"):
                response = details(api)
            assert_unavailable(response, caplog)
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["reason"].startswith("database: ")

            proxy.restore()
            # The pool opens new connections by itself: served, counted, and ready again.
            assert details(api).status_code == 200
            assert client.get("/readyz").status_code == 200
    assert stored_count(database_url, 1) == before + 1


def test_readiness_follows_redis_while_requests_fail_open(
    make_api: AppFactory, redis_url: str
) -> None:
    with proxied(redis_url) as (proxy, through):
        api = make_api(redis_url=through, rate_limit_namespace=f"faults-{uuid.uuid4().hex[:8]}")
        assert api.http.get("/readyz").status_code == 200
        assert details(api).status_code == 200

        proxy.cut()
        ready = api.http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["status"] == "unavailable"
        assert ready.json()["reason"] == "redis: ConnectionError"
        # The limit is not enforced meanwhile (docs/operators.md): requests are still served.
        assert details(api).status_code == 200

        proxy.restore()
        assert api.http.get("/readyz").status_code == 200


def test_a_redis_connection_lost_in_an_outage_gives_no_503_once_redis_is_back(
    make_api: AppFactory, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis gone without a word reaching the worker (its host down: no FIN, no reset), then
    back. The connection the readiness PING keeps in its pool was idle all along, so it still
    looks open, and its first use meets a reset. It is dropped and the PING sent again on a
    new connection: ready at once, and the requests after it served."""
    with proxied(redis_url) as (proxy, through):
        api = make_api(redis_url=through, rate_limit_namespace=f"faults-{uuid.uuid4().hex[:8]}")
        assert api.http.get("/readyz").status_code == 200  # its connection, back in the pool
        assert details(api).status_code == 200
        connects = proxy.accepted

        proxy.forget()
        proxy.restore()
        # No request in between: every connection is as an idle worker's through an outage.
        with caplog.at_level(logging.WARNING, logger="pkgcat.http"):
            ready = api.http.get("/readyz")
        assert ready.status_code == 200, ready.json()
        assert ready.json()["status"] == "ready"
        assert not [r for r in caplog.records if r.name == "pkgcat.http"]  # no "not ready"
        assert proxy.accepted > connects  # the lost one was met, and replaced
        assert [details(api).status_code for _ in range(3)] == [200] * 3
        assert [api.http.get("/readyz").status_code for _ in range(3)] == [200] * 3


def caches_word(client: TestClient) -> str | None:
    """What ``/readyz`` says of the caches once it answers ready, else None."""
    answer = client.get("/readyz")
    word = answer.json().get("caches") if answer.status_code == 200 else None
    return word if word == "current" else None


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_the_caches_follow_postgresql_without_a_request_and_after_an_outage(
    database_url: str, clock: Clock, catalogue: dict[str, str]
) -> None:
    """The listener starts with the worker, not with its first request, and reconnects by
    itself (backing off) after PostgreSQL was away: ``/readyz`` is right with no traffic."""
    with proxied(database_url) as (proxy, through):
        app = create_app(Settings(database_url=through), clock=clock)
        with TestClient(app, raise_server_exceptions=False) as client:
            # Nothing has been asked yet: the only connection is the listener's.
            poll(lambda: proxy.accepted or None, "the listener connects at the worker's start")
            poll(lambda: caches_word(client), "the caches are current")

            proxy.cut()
            ready = client.get("/readyz")
            assert ready.status_code == 503
            connects = proxy.accepted
            proxy.restore()
            # No request: the listener comes back on its own, and /readyz finds it there.
            poll(lambda: proxy.accepted > connects or None, "the listener connects again")
            poll(lambda: caches_word(client), "the caches are current again")
            api = Api(http=client, keys=catalogue, pushed=True)
            assert [details(api).status_code for _ in range(3)] == [200] * 3


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_silent_postgresql_is_code_16_at_the_deadline_and_nothing_is_counted(
    database_url: str, clock: Clock, catalogue: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Sockets open, no replies: each request is answered 503 at its deadline, and the counts
    it sent, delivered once the database answers again, count nothing."""
    with proxied(database_url) as (proxy, through):
        settings = Settings(database_url=through, request_deadline=1.0)
        with TestClient(create_app(settings, clock=clock), raise_server_exceptions=False) as client:
            api = Api(http=client, keys=catalogue, pushed=True)
            assert details(api).status_code == 200  # caches warm, pool open
            before = stored_count(database_url, 1)

            proxy.stall()
            for _ in range(3):
                caplog.clear()
                with caplog.at_level(logging.WARNING, logger="pkgcat.http"):
                    response = details(api)
                assert_timed_out(response, caplog)
                assert "no answer within 1 s" in caplog.text
            proxy.resume()

            served = [details(api).status_code for _ in range(5)]
    assert served == [200] * 5
    assert stored_count(database_url, 1) == before + 5


def test_a_locked_database_is_code_16_at_the_deadline(
    make_api: AppFactory, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    api = make_api(request_deadline=0.5)
    assert details(api).status_code == 200
    before = stored_count(database_url, 1)
    started = time.monotonic()
    with counts_locked(database_url), caplog.at_level(logging.WARNING, logger="pkgcat.http"):
        response = details(api)
    # Not the 10 s a count may wait for the lock: the deadline's half second, give or take
    # the tenth of a second between two looks for late requests (a loose bound, no timing).
    assert time.monotonic() - started < 5
    assert_timed_out(response, caplog)
    assert stored_count(database_url, 1) == before
    assert details(api).status_code == 200
    assert stored_count(database_url, 1) == before + 1


@pytest.fixture
def sqlite_url(small_disk: Path) -> str:
    """This module's SQLite files are on a small disk of their own."""
    url = f"sqlite:///{small_disk / 'pkgcat.db'}"
    upgrade(url)
    return url


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of the test's own (mounting needs root: in CI the test fails without it)."""
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mountpoint)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
        pytest.skip("mounting a small filesystem needs root")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "--lazy", str(mountpoint)], check=True)


def _fill(path: Path) -> None:
    """Write ``path`` until the filesystem it is on has no byte left."""
    with path.open("wb", buffering=0) as filler:
        with contextlib.suppress(OSError):  # ENOSPC: full
            while True:
                filler.write(b"\0" * 65536)
        with contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 512)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_full_disk_is_503_code_15_in_one_line_and_nothing_is_counted(
    api: Api, database_url: str, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert details(api).status_code == 200
    before = stored_count(database_url, 1)
    filler = small_disk / "filler"
    _fill(filler)
    # The log file has room for some commits yet: served until it has none.
    served = 0
    while (response := details(api)).status_code == 200:
        served += 1
        assert served < 10_000, "the disk never filled"
    for _ in range(3):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="pkgcat"):
            response = details(api)
        assert_unavailable(response, caplog)
        assert "database unavailable (OperationalError)" in caplog.text
    filler.unlink()
    # Room again: served and counted, with no restart.
    assert [details(api).status_code for _ in range(3)] == [200] * 3
    assert stored_count(database_url, 1) == before + served + 3


@contextmanager
def silent(database_url: str, proxy: Proxy | None) -> Iterator[None]:
    """The database not answering this server: PostgreSQL's replies held by the proxy, or
    SQLite's write lock held by another process (a commit then waits, as for a silent one)."""
    if proxy is None:
        with counts_locked(database_url):
            yield
        return
    proxy.stall()
    try:
        yield
    finally:
        proxy.resume()


@pytest.mark.server
def test_a_real_server_answers_503_at_the_deadline_and_counts_exactly(
    database_url: str, tmp_path: Path
) -> None:
    """`pkgcat serve` (granian, a worker process) under the same fault: each request 503 at
    its deadline, and the counts afterwards exact, none of the 503s among them."""
    env = environment(database_url)
    apps = seed(env)
    key = apps[0]["secret_key"]
    with contextlib.ExitStack() as stack:
        proxy = None
        if database_url.startswith("postgres"):
            proxy, through = stack.enter_context(proxied(database_url))
            env = environment(through)
        served = stack.enter_context(
            serving({**env, "PKGCAT_REQUEST_DEADLINE": "1"}, tmp_path / "server.log", apps=apps)
        )
        url = f"{served.base}{DETAILS}"
        params = {"package": "com.havoclabs.velvet"}
        headers = {"Authorization": f"Bearer {key}"}
        assert httpx.get(url, params=params, headers=headers).status_code == 200
        before = counted(database_url)
        with silent(database_url, proxy):
            refused = [httpx.get(url, params=params, headers=headers, timeout=30) for _ in range(3)]
        answered = [httpx.get(url, params=params, headers=headers, timeout=30) for _ in range(5)]
    assert [(r.status_code, r.json()["code"]) for r in refused] == [(503, 16)] * 3
    assert all(r.headers["retry-after"] == "1" for r in refused)
    assert [r.status_code for r in answered] == [200] * 5
    assert counted(database_url) == before + 5


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_503_after_the_count_landed_takes_the_count_back(
    make_api: AppFactory, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The count commits, then the operation's own read waits on a lock past the deadline: the
    answer is 503, and the count it had is taken back."""
    api = make_api(request_deadline=1.0)
    key = api.keys["alpha-a"]
    assert details(api).status_code == 200
    before = stored_count(database_url, 1)
    with psycopg.connect(asyncpg_dsn(database_url)) as session:
        # Nothing a count touches: only the buyers page's read waits.
        session.execute("LOCK TABLE purchases IN ACCESS EXCLUSIVE MODE")
        with caplog.at_level(logging.WARNING, logger="pkgcat.http"):
            response = api.get("/1.0/package/buyers.json", key, package="com.alpha.paid")
        assert_timed_out(response, caplog)
        assert "ratelimit-limit" in response.headers  # the key was accepted
        deadline = time.monotonic() + 5
        while stored_count(database_url, 1) != before:
            assert time.monotonic() < deadline, "the count was not taken back within 5 s"
            time.sleep(0.01)  # polling the database, not timing anything
        session.rollback()
    assert api.get("/1.0/package/buyers.json", key, package="com.alpha.paid").status_code == 200
    assert stored_count(database_url, 1) == before + 1


CUTS = 20
"""Commits whose acknowledgement the test loses, each followed by an outage."""


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_count_whose_acknowledgement_was_lost_is_taken_back_and_every_200_is_counted_once(
    database_url: str, clock: Clock, catalogue: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The count's commit reaches PostgreSQL, the reply never comes back (the proxy swallows
    it and cuts every connection until the test restores it), twenty times. Each of those
    requests is answered 503 and, once the database answers again, its count is taken back:
    what is counted is what was answered 200, exactly (before: one count too many a cut)."""
    answered = 0
    with proxied(database_url) as (proxy, through):
        app = create_app(Settings(database_url=through), clock=clock)
        with TestClient(app, raise_server_exceptions=False) as client:
            api = Api(http=client, keys=catalogue, pushed=True)
            assert details(api).status_code == 200
            before = stored_count(database_url, 1)
            for _ in range(CUTS):
                fired = proxy.lose(b"package/details", "reply", down=True)
                caplog.clear()
                with caplog.at_level(logging.WARNING, logger="pkgcat.http"):
                    lost = details(api)
                assert fired.is_set()
                assert_unavailable(lost, caplog)
                proxy.restore()
                # The first settles the lost batch (its take-back follows it), the second
                # goes after that take-back: nothing else is under way for the next trap.
                statuses = [details(api).status_code for _ in range(2)]
                assert statuses == [200, 200]
                answered += len(statuses)
    assert stored_count(database_url, 1) == before + answered
