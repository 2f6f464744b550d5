"""PostgreSQL's group commit and its pool: batches that follow one another keep one
connection, a quiet worker holds none, and a pool of one connection is never kept from the
reads; each batch commits without waiting for the disk unless the operator asks for it
(pkgcat.storage.postgres.counter)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import date
from typing import Any

import asyncpg
import pytest
from sqlalchemy import make_url, text

from pkgcat.config import Settings
from pkgcat.storage.backends import Storage, open_storage
from pkgcat.storage.engine import engine_for
from tests.conftest import stored_count

DAY = date(2024, 3, 31)
WHEN = 1_711_886_400
OPERATION = "package/details"
WAVES = 6
PER_WAVE = 10


def _acquisitions(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """A list that grows by one each time any asyncpg pool lends a connection."""
    lent: list[None] = []
    real: Callable[..., Any] = asyncpg.Pool.acquire

    def acquire(pool: asyncpg.Pool, *args: Any, **kwargs: Any) -> Any:
        lent.append(None)
        return real(pool, *args, **kwargs)

    monkeypatch.setattr(asyncpg.Pool, "acquire", acquire)
    return lent


def _gated(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """An event each statement fetched from PostgreSQL waits for, and clears as it goes: the
    test says when each batch may reach the database."""
    gate = asyncio.Event()
    real: Callable[..., Any] = asyncpg.connection.Connection.fetch

    async def fetch(connection: asyncpg.Connection, *args: Any, **kwargs: Any) -> Any:
        await gate.wait()
        gate.clear()
        return await real(connection, *args, **kwargs)

    monkeypatch.setattr(asyncpg.connection.Connection, "fetch", fetch)
    return gate


async def _waves(storage: Storage, gate: asyncio.Event) -> None:
    """WAVES waves of counts, each one waiting before the batch ahead of it may land: every
    batch but the last finds the next one's requests waiting when it lands."""

    def wave() -> list[asyncio.Task[object]]:
        return [
            asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
            for _ in range(PER_WAVE)
        ]

    waiting = wave()
    await asyncio.sleep(0)  # they have joined a batch, held at the gate
    for _ in range(WAVES - 1):
        following = wave()
        await asyncio.sleep(0)  # they wait behind it
        gate.set()  # the batch ahead lands
        await asyncio.gather(*waiting)
        waiting = following
    gate.set()
    await asyncio.gather(*waiting)


def _counted_in_waves(
    database_url: str, pool_size: int, gate: asyncio.Event
) -> tuple[int, int | None]:
    """Count the waves on a new worker's storage; the connections in use once they landed."""

    async def main() -> tuple[int, int | None]:
        storage = open_storage(Settings(database_url=database_url, database_pool_size=pool_size))
        try:
            await _waves(storage, gate)
            use = storage.pool_use()
            return stored_count(database_url, 1), None if use is None else use.in_use
        finally:
            await storage.close()

    return asyncio.run(main())


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize(("pool_size", "loans"), [(4, 1), (1, WAVES)])
def test_batches_in_a_row_keep_one_connection_but_a_pool_of_one_gets_it_back(
    database_url: str,
    catalogue: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    pool_size: int,
    loans: int,
) -> None:
    """One loan for all the batches (before: one a batch); a pool of one connection has it
    back after each batch, since the reads of the request path need it too. A quiet worker
    holds none either way."""
    lent = _acquisitions(monkeypatch)
    gate = _gated(monkeypatch)
    counted, in_use = _counted_in_waves(database_url, pool_size, gate)
    assert counted == WAVES * PER_WAVE
    assert len(lent) == loans
    assert in_use == 0  # given back once no batch followed


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_connection_kept_for_a_batch_that_never_comes_goes_back(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """The requests waiting behind a batch in flight are all cancelled (answered 503 at their
    deadline): the connection kept for them goes back to the pool all the same."""

    async def main() -> tuple[int, list[int]]:
        storage = open_storage(Settings(database_url=database_url))
        try:
            first = [
                asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
                for _ in range(PER_WAVE)
            ]
            await asyncio.sleep(0)  # the first batch leaves
            behind = [
                asyncio.create_task(storage.usage.record(1, DAY, 1, WHEN, OPERATION))
                for _ in range(PER_WAVE)
            ]
            await asyncio.sleep(0)  # they wait behind it
            for task in behind:
                task.cancel()
            await asyncio.gather(*first)
            await asyncio.gather(*behind, return_exceptions=True)
            in_use = []
            for _ in range(1000):  # until the pool has it back; 5 s at most
                use = storage.pool_use()
                assert use is not None
                in_use.append(use.in_use)
                if use.in_use == 0:
                    break
                await asyncio.sleep(0.005)  # waiting for the release, not timing anything
            return stored_count(database_url, 1), in_use
        finally:
            await storage.close()

    counted, in_use = asyncio.run(main())
    assert counted == PER_WAVE
    assert in_use[-1] == 0


_PROBE = """
CREATE TABLE commit_probe (tablename text, synchronous_commit text);
CREATE FUNCTION commit_probe() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO commit_probe VALUES (TG_TABLE_NAME, current_setting('synchronous_commit'));
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER usage_probe AFTER INSERT OR UPDATE ON usage_days
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION commit_probe();
CREATE CONSTRAINT TRIGGER downloads_probe AFTER INSERT OR UPDATE ON download_days
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION commit_probe();
CREATE CONSTRAINT TRIGGER touches_probe AFTER UPDATE ON secret_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION commit_probe();
"""
"""Deferred triggers run as their transaction commits: each records the ``synchronous_commit``
the commit itself runs with, which decides whether it waits for the disk."""
_UNPROBE = """
DROP TRIGGER usage_probe ON usage_days;
DROP TRIGGER downloads_probe ON download_days;
DROP TRIGGER touches_probe ON secret_keys;
DROP FUNCTION commit_probe();
DROP TABLE commit_probe;
"""


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize(
    ("synchronous", "committed_with"), [(False, "off"), (True, "local")], ids=["default", "set"]
)
def test_counts_commit_without_waiting_for_the_disk_unless_asked(
    database_url: str, catalogue: dict[str, str], synchronous: bool, committed_with: str
) -> None:
    """By default a batch of counts (usage and downloads alike) and its keys' last-used times
    commit with ``synchronous_commit=off``; with ``PKGCAT_DATABASE_SYNCHRONOUS_COUNTS`` they keep
    the database's own setting, here ``local`` from the connection's options."""
    engine = engine_for(database_url)
    options = make_url(database_url).update_query_dict({"options": "-c synchronous_commit=local"})
    try:
        with engine.begin() as db:
            db.execute(text(_PROBE))

        async def main() -> None:
            storage = open_storage(
                Settings(
                    database_url=options.render_as_string(hide_password=False),
                    database_synchronous_counts=synchronous,
                )
            )
            try:
                await asyncio.gather(
                    *(storage.usage.record(1, DAY, 1, WHEN, OPERATION) for _ in range(PER_WAVE))
                )
                await storage.usage.record_download("com.alpha.paid", DAY)
                await storage.usage.record(1, DAY, 1, WHEN + 3600, OPERATION)  # touched again
            finally:
                await storage.close()

        asyncio.run(main())
        with engine.connect() as db:
            probed = db.execute(
                text("SELECT tablename, synchronous_commit FROM commit_probe")
            ).all()
        # Left in place by a failure above: the fixture then finds the schema changed, and
        # drops the database instead of handing it to the next test.
        with engine.begin() as db:
            db.execute(text(_UNPROBE))
    finally:
        engine.dispose()
    assert stored_count(database_url, 1) == PER_WAVE + 1
    assert sorted(set(probed)) == [
        ("download_days", committed_with),
        ("secret_keys", committed_with),
        ("usage_days", committed_with),
    ]
