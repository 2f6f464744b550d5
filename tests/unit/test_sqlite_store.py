"""The SQLite counter's own behaviour: a busy write lock, loops, checkpoints (the contract suite covers the rest)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from datetime import date

import pytest

from pkgcat import keys
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.interfaces import Counted
from pkgcat.storage.sqlite import SqliteChanges, SqliteCounter, SqliteDatabase, sqlite_path
from pkgcat.storage.sqlite.connection import JOURNAL_SIZE_LIMIT

DAY = date(2024, 3, 31)
WHEN = 1_711_886_400
OPERATION = "package/details"


@pytest.fixture
def database_url(sqlite_url: str) -> str:
    return sqlite_url


def stored(database_url: str) -> int:
    with sqlite3.connect(sqlite_path(database_url)) as db:
        (count,) = db.execute("SELECT coalesce(sum(count), 0) FROM usage_days").fetchone()
    return int(count)


def hold_write_lock(database_url: str) -> sqlite3.Connection:
    """Another connection in the middle of a write transaction (an import, another worker)."""
    other = sqlite3.connect(sqlite_path(database_url), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_counts_of_one_turn_share_a_commit_and_all_land(
    database_url: str, catalogue: dict[str, str]
) -> None:
    store = SqliteCounter(SqliteDatabase(database_url))

    async def main() -> None:
        await asyncio.gather(*(store.record(1, DAY, 1, WHEN, OPERATION) for _ in range(40)))
        assert stored(database_url) == 40
        await store.record(3, DAY, 3, WHEN, OPERATION)

    asyncio.run(main())
    assert stored(database_url) == 41


def test_a_busy_write_lock_is_waited_for_without_blocking_the_loop(
    database_url: str, catalogue: dict[str, str]
) -> None:
    store = SqliteCounter(SqliteDatabase(database_url))
    other = hold_write_lock(database_url)

    async def main() -> None:
        counting = asyncio.create_task(store.record(1, DAY, 1, WHEN, OPERATION))
        # The loop stays free while the lock is held: other work runs, the count waits.
        for _ in range(20):
            await asyncio.sleep(0.001)
        assert not counting.done()
        assert stored(database_url) == 0
        other.execute("COMMIT")
        await asyncio.wait_for(counting, timeout=10)

    asyncio.run(main())
    assert stored(database_url) == 1


def test_a_lock_held_too_long_fails_the_waiting_counts_and_leaves_the_store_usable(
    database_url: str, catalogue: dict[str, str]
) -> None:
    store = SqliteCounter(SqliteDatabase(database_url), busy_budget=0.05)
    other = hold_write_lock(database_url)

    async def main() -> None:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await asyncio.wait_for(store.record(1, DAY, 1, WHEN, OPERATION), timeout=10)
        other.execute("ROLLBACK")
        await store.record(1, DAY, 1, WHEN, OPERATION)  # no transaction or lock was left behind

    asyncio.run(main())
    assert stored(database_url) == 1
    with sqlite3.connect(sqlite_path(database_url), isolation_level=None) as db:
        db.execute("BEGIN IMMEDIATE")  # the store holds no write lock
        db.execute("ROLLBACK")


def test_a_failing_statement_rolls_back_and_the_next_commit_works(
    database_url: str, catalogue: dict[str, str]
) -> None:
    store = SqliteCounter(SqliteDatabase(database_url))
    refused = DAY.replace(day=1)
    with sqlite3.connect(sqlite_path(database_url)) as db:
        # The database itself refuses any count on that day.
        db.execute(
            "CREATE TRIGGER refuse_day BEFORE INSERT ON usage_days"
            f" WHEN NEW.day = '{refused.isoformat()}' BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )

    async def main() -> None:
        with pytest.raises(sqlite3.IntegrityError, match="refused"):
            await store.record(1, refused, 1, WHEN, OPERATION)
        await store.record(1, DAY, 1, WHEN, OPERATION)

    asyncio.run(main())
    assert stored(database_url) == 1


def test_a_cancelled_caller_is_left_out_of_the_others_commit(
    database_url: str, catalogue: dict[str, str]
) -> None:
    store = SqliteCounter(SqliteDatabase(database_url))

    async def main() -> None:
        leaving = asyncio.create_task(store.record(1, DAY, 1, WHEN, OPERATION))
        staying = asyncio.create_task(store.record(1, DAY, 1, WHEN, OPERATION))
        await asyncio.sleep(0)
        leaving.cancel()  # answered 503 at its deadline: never counted
        await staying

    asyncio.run(main())
    assert stored(database_url) == 1


def test_one_store_serves_one_event_loop(database_url: str, catalogue: dict[str, str]) -> None:
    store = SqliteCounter(SqliteDatabase(database_url))
    asyncio.run(store.record(1, DAY, 1, WHEN, OPERATION))
    with pytest.raises(RuntimeError, match="one event loop"):
        asyncio.run(store.record(1, DAY, 1, WHEN, OPERATION))


def test_counts_reach_the_database_file_through_the_checkpoint_thread(
    database_url: str, catalogue: dict[str, str]
) -> None:
    store = SqliteCounter(SqliteDatabase(database_url))

    async def main() -> None:
        await store.record(1, DAY, 1, WHEN, OPERATION)
        await store.close()  # waits for the checkpoint the commit started

    asyncio.run(main())
    # Read the main file alone, ignoring the WAL: the count was copied into it.
    path = sqlite_path(database_url)
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as db:
        (count,) = db.execute("SELECT coalesce(sum(count), 0) FROM usage_days").fetchone()
    assert count == 1


def test_a_commit_on_the_request_connection_leaves_the_database_file_alone(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """docs/architecture.md: page copying never stalls a request, the checkpoint thread does it.

    SQLite's default is to checkpoint inside the commit that brings the WAL past
    1000 pages, copying them into the database file there and then. A commit on
    the server's connection never does: the file is unchanged after it.
    """
    database = SqliteDatabase(database_url)
    path = sqlite_path(database_url)
    before = os.path.getsize(path)
    db = database.db
    db.execute("BEGIN")
    db.execute("CREATE TABLE bulk (data BLOB)")
    db.executemany("INSERT INTO bulk VALUES (?)", ([bytes(4000)] for _ in range(1500)))
    db.execute("COMMIT")
    try:
        assert os.path.getsize(f"{path}-wal") > 1500 * 4000  # the commit crossed 1000 pages
        assert os.path.getsize(path) == before
    finally:
        database.close()


def test_a_grown_wal_file_is_restarted_and_cut_back_to_the_limit(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """docs/reliability.md: the WAL file does not keep its peak size while the server runs.

    A bulk transaction (an import's, say) grows the log past the restart threshold;
    the checkpoint thread then restarts it, and the next commit starts the file over
    and cuts it back to the pragma's limit.
    """
    path = sqlite_path(database_url)
    database = SqliteDatabase(database_url)
    db = database.db
    db.execute("BEGIN")
    db.execute("CREATE TABLE bulk (data BLOB)")
    db.executemany("INSERT INTO bulk VALUES (?)", ([bytes(4000)] for _ in range(5000)))
    db.execute("COMMIT")
    assert os.path.getsize(f"{path}-wal") > JOURNAL_SIZE_LIMIT
    store = SqliteCounter(database)

    async def main() -> None:
        await store.record(1, DAY, 1, WHEN, OPERATION)  # its commit starts a checkpoint
        await store.close()  # waits for it
        after = SqliteCounter(SqliteDatabase(database_url))
        await after.record(1, DAY, 1, WHEN, OPERATION)
        await after.close()

    asyncio.run(main())
    assert os.path.getsize(f"{path}-wal") <= JOURNAL_SIZE_LIMIT
    assert stored(database_url) == 2


def test_the_wal_file_stays_bounded_under_steady_commits(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """docs/reliability.md: under steady load the log restarts, so the file stays bounded.

    A commit lands while each checkpoint runs, as under a server's steady load:
    a PASSIVE checkpoint then never leaves the whole log copied when the next
    write begins, and the file grew by every commit (to 1 GiB in a 90 s soak).
    A count is committed every half millisecond or so for some seconds, each
    commit adding a page to the log: the file stays under the pragma's limit.
    """
    path = sqlite_path(database_url)
    store = SqliteCounter(SqliteDatabase(database_url))
    commits = 5_000  # about 20 MiB of log, over several checkpoints

    async def main() -> int:
        peak = 0
        for n in range(commits):
            await store.record(1 + n % 2, DAY, 1 + n % 2, WHEN, OPERATION)
            await asyncio.sleep(0.0005)  # the load's pace, so that checkpoints come round
            peak = max(peak, os.path.getsize(f"{path}-wal"))
        await store.close()
        return peak

    peak = asyncio.run(main())
    assert stored(database_url) == commits
    assert peak <= JOURNAL_SIZE_LIMIT, f"the WAL file reached {peak / 2**20:.1f} MiB"


def test_a_revoked_keys_count_is_dropped_and_its_neighbours_land(
    database_url: str, admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    spare = admin.create_key("Alpha", "alpha-a")  # a second key of application 1
    with sqlite3.connect(sqlite_path(database_url)) as db:
        (spare_id,) = db.execute(
            "SELECT id FROM secret_keys WHERE prefix = ?", (spare.prefix,)
        ).fetchone()
    store = SqliteCounter(SqliteDatabase(database_url))

    async def main() -> list[Counted]:
        await store.record(1, DAY, 1, WHEN, OPERATION)  # the worker's connection is open
        admin.revoke_key(keys.display_prefix(catalogue["alpha-a"]))  # key 1
        return list(
            await asyncio.gather(
                store.record(1, DAY, 1, WHEN, OPERATION),
                store.record(1, DAY, spare_id, WHEN, OPERATION),
            )
        )

    revoked, live = asyncio.run(main())
    assert revoked.requests == 0
    assert live.requests == 2  # the first request and the spare key's
    assert live.generation >= 0
    assert stored(database_url) == 2


def test_one_read_of_the_generation_serves_a_turn_and_a_later_request_sees_a_change(
    database_url: str, catalogue: dict[str, str], admin: CatalogueAdmin
) -> None:
    """Refused keys ask for the latest generation; a crowd of them in one turn of the loop
    costs one statement, and a key created before a request arrives is still seen by it."""
    database = SqliteDatabase(database_url)
    changes = SqliteChanges(database)
    reads: list[str] = []
    database.db.set_trace_callback(reads.append)

    async def main() -> None:
        crowd = await asyncio.gather(*(changes.latest() for _ in range(20)))
        assert len(set(crowd)) == 1
        assert sum("catalogue_generation" in sql for sql in reads) == 1
        admin.create_key("Alpha", "alpha-a")  # as another process would: the generation moves
        later = asyncio.get_running_loop().create_task(changes.latest())
        assert await later > crowd[0]

    asyncio.run(main())
