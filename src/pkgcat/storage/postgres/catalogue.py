"""The catalogue's executor and its pushed change feed on PostgreSQL.

The reads themselves are :mod:`pkgcat.storage.reads`'s, the same on every database: here
they are single statements on pooled asyncpg connections (one round trip each). A buyers
page reads its total and its slice in one REPEATABLE READ transaction, so the two agree.

The change feed listens on the ``pkgcat_catalogue`` channel: migration 0004
makes every change of the catalogue generation send it with the new value,
so each worker learns of an import or a revoked key as soon as it commits,
without reading anything per request. While the listening connection is down
the feed answers "unknown" (nothing is served from a cache) and reconnects.

The listener is started with the worker (:meth:`PostgresChanges.start`, from the app's
lifespan), not by its first request: a worker no request has reached yet, or none since
PostgreSQL came back, has its caches on all the same, and ``/readyz`` says so. Its
reconnects back off (:func:`reconnect_delay`): quick after a blip, then no more than one
attempt every :data:`RECONNECT_CAP` seconds per worker through a long outage, spread out
so that the workers of every host do not all knock at once when the server returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from pkgcat.storage import rows
from pkgcat.storage.postgres.connection import PostgresDatabase
from pkgcat.storage.postgres.counter import DOWNLOADS_CHANNEL

log = logging.getLogger("pkgcat.storage.postgres")

CHANNEL = "pkgcat_catalogue"
"""The NOTIFY channel of catalogue generation changes (migration 0004)."""

RECONNECT_FIRST = 0.25
"""Seconds before the listener's first attempt to reconnect (before the jitter)."""
RECONNECT_CAP = 2.0
"""Seconds between two attempts, at most, however long PostgreSQL stays away."""


def reconnect_delay(
    failures: int,
    first: float = RECONNECT_FIRST,
    cap: float = RECONNECT_CAP,
    *,
    draw: Callable[[], float] = random.random,
) -> float:
    """Seconds before the next attempt after ``failures`` in a row: doubling from ``first``
    up to ``cap``, then between half and all of it (the jitter keeps workers apart)."""
    full = min(first * 2.0 ** min(failures - 1, 30), cap)
    return full * (0.5 + draw() / 2)


_NUMBERED: dict[str, str] = {}


def _numbered(sql: str) -> str:
    """A statement (made from constants, a few dozen in all) with PostgreSQL's parameters."""
    numbered = _NUMBERED.get(sql)
    if numbered is None:
        numbered = _NUMBERED[sql] = rows.numbered(sql)
    return numbered


class PostgresChanges:
    """:class:`~pkgcat.storage.interfaces.ChangeFeed` pushed by PostgreSQL (LISTEN/NOTIFY)."""

    def __init__(
        self,
        database: PostgresDatabase,
        *,
        retry_first: float = RECONNECT_FIRST,
        retry_cap: float = RECONNECT_CAP,
        check_every: float = 5.0,
    ) -> None:
        self._database = database
        self._retry_first = retry_first
        self._retry_cap = retry_cap
        self._check_every = check_every
        self._value = -1
        self._task: asyncio.Task[None] | None = None
        self._lost: asyncio.Event | None = None
        self._closed = False
        self.on_downloads: Callable[[], None] | None = None
        """Called on each ``pkgcat_downloads`` notification, and when the listener is lost."""

    def listening(self) -> bool:
        """Whether notifications are being received now (a change from now on is told)."""
        return self._value >= 0

    def _downloads(self, *_args: Any) -> None:
        if self.on_downloads is not None:
            self.on_downloads()

    def start(self) -> None:
        """Start listening in the background, on the running loop, if not started yet."""
        if self._task is None and not self._closed:
            # In a context of its own: the worker's listener is no request's, and its lines
            # must not carry the id of the request that happened to start it.
            self._task = asyncio.get_running_loop().create_task(
                self._listen(), context=contextvars.Context()
            )

    def current(self) -> int:
        if self._task is None:  # the worker started it; a feed used without the app starts here
            self.start()
        return self._value

    async def latest(self) -> int:
        return self.current()  # pushed: as fresh as the database tells

    def _notified(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        with contextlib.suppress(ValueError):
            self._value = max(self._value, int(payload))

    def _terminated(self, _connection: Any) -> None:
        self._value = -1  # changes may be missed from now on: trust no cache
        self._downloads()
        if self._lost is not None:
            self._lost.set()

    async def _listen(self) -> None:
        """Keep one connection listening; on loss, forget the generation and reconnect,
        backing off while the attempts fail (:func:`reconnect_delay`)."""
        down = False
        failures = 0
        while not self._closed:
            connection = None
            self._lost = asyncio.Event()
            try:
                connection = await self._database.connect()
                connection.add_termination_listener(self._terminated)
                await connection.add_listener(CHANNEL, self._notified)
                await connection.add_listener(DOWNLOADS_CHANNEL, self._downloads)
                self._downloads()  # anything kept from before may have been missed
                # Read after listening starts: a change committed in between is not missed.
                value = await connection.fetchval(rows.GENERATION)
                self._value = -1 if value is None else max(self._value, int(value))
                if down:
                    log.info("listening for catalogue changes again")
                    down = False
                failures = 0
                await self._watch(connection)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._value = -1
                self._downloads()
                failures += 1
                if not down:
                    log.warning(
                        "cannot listen for catalogue changes on %s (%s); caches are off until it works",
                        self._database.shown,
                        type(error).__name__,
                    )
                    down = True
            finally:
                if connection is not None and not connection.is_closed():
                    with contextlib.suppress(Exception):
                        await connection.close()
            if not self._closed:  # a loss right after it worked waits as a first failure
                delay = reconnect_delay(max(failures, 1), self._retry_first, self._retry_cap)
                await asyncio.sleep(delay)

    async def _watch(self, connection: Any) -> None:
        """Until the connection is lost, read the generation every ``check_every`` seconds.

        A connection dropped without a word (a firewall, a failed-over server)
        delivers no notification and no termination either: the periodic read
        finds it out, and also catches up with anything missed meanwhile.
        """
        assert self._lost is not None
        while True:
            try:
                await asyncio.wait_for(self._lost.wait(), timeout=self._check_every)
            except TimeoutError:
                value = await asyncio.wait_for(
                    connection.fetchval(rows.GENERATION), timeout=self._check_every
                )
                if value is not None:
                    self._value = max(self._value, int(value))
            else:
                return

    async def close(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._database.close()


def _holds_nul(parameters: tuple[object, ...]) -> bool:
    return any(isinstance(value, str) and "\x00" in value for value in parameters)


class PostgresExecutor:
    """:class:`~pkgcat.storage.interfaces.Executor` on PostgreSQL: each statement one round
    trip on a pooled asyncpg connection (``?`` parameters numbered once per statement), a
    snapshot one read-only REPEATABLE READ transaction on one connection."""

    collate = ' COLLATE "C"'  # identifiers compared byte by byte, as on SQLite

    def __init__(self, database: PostgresDatabase, connection: Any = None) -> None:
        self._database = database
        self._connection = connection  # inside a snapshot; else each statement takes the pool

    async def row(self, sql: str, parameters: tuple[object, ...] = ()) -> Any:
        if _holds_nul(parameters):  # PostgreSQL text cannot hold it: nothing stored is so
            return None
        runner = self._connection if self._connection is not None else await self._database.pool()
        return await runner.fetchrow(_numbered(sql), *parameters)

    async def rows(self, sql: str, parameters: tuple[object, ...] = ()) -> Any:
        if _holds_nul(parameters):
            return []
        runner = self._connection if self._connection is not None else await self._database.pool()
        return await runner.fetch(_numbered(sql), *parameters)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PostgresExecutor]:
        pool = await self._database.pool()
        async with pool.acquire() as db, db.transaction(isolation="repeatable_read", readonly=True):
            yield PostgresExecutor(self._database, db)

    async def close(self) -> None:
        await self._database.close()
