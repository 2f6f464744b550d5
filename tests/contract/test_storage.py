"""The storage interfaces' contract, run on every backend (SQLite and PostgreSQL).

Each test builds the backends of one worker the way the server does
(:func:`pkgcat.storage.backends.open_storage`) over a real database of its
own, seeded by the shared ``catalogue`` fixture, and checks what the request
path relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import TypeVar

import psycopg
from sqlalchemy import text

from pkgcat import keys
from pkgcat.config import Settings
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.backends import Storage, open_storage
from pkgcat.storage.engine import engine_for, write_transaction
from pkgcat.storage.postgres.connection import asyncpg_dsn
from pkgcat.storage.writes import removal
from tests import factories as f
from tests.conftest import Clock, stored_count

DAY = date(2024, 3, 31)
WHEN = 1_711_886_400
OPERATION = "package/details"
T = TypeVar("T")


def run(database_url: str, work: Callable[[Storage], Awaitable[T]]) -> T:
    """``work`` on a fresh worker's storage, in an event loop of its own, closed afterwards."""

    async def main() -> T:
        storage = open_storage(Settings(database_url=database_url))
        try:
            return await work(storage)
        finally:
            await storage.close()

    return asyncio.run(main())


async def caught_up(storage: Storage, timeout: float = 5.0) -> int:
    """Wait until the worker knows the database's generation (pushed ones take a moment).

    Asked as a request that commits nothing asks (``latest_generation``); on
    SQLite the answer is read at once, on PostgreSQL it is the pushed one.
    """
    deadline = time.monotonic() + timeout
    while True:
        await storage.catalogue.latest_generation()
        database, seen = await storage.catalogue.freshness()
        if seen >= database >= 0:
            return await storage.catalogue.generation()
        assert time.monotonic() < deadline, f"generation {database} not seen in time ({seen})"
        await asyncio.sleep(0.005)  # waiting for a notification, not timing anything


def test_counts_of_concurrent_requests_all_land_before_they_return(
    database_url: str, catalogue: dict[str, str]
) -> None:
    async def work(storage: Storage) -> None:
        await asyncio.gather(*(storage.usage.record(1, DAY, 1, WHEN, OPERATION) for _ in range(40)))
        # Every caller has returned: every count is in the database for anyone to read.
        assert stored_count(database_url, 1) == 40
        assert await storage.catalogue.usage(1, DAY, DAY) == {DAY: 40}

    run(database_url, work)


def test_usage_read_by_one_worker_includes_every_workers_counts(
    database_url: str, catalogue: dict[str, str]
) -> None:
    async def work(first: Storage) -> None:
        second = open_storage(Settings(database_url=database_url))
        try:
            await asyncio.gather(
                *(first.usage.record(1, DAY, 1, WHEN, OPERATION) for _ in range(7)),
                *(second.usage.record(1, DAY, 1, WHEN, OPERATION) for _ in range(5)),
            )
            await first.catalogue.generation()
            assert await first.catalogue.usage(1, DAY - timedelta(days=3), DAY) == {DAY: 12}
        finally:
            await second.close()

    run(database_url, work)


def test_counts_of_a_deleted_application_are_dropped_and_the_others_land(
    database_url: str, admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    # Requests past authentication when the operator deleted their application (3).
    admin.delete_application("Beta", "beta-a", cascade=True)

    async def work(storage: Storage) -> None:
        await asyncio.gather(
            storage.usage.record(3, DAY, 3, WHEN, OPERATION),
            storage.usage.record(1, DAY, 1, WHEN, OPERATION),
            storage.usage.record(999, DAY, 3, WHEN, OPERATION),  # never existed
        )

    run(database_url, work)
    assert stored_count(database_url, 1) == 1
    assert stored_count(database_url, 3) == 0
    assert stored_count(database_url, 999) == 0


async def waiting_for_a_lock(database_url: str, timeout: float = 5.0) -> None:
    """Return once a statement of the counter waits for a lock another transaction holds.

    PostgreSQL shows it in ``pg_stat_activity``. SQLite shows nothing: the
    counter's commit is tried within the next turns of the loop, finds the write
    lock taken and retries later, so yielding a few turns is enough there.
    """
    if not database_url.startswith("postgres"):
        for _ in range(3):
            await asyncio.sleep(0)
        return
    engine = engine_for(database_url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            with engine.connect() as db:
                waiting = db.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock' AND query LIKE '%usage_days%'"
                    )
                ).scalar_one()
            if waiting:
                return
            assert time.monotonic() < deadline, "the count never waited for the delete's lock"
            await asyncio.sleep(0.005)  # polling the server, not timing anything
    finally:
        engine.dispose()


def test_a_count_waits_for_a_delete_under_way_and_counts_only_what_is_left(
    database_url: str, admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    async def work(storage: Storage) -> None:
        await storage.usage.record(1, DAY, 1, WHEN, OPERATION)  # the worker's connection is open
        with write_transaction(admin.engine) as db:
            removal.delete_application(db, 3, "application 'beta-a'", cascade=True)
            counting = asyncio.gather(
                storage.usage.record(3, DAY, 3, WHEN, OPERATION),
                storage.usage.record(1, DAY, 1, WHEN, OPERATION),
            )
            await waiting_for_a_lock(database_url)
            assert not counting.done()
        # The delete has committed: the count of the deleted application is dropped.
        await counting

    run(database_url, work)
    assert stored_count(database_url, 1) == 2
    assert stored_count(database_url, 3) == 0


def refuse_counts_on(database_url: str, day: date) -> None:
    """Make the database itself refuse any count on ``day`` (a trigger, or a CHECK constraint)."""
    engine = engine_for(database_url)
    refused = day.isoformat()  # a date, not input: safe to write into the statement
    try:
        with engine.begin() as db:
            if db.dialect.name == "sqlite":
                db.execute(
                    text(
                        "CREATE TRIGGER refuse_day BEFORE INSERT ON usage_days"
                        f" WHEN NEW.day = '{refused}' BEGIN SELECT RAISE(ABORT, 'refused'); END"
                    )
                )
            else:
                db.execute(
                    text(
                        "ALTER TABLE usage_days ADD CONSTRAINT refuse_day"
                        f" CHECK (day <> '{refused}')"
                    )
                )
    finally:
        engine.dispose()


def test_a_failing_count_fails_its_callers_and_the_next_one_lands(
    database_url: str, catalogue: dict[str, str]
) -> None:
    refused = DAY - timedelta(days=1)
    refuse_counts_on(database_url, refused)

    async def work(storage: Storage) -> None:
        # One batch: the database refuses one of its counts, so the whole commit fails.
        outcomes = await asyncio.gather(
            storage.usage.record(1, refused, 1, WHEN, OPERATION),
            storage.usage.record(2, DAY, 2, WHEN, OPERATION),
            return_exceptions=True,
        )
        assert all(isinstance(o, Exception) and "refuse" in str(o) for o in outcomes), outcomes
        await storage.usage.record(1, DAY, 1, WHEN, OPERATION)

    run(database_url, work)
    assert stored_count(database_url, 1) == 1
    assert stored_count(database_url, 2) == 0


def test_a_cancelled_caller_is_not_counted_and_does_not_cancel_the_others_count(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """A request cancelled at its deadline is answered 503, which is never counted."""

    async def work(storage: Storage) -> None:
        leaving = asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
        staying = asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
        await asyncio.sleep(0)
        leaving.cancel()
        await staying

    run(database_url, work)
    assert stored_count(database_url, 1) == 1


def test_a_count_taken_back_leaves_with_the_next_commit(
    database_url: str, catalogue: dict[str, str]
) -> None:
    async def work(storage: Storage) -> list[int]:
        counted = [await storage.usage.record(1, DAY, 1, WHEN, OPERATION) for _ in range(3)]
        storage.usage.retract(1, DAY, OPERATION)
        counted.append(await storage.usage.record(1, DAY, 1, WHEN, OPERATION))
        storage.usage.retract(1, DAY, OPERATION)  # alone: committed by itself
        deadline = time.monotonic() + 5
        while (await storage.catalogue.usage(1, DAY, DAY)).get(DAY) != 2:
            assert time.monotonic() < deadline, "the count taken back did not leave within 5 s"
            await asyncio.sleep(0.005)  # waiting for a commit, not timing anything
        return [c.requests for c in counted]

    assert run(database_url, work) == [1, 2, 3, 3]  # the one taken back left first
    assert stored_count(database_url, 1) == 2


def test_a_caller_cancelled_once_its_commit_has_left_is_taken_back(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """Cancelled (its request answered 503) after its count left for the database: the
    count lands, then leaves with the next commit."""

    async def work(storage: Storage) -> None:
        await storage.usage.record(1, DAY, 1, WHEN, OPERATION)  # connections open
        if database_url.startswith("sqlite"):
            # The commit is one step of the loop: cancelled between it and the caller's wakeup.
            leaving = asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
            while storage.counter.pending_counts == 0:
                await asyncio.sleep(0)
            while storage.counter.pending_counts:
                await asyncio.sleep(0)
            assert not leaving.done()
            leaving.cancel()
        else:
            # The batch waits on a row lock another session holds: cancelled meanwhile.
            with psycopg.connect(asyncpg_dsn(database_url), autocommit=False) as session:
                session.execute("SELECT * FROM usage_days WHERE application_id = 1 FOR UPDATE")
                leaving = asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
                while not await asyncio.to_thread(_waiting_on_a_lock, database_url):
                    await asyncio.sleep(0.005)  # polling the database, not timing anything
                leaving.cancel()
                session.rollback()
        with contextlib.suppress(asyncio.CancelledError):
            await leaving
        deadline = time.monotonic() + 5
        while (await storage.catalogue.usage(1, DAY, DAY)).get(DAY) != 1:
            assert time.monotonic() < deadline, "the count was not taken back within 5 s"
            await storage.usage.record(1, DAY, 1, WHEN, OPERATION)  # a commit to carry it
            storage.usage.retract(1, DAY, OPERATION)
            await asyncio.sleep(0.005)

    run(database_url, work)
    assert stored_count(database_url, 1) == 1


def _waiting_on_a_lock(database_url: str) -> bool:
    with psycopg.connect(asyncpg_dsn(database_url)) as db:
        found = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO usage_days%'"
        ).fetchone()
    return found is not None and found[0] > 0


def test_a_count_says_the_days_count_and_a_dropped_one_says_zero(
    database_url: str, catalogue: dict[str, str]
) -> None:
    async def work(storage: Storage) -> tuple[int, list[int], int]:
        first = await storage.usage.record(1, DAY, 1, WHEN, OPERATION)
        both = await asyncio.gather(
            storage.usage.record(1, DAY, 1, WHEN, OPERATION),
            storage.usage.record(1, DAY, 1, WHEN, OPERATION),
        )
        gone = await storage.usage.record(999, DAY, 3, WHEN, OPERATION)  # no such application
        return first.requests, [c.requests for c in both], gone.requests

    assert run(database_url, work) == (1, [3, 3], 0)


def test_the_last_used_time_is_written_with_the_count(
    database_url: str, catalogue: dict[str, str]
) -> None:
    run(database_url, lambda storage: storage.usage.record(1, DAY, 1, WHEN, OPERATION))
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            used = db.execute(text("SELECT last_used_at FROM secret_keys WHERE id = 1")).scalar()
    finally:
        engine.dispose()
    assert used == WHEN


def test_keys_packages_and_buyers_are_read_by_name(
    database_url: str, catalogue: dict[str, str]
) -> None:
    async def work(storage: Storage) -> None:
        await storage.catalogue.generation()
        record = await storage.catalogue.find_key(keys.hash_key(catalogue["beta-paris"]))
        assert record is not None
        assert (record.application.name, record.application.timezone) == (
            "beta-paris",
            "Europe/Paris",
        )
        assert await storage.catalogue.find_key(keys.hash_key("pkc_" + "x" * 40)) is None
        package = await storage.catalogue.package("com.beta.paid")
        assert package is not None
        assert (package.price, package.currency, package.source.name) == (
            Decimal("2.50"),
            "EUR",
            "Beta",
        )
        assert await storage.catalogue.package("com.nothing") is None
        alpha = await storage.catalogue.package("com.alpha.paid")
        assert alpha is not None
        found = await storage.catalogue.buyers(alpha.id, alpha.source.id, limit=2, offset=0)
        assert found.total == 3
        assert [p.txn_id for p in found.purchases] == ["P-NEW", "S-MID"]

    run(database_url, work)


def test_a_change_reaches_the_cache_and_nothing_stale_is_served(
    database_url: str, admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    key = keys.hash_key(catalogue["alpha-a"])

    async def work(storage: Storage) -> None:
        before = await caught_up(storage)
        assert await storage.catalogue.find_key(key) is not None  # now cached
        package = await storage.catalogue.package("com.alpha.paid")
        assert package is not None
        assert package.price == Decimal("1.99")
        # The operator revokes the key and changes a price, as another process would.
        await asyncio.to_thread(admin.revoke_key, keys.display_prefix(catalogue["alpha-a"]))
        after = await caught_up(storage)
        assert after > before
        assert await storage.catalogue.find_key(key) is None
        with admin.engine.begin() as db:
            db.execute(text("UPDATE packages SET price = '3.00' WHERE package = 'com.alpha.paid'"))
        await caught_up(storage)
        package = await storage.catalogue.package("com.alpha.paid")
        assert package is not None
        assert package.price == Decimal("3.00")

    run(database_url, work)


def test_deep_buyers_pages_agree_with_a_plain_scan(
    database_url: str, admin: CatalogueAdmin, clock: Clock
) -> None:
    admin.load(
        sources=[f.source(1, "Deep")],
        packages=[f.package(1, 1, "com.deep.paid")],
        purchases=[
            f.purchase(
                1, 1 if n % 3 else None, clock.now - timedelta(minutes=n // 2), txn_id=f"T{n:04}"
            )
            for n in range(450)
        ],
    )

    async def work(storage: Storage) -> list[str]:
        await caught_up(storage)
        package = await storage.catalogue.package("com.deep.paid")
        assert package is not None
        seen: list[str] = []
        for offset in range(0, 500, 50):  # past 200: the cache's marks are used
            found = await storage.catalogue.buyers(package.id, 1, limit=50, offset=offset)
            assert found.total == 450
            seen += [p.txn_id for p in found.purchases]
        return seen

    seen = run(database_url, work)
    expected = sorted(range(450), key=lambda n: (n // 2, f"T{n:04}"))
    assert seen == [f"T{n:04}" for n in expected]


def test_rows_added_after_a_load_with_ids_get_new_ids(
    database_url: str, admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    # The catalogue fixture loads sources 1-2 and applications 1-4 with their own ids.
    source = admin.add_source("Gamma", "https://gamma.example/")
    assert source.id > 2
    issued = admin.create_application("Gamma", "gamma-app")
    assert issued.application.id > 4
    assert admin.create_key("Alpha", "alpha-a").application.id == 1


def test_counts_by_operation_land_with_the_days_counts_and_sum_to_them(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """Two workers count concurrently: each batch writes both tables in one commit."""
    yesterday = DAY - timedelta(days=1)
    # (application, key, day, operation, requests)
    plan = [
        (1, 1, DAY, "package/details", 9),
        (1, 1, DAY, "package/buyers", 4),
        (1, 1, yesterday, "application/usage", 3),
        (2, 2, DAY, "package/details", 5),
        (999, 3, DAY, "package/details", 2),  # no such application: dropped from both
    ]

    async def work(first: Storage) -> tuple[dict[date, int], dict[date, dict[str, int]]]:
        second = open_storage(Settings(database_url=database_url))
        try:
            await asyncio.gather(
                *(
                    (first if n % 2 else second).usage.record(a, d, k, WHEN, operation)
                    for a, k, d, operation, requests in plan
                    for n in range(requests)
                )
            )
            return (
                await first.catalogue.usage(1, yesterday, DAY),
                await second.catalogue.usage_operations(1, yesterday, DAY),
            )
        finally:
            await second.close()

    days, operations = run(database_url, work)
    assert operations == {
        DAY: {"package/details": 9, "package/buyers": 4},
        yesterday: {"application/usage": 3},
    }
    assert {day: sum(split.values()) for day, split in operations.items()} == days
    assert run(database_url, lambda storage: storage.catalogue.usage_operations(2, DAY, DAY)) == {
        DAY: {"package/details": 5}
    }
    assert (
        run(database_url, lambda storage: storage.catalogue.usage_operations(999, DAY, DAY)) == {}
    )


def test_a_batch_writes_one_row_per_application_day_and_operation(
    database_url: str, catalogue: dict[str, str]
) -> None:
    async def work(storage: Storage) -> None:
        await asyncio.gather(
            *(storage.usage.record(1, DAY, 1, WHEN, "package/details") for _ in range(30)),
            *(storage.usage.record(1, DAY, 1, WHEN, "package/buyers") for _ in range(10)),
        )
        await storage.usage.record(1, DAY, 1, WHEN, "package/details")

    run(database_url, work)
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            found = db.execute(
                text(
                    "SELECT operation, count FROM usage_operations"
                    " WHERE application_id = 1 ORDER BY operation"
                )
            ).all()
    finally:
        engine.dispose()
    assert [tuple(row) for row in found] == [("package/buyers", 10), ("package/details", 31)]


def test_deleting_an_application_takes_its_counts_by_operation(
    database_url: str, admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    run(database_url, lambda storage: storage.usage.record(3, DAY, 3, WHEN, OPERATION))
    admin.delete_application("Beta", "beta-a", cascade=True)
    assert run(database_url, lambda storage: storage.catalogue.usage_operations(3, DAY, DAY)) == {}
    assert stored_count(database_url, 3) == 0


def test_downloads_land_with_the_batch_and_every_worker_reads_them_at_once(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """Downloads share the requests' commit; a total one worker keeps follows the others'."""
    package, yesterday = "com.alpha.free", DAY - timedelta(days=1)

    async def work(first: Storage) -> None:
        second = open_storage(Settings(database_url=database_url))
        try:
            await caught_up(first)  # listening (PostgreSQL): a total read now may be kept
            assert await first.usage.downloads_total(package) == 0
            await asyncio.gather(
                *(second.usage.record_download(package, DAY) for _ in range(5)),
                second.usage.record(1, DAY, 1, WHEN, OPERATION),
                second.usage.record_download(package, yesterday),
            )
            # Every caller has returned: committed, for any worker to read.
            assert await first.catalogue.downloads(package, yesterday, DAY) == {
                yesterday: 1,
                DAY: 5,
            }
            assert stored_count(database_url, 1) == 1  # the request's count, in the same batch
            deadline = time.monotonic() + 5
            while await first.usage.downloads_total(package) != 6:  # told by a notification
                assert time.monotonic() < deadline, "the first worker kept an old total"
                await asyncio.sleep(0.005)  # waiting for a notification, not timing anything
            await first.usage.record_download(package, DAY)
            await first.usage.record_download(package, DAY, -1)  # a file that did not go
            assert await first.usage.downloads_total(package) == 6  # its own, at once
            assert await second.catalogue.downloads(package, DAY, DAY) == {DAY: 5}
        finally:
            await second.close()

    run(database_url, work)


def test_a_download_whose_caller_went_away_is_not_counted(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """A download cancelled before its commit left is left out of it (before: counted all
    the same); one cancelled once its commit had left is taken back when it lands."""
    package = "com.alpha.free"

    async def work(storage: Storage) -> None:
        await storage.usage.record_download(package, DAY)  # the row exists, connections open
        leaving = asyncio.create_task(storage.usage.record_download(package, DAY))
        staying = asyncio.create_task(storage.usage.record_download(package, DAY))
        await asyncio.sleep(0)  # both wait for the commit about to leave
        leaving.cancel()
        await staying
        if database_url.startswith("sqlite"):
            # The commit is one step of the loop: cancelled between it and the caller's wakeup.
            late = asyncio.create_task(storage.usage.record_download(package, DAY))
            while storage.counter.pending_counts == 0:
                await asyncio.sleep(0)
            while storage.counter.pending_counts:
                await asyncio.sleep(0)
            assert not late.done()
            late.cancel()
        else:
            # The batch waits on a row lock another session holds: cancelled meanwhile.
            with psycopg.connect(asyncpg_dsn(database_url), autocommit=False) as session:
                session.execute(
                    "SELECT * FROM download_days WHERE package = %s FOR UPDATE", [package]
                )
                late = asyncio.create_task(storage.usage.record_download(package, DAY))
                while not await asyncio.to_thread(_waiting_on_a_lock, database_url):
                    await asyncio.sleep(0.005)  # polling the database, not timing anything
                late.cancel()
                session.rollback()
        with contextlib.suppress(asyncio.CancelledError):
            await late
        deadline = time.monotonic() + 5
        while await storage.catalogue.downloads(package, DAY, DAY) != {DAY: 2}:
            assert time.monotonic() < deadline, "the download was not taken back within 5 s"
            await storage.usage.reachable()  # a commit to carry it
            await asyncio.sleep(0.005)

    run(database_url, work)


def test_reachable_takes_a_commit_that_counts_nothing(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """What a download asks before its first byte: the database answers, nothing is written
    (no download row, no usage), and it shares the batch of the counts asked with it."""
    package = "com.alpha.free"

    async def work(storage: Storage) -> None:
        await storage.usage.reachable()  # alone: a batch of its own
        await asyncio.gather(
            storage.usage.reachable(),
            storage.usage.record(1, DAY, 1, WHEN, OPERATION),
            storage.usage.reachable(),
        )
        assert await storage.usage.downloads_total(package) == 0

    run(database_url, work)
    assert stored_count(database_url, 1) == 1  # the request's count alone
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            assert db.execute(text("SELECT count(*) FROM download_days")).scalar_one() == 0
    finally:
        engine.dispose()
