"""Each batch of counts on PostgreSQL is applied once, whatever happens to its reply
(pkgcat.storage.postgres.batches).

The worker reaches the shared PostgreSQL through the tests' proxy, which breaks the one
connection that carries a batch: before the statement reaches the server, while the
server runs it, or after its commit, the acknowledgement swallowed. A caller told that
its count failed is never counted in the end, and one told it landed is counted once:
what the database holds equals what the callers were told, for requests and downloads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from datetime import date
from itertools import pairwise
from typing import TypeVar

import psycopg
import pytest

from pkgcat.storage.postgres import batches
from pkgcat.storage.postgres.connection import PostgresDatabase, asyncpg_dsn
from pkgcat.storage.postgres.counter import PostgresCounter
from tests.backends import rows
from tests.conftest import stored_count
from tests.proxy import Moment, Proxy, proxied
from tests.servers import downloads_counted, poll

DAY = date(2024, 3, 31)
WHEN = 1_711_886_400
OPERATION = "package/details"
PACKAGE = "com.alpha.free"
TIMES = 20
"""Batches whose connection each test breaks."""

T = TypeVar("T")

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)


@pytest.fixture
def through(database_url: str) -> Iterator[tuple[Proxy, str]]:
    with proxied(database_url) as found:
        yield found


def on_counter(url: str, work: Callable[[PostgresCounter], Awaitable[T]]) -> T:
    """``work`` on a new worker's counter, closed afterwards (its last statement waited for)."""

    async def main() -> T:
        counter = PostgresCounter(PostgresDatabase(url))
        try:
            return await work(counter)
        finally:
            await counter.close()

    return asyncio.run(main())


async def _landed(call: Awaitable[object]) -> int:
    """1 if the count was committed as far as its caller is told, 0 if it failed."""
    try:
        await call
    except Exception:
        return 0
    return 1


async def _request_and_download(
    counter: PostgresCounter, operation: str = OPERATION
) -> tuple[int, int]:
    """A request's count and a download, in one batch: how many of each landed, as told."""
    request, download = await asyncio.gather(
        _landed(counter.record(1, DAY, 1, WHEN, operation)),
        _landed(counter.record_download(PACKAGE, DAY)),
    )
    return request, download


@pytest.mark.parametrize("moment", ["reply", "request"])
def test_a_batch_whose_connection_breaks_is_counted_as_its_callers_were_told(
    database_url: str,
    catalogue: dict[str, str],
    through: tuple[Proxy, str],
    moment: Moment,
) -> None:
    """Twenty batches whose connection breaks: once the commit landed and its reply was
    lost (before: every one of them counted, 20 requests and 20 downloads too many), or
    before the statement reached the server. Each batch's callers are told it failed; the
    batch after settles it, and the one after that takes back what had landed."""
    proxy, url = through

    async def work(counter: PostgresCounter) -> tuple[int, int, int]:
        told = [await _request_and_download(counter)]  # the pool's first connection
        springs = 0
        for n in range(TIMES):
            # An operation of its own: what takes back the batch before carries that one's.
            trapped = f"trapped/{n}"
            fired = proxy.lose(trapped.encode(), moment)
            told.append(await _request_and_download(counter, trapped))
            springs += fired.is_set()
            told.append(await _request_and_download(counter))
        return springs, sum(r for r, _ in told), sum(d for _, d in told)

    springs, requests, downloads = on_counter(url, work)
    assert springs == TIMES
    assert requests == downloads == TIMES + 1  # each broken batch failed, each other landed
    assert stored_count(database_url, 1) == requests
    assert downloads_counted(database_url, PACKAGE) == downloads


def _waiting_on_a_lock(database_url: str) -> bool | None:
    """True once a statement of the counts waits for a lock."""
    found = rows(
        database_url,
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO usage_days%'"
        " AND datname = current_database()",
    )
    return True if found[0][0] else None


def test_a_batch_cut_off_while_the_server_runs_it_is_counted_as_its_caller_was_told(
    database_url: str, catalogue: dict[str, str], through: tuple[Proxy, str]
) -> None:
    """The connection is lost while the statement waits on the server for a row lock, so it
    commits later, after its caller was told it failed and while the next batch is asked
    (before: counted all the same, one too many). The next batch waits for its fate."""
    proxy, url = through

    async def work(counter: PostgresCounter) -> list[int]:
        told = [await _landed(counter.record(1, DAY, 1, WHEN, OPERATION))]  # the row exists
        with psycopg.connect(asyncpg_dsn(database_url)) as session:
            session.execute("SELECT 1 FROM usage_days WHERE application_id = 1 FOR UPDATE")
            cut = asyncio.ensure_future(_landed(counter.record(1, DAY, 1, WHEN, OPERATION)))
            await asyncio.to_thread(poll, lambda: _waiting_on_a_lock(database_url), "a wait")
            proxy.cut()
            told.append(await cut)
            proxy.restore()
            # Its batch waits on the server for the lost one's (whose claim is made), as soon
            # as it arrives there: before the lost one commits, or after.
            following = asyncio.ensure_future(_landed(counter.record(1, DAY, 1, WHEN, OPERATION)))
            await asyncio.sleep(0)
            session.rollback()  # the lost batch goes on, and commits
        told.append(await following)
        told.append(await _landed(counter.record(1, DAY, 1, WHEN, OPERATION)))
        return told

    told = on_counter(url, work)
    assert told == [1, 0, 1, 1]
    assert stored_count(database_url, 1) == sum(told)


def test_a_worker_settles_a_lost_reply_by_itself_once_the_database_is_back(
    database_url: str, catalogue: dict[str, str], through: tuple[Proxy, str]
) -> None:
    """The reply is lost and the database stays cut: no request comes after it. The
    worker asks again on its own until the database answers, and takes the count back."""
    proxy, url = through

    async def work(counter: PostgresCounter) -> list[int]:
        told = [await _landed(counter.record(1, DAY, 1, WHEN, OPERATION))]
        proxy.lose(OPERATION.encode(), "reply", down=True)
        told.append(await _landed(counter.record(1, DAY, 1, WHEN, OPERATION)))
        assert stored_count(database_url, 1) == 2  # it landed, though its caller was told not
        proxy.restore()
        await asyncio.to_thread(
            poll, lambda: stored_count(database_url, 1) == 1 or None, "the count taken back"
        )
        assert not counter.owed
        return told

    assert on_counter(url, work) == [1, 0]
    assert stored_count(database_url, 1) == 1


def test_a_worker_that_stops_owing_a_take_back_makes_it_first(
    database_url: str, catalogue: dict[str, str], through: tuple[Proxy, str]
) -> None:
    """The reply is lost, the database comes back, and the worker stops before anything
    else: its last statement settles the batch and takes it back."""
    proxy, url = through

    async def work(counter: PostgresCounter) -> list[int]:
        told = [await _landed(counter.record(1, DAY, 1, WHEN, OPERATION))]
        proxy.lose(OPERATION.encode(), "reply", down=True)
        told.append(await _landed(counter.record(1, DAY, 1, WHEN, OPERATION)))
        proxy.restore()
        return told  # closed now

    assert on_counter(url, work) == [1, 0]
    assert stored_count(database_url, 1) == 1


def test_a_download_taken_back_while_the_database_is_cut_is_taken_back_once_it_is_back(
    database_url: str, catalogue: dict[str, str], through: tuple[Proxy, str]
) -> None:
    """A download counted, whose file then could not go out: its take-back cannot be
    written now. It fails no caller, and lands with the next batch (before: lost, with an
    error, so the download stayed counted)."""
    proxy, url = through

    async def work(counter: PostgresCounter) -> None:
        await counter.record_download(PACKAGE, DAY)
        proxy.cut()
        await counter.record_download(PACKAGE, DAY, -1)  # no error
        proxy.restore()
        await counter.record(1, DAY, 1, WHEN, OPERATION)

    on_counter(url, work)
    assert downloads_counted(database_url, PACKAGE) == 0


def test_the_batches_table_stays_small_and_loses_old_rows(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """A worker's settled rows go by the batch of :data:`batches.SETTLE_EVERY`, however many
    batches it commits; its first statement deletes other workers' rows older than a week
    (a worker that died leaves its last ones)."""
    dead, alive = 11, 12
    with psycopg.connect(asyncpg_dsn(database_url)) as session:
        session.execute(
            "INSERT INTO count_batches (worker, batch, landed, at) VALUES"
            " (%s, 7, true, extract(epoch FROM now())::bigint - 8 * 86400),"
            " (%s, 9, true, extract(epoch FROM now())::bigint - 3600)",
            (dead, alive),
        )

    async def work(counter: PostgresCounter) -> list[int]:
        kept = []
        for _ in range(4 * batches.SETTLE_EVERY):
            await counter.record(1, DAY, 1, WHEN, OPERATION)
            own = f"SELECT count(*) FROM count_batches WHERE worker = {counter.worker:d}"  # noqa: S608 - a number
            [(n,)] = rows(database_url, own)
            assert isinstance(n, int)
            kept.append(n)
        return kept

    kept = on_counter(database_url, work)
    assert max(kept) <= batches.SETTLE_EVERY + 1
    assert sum(b < a for a, b in pairwise(kept)) >= 3  # they went, thrice
    others = rows(database_url, "SELECT worker FROM count_batches WHERE worker IN (11, 12)")
    assert [w for (w,) in others] == [alive]
    assert stored_count(database_url, 1) == 4 * batches.SETTLE_EVERY
