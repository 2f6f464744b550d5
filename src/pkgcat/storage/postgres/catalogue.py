"""The catalogue reader and its pushed change feed on PostgreSQL.

Reads are single statements on pooled asyncpg connections (one round trip
each). A buyers page reads its total and its slice in one REPEATABLE READ
transaction, so the two agree.

The change feed listens on the ``pkgcat_catalogue`` channel: migration 0004
makes every change of the catalogue generation send it with the new value,
so each worker learns of an import or a revoked key as soon as it commits,
without reading anything per request. While the listening connection is down
the feed answers "unknown" (nothing is served from a cache) and reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Callable
from typing import Any

from pkgcat.domain import KeyRecord, Ownership, Package, Sale, SalesTotal
from pkgcat.storage import rows, seller_rows
from pkgcat.storage.interfaces import BuyerKey, BuyersHint, BuyersSlice
from pkgcat.storage.postgres.connection import PostgresDatabase
from pkgcat.storage.postgres.counter import DOWNLOADS_CHANNEL

log = logging.getLogger("pkgcat.storage.postgres")

CHANNEL = "pkgcat_catalogue"
"""The NOTIFY channel of catalogue generation changes (migration 0004)."""

_FIND_KEY = rows.numbered(rows.FIND_KEY)
_PACKAGE = rows.numbered(rows.PACKAGE)
_BUYERS_COUNT = rows.numbered(rows.BUYERS_COUNT)
_STREAMS = {key: rows.numbered(sql) for key, sql in rows.STREAMS.items()}
_KEY_STREAMS = {key: rows.numbered(sql) for key, sql in rows.KEY_STREAMS.items()}
_SECRET = rows.numbered(seller_rows.SECRET)


@functools.lru_cache(maxsize=128)
def _numbered(sql: str) -> str:
    """A seller query (made from constants, a few dozen in all) with PostgreSQL's parameters."""
    return rows.numbered(sql)


class PostgresChanges:
    """:class:`~pkgcat.storage.interfaces.ChangeFeed` pushed by PostgreSQL (LISTEN/NOTIFY)."""

    def __init__(
        self, database: PostgresDatabase, *, retry_every: float = 1.0, check_every: float = 5.0
    ) -> None:
        self._database = database
        self._retry_every = retry_every
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

    def current(self) -> int:
        if self._task is None and not self._closed:
            # In a context of its own: the worker's listener is no request's, and its lines
            # must not carry the id of the request that happened to start it.
            self._task = asyncio.get_running_loop().create_task(
                self._listen(), context=contextvars.Context()
            )
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
        """Keep one connection listening; on loss, forget the generation and reconnect."""
        down = False
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
                await self._watch(connection)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._value = -1
                self._downloads()
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
            if not self._closed:
                await asyncio.sleep(self._retry_every)

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


class PostgresCatalogue:
    """:class:`~pkgcat.storage.interfaces.CatalogueReader` on PostgreSQL."""

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database

    async def generation(self) -> int:
        pool = await self._database.pool()
        value = await pool.fetchval(rows.GENERATION)
        return -1 if value is None else int(value)

    async def latest_generation(self) -> int:
        return await self.generation()

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        pool = await self._database.pool()
        row = await pool.fetchrow(_FIND_KEY, key_hash)
        return None if row is None else rows.key_record(row)

    async def package(self, package_id: str, *, fresh: bool = False) -> Package | None:  # noqa: ARG002 - always read
        if "\x00" in package_id:  # PostgreSQL text cannot hold it: no package is named so
            return None
        pool = await self._database.pool()
        row = await pool.fetchrow(_PACKAGE, package_id)
        return None if row is None else rows.package(row)

    async def buyers(
        self,
        package_row_id: int,
        source_id: int,
        limit: int,
        offset: int,
        hint: BuyersHint | None = None,
    ) -> BuyersSlice:
        pool = await self._database.pool()
        async with pool.acquire() as db, db.transaction(isolation="repeatable_read", readonly=True):
            value = await db.fetchval(rows.GENERATION)
            generation = -1 if value is None else int(value)
            if hint is not None and hint.generation != generation:
                hint = None  # read in another snapshot: nothing of it can be trusted
            total = hint.total if hint is not None else None
            if total is None:
                total = int(await db.fetchval(_BUYERS_COUNT, package_row_id, source_id))
            if offset >= total:
                return BuyersSlice(generation, total, [])
            start, after = 0, None
            if hint is not None and hint.after is not None and hint.position <= offset:
                start, after = hint.position, hint.after
            wanted = offset - start + limit
            streams = [
                await db.fetch(
                    _STREAMS[(where, after is not None)],
                    ident,
                    *rows.seek_parameters(after),
                    wanted,
                )
                for where, ident in ((rows.OWN, package_row_id), (rows.SOURCE_WIDE, source_id))
            ]
        page = rows.merged_page(streams, offset - start, limit)
        return BuyersSlice(generation, total, [rows.purchase(row) for row in page])

    async def buyer_marks(
        self, package_row_id: int, source_id: int, every: int
    ) -> tuple[int, list[BuyerKey]]:
        pool = await self._database.pool()
        async with pool.acquire() as db, db.transaction(isolation="repeatable_read", readonly=True):
            value = await db.fetchval(rows.GENERATION)
            streams = [
                await db.fetch(_KEY_STREAMS[where], ident, rows.ALL)
                for where, ident in ((rows.OWN, package_row_id), (rows.SOURCE_WIDE, source_id))
            ]
        return (-1 if value is None else int(value)), rows.marks(streams, every)

    async def buyers_after(
        self, package_row_id: int, source_id: int, limit: int, after: BuyerKey | None
    ) -> BuyersSlice:
        pool = await self._database.pool()
        async with pool.acquire() as db, db.transaction(isolation="repeatable_read", readonly=True):
            value = await db.fetchval(rows.GENERATION)
            total = int(await db.fetchval(_BUYERS_COUNT, package_row_id, source_id))
            streams = [
                await db.fetch(
                    _STREAMS[(where, after is not None)],
                    ident,
                    *rows.seek_parameters(after),
                    limit,
                )
                for where, ident in ((rows.OWN, package_row_id), (rows.SOURCE_WIDE, source_id))
            ]
        page = rows.merged_page(streams, 0, limit)
        generation = -1 if value is None else int(value)
        return BuyersSlice(generation, total, [rows.purchase(row) for row in page])

    async def source_packages(
        self,
        source_id: int,
        limit: int,
        after: str | None,
        *,
        paid: bool | None = None,
        online: bool | None = None,
    ) -> list[Package]:
        if after is not None and "\x00" in after:  # PostgreSQL text cannot hold it
            return []
        # Identifiers compared byte by byte, as on SQLite, whatever the database's collation.
        sql, parameters = seller_rows.source_packages(
            source_id, limit, after, paid, online, ' COLLATE "C"'
        )
        pool = await self._database.pool()
        return [rows.package(row) for row in await pool.fetch(_numbered(sql), *parameters)]

    async def ownership(
        self, source_id: int, package_row_id: int, by: str, value: str, model: str | None = None
    ) -> Ownership | None:
        if "\x00" in value or (model is not None and "\x00" in model):
            return None  # PostgreSQL text cannot hold it: no buyer is known so
        sql, parameters = seller_rows.ownership(source_id, package_row_id, by, value, model)
        pool = await self._database.pool()
        row = await pool.fetchrow(_numbered(sql), *parameters)
        return None if row is None else seller_rows.owned(row)

    async def sales(
        self,
        source_id: int,
        first: int,
        end: int,
        limit: int,
        after: BuyerKey | None,
        *,
        package_row_id: int | None = None,
        status: str | None = None,
    ) -> list[Sale]:
        sql, parameters = seller_rows.sales(
            source_id, first, end, limit, after, package_row_id, status
        )
        pool = await self._database.pool()
        return [seller_rows.sale(row) for row in await pool.fetch(_numbered(sql), *parameters)]

    async def sales_totals(
        self,
        source_id: int,
        first: int,
        end: int,
        *,
        package_row_id: int | None = None,
        status: str | None = None,
    ) -> list[SalesTotal]:
        sql, parameters = seller_rows.sales_totals(source_id, first, end, package_row_id, status)
        pool = await self._database.pool()
        return seller_rows.totals(await pool.fetch(_numbered(sql), *parameters))

    async def secret(self, name: str) -> str | None:
        pool = await self._database.pool()
        value = await pool.fetchval(_SECRET, name)
        return None if value is None else str(value)

    async def close(self) -> None:
        await self._database.close()
