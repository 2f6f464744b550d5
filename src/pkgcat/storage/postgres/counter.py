"""The usage counter on PostgreSQL: durable per-day counts by group commit.

The requests that reach :meth:`PostgresCounter.record` while no commit is in
flight form a batch; one statement commits the batch (every count as an
upsert: one round trip, one transaction), and each caller resumes once it is
committed: a request answered 200 is counted even if its worker dies right
after. Requests arriving while a batch is in flight form the next one, so
under load a round trip carries as many counts as arrived during the last.
Rows are written in (application, day) order, so two workers' batches
touching the same rows wait for each other instead of deadlocking.

The statement commits with ``synchronous_commit=off``, which it sets for its own
transaction (``set_config``), and so does the last-used times' (below): the commit is
in PostgreSQL before a caller resumes, so a killed worker loses no count, but it does
not wait for the WAL's flush to disk, which had held every request of a batch for as
long as the disk took. A crash of PostgreSQL or of its machine can lose the last
fraction of a second of counts, as a power loss can on SQLite's ``synchronous=NORMAL``.
With ``synchronous`` (``PKGCAT_DATABASE_SYNCHRONOUS_COUNTS``) the database's own
setting applies.

A count of an application deleted while its request was under way (``pkgcat
app delete`` or ``source delete --cascade`` on a serving database) is dropped
with the application; the batch's other counts land.

The same statement adds the batch's counts by operation to
``usage_operations`` (a second INSERT in a WITH clause, one row per
application, day and operation, with the same join): they commit with the
day's counts, or not at all, so a day's operations always sum to its count.
Its rows are locked after those of ``usage_days`` (PostgreSQL runs a WITH
INSERT the main query does not read once that query is done), and only a
batch holding the same (application, day) row can want the same ones: no new
deadlock.

Last-used times (at most one write a minute per key and worker) follow in a
second statement of the same batch, which locks the key rows in id order
first, for the same reason.

A 503 is never counted. The statement carries the batch's cutoff (the
earliest of its requests' deadlines, less a margin): if it reaches the
database later than that (a database that stopped answering, then woke), it
counts nothing, and its requests fail as for an unreachable database. A
request cancelled at its deadline before its batch left is not in it; one
cancelled while its batch was in flight, if that batch lands, is taken back
(:meth:`PostgresCounter.retract`) by the next batch, as are the counts of
requests answered 503 after their count landed: as negative counts in the
same statement.

Whole downloads of the served repository (:meth:`PostgresCounter.record_download`)
join the batch too, a third INSERT of the same statement into ``download_days``
(one row per package and UTC day, in that order). Each worker keeps the
counted total of the packages details asked for, and drops them all when the
``pkgcat_downloads`` notification of a commit arrives (migration 0008), or
while it is not listening.

Downloads ride under the same cutoff: a batch too late counts none of them.

Batches that follow one another (the next one's requests arrived while the last was in
flight: the server is busy) keep the pool's connection from one to the next, up to
:data:`HOLD_FOR` of them: acquiring and releasing it cost about 40 us of the worker's CPU
each time, close to what the round trip itself costs it (docs/benchmarks.md). A batch that
finds no other waiting gives it back, so a quiet worker holds none; so does a batch whose
statement failed, and a pool of one connection, which the reads need too, is never held.
The connection always goes back to the pool it came from.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import date
from typing import Any, NamedTuple

from pkgcat.loops import RunningLoop
from pkgcat.storage import rows
from pkgcat.storage.interfaces import Counted
from pkgcat.storage.last_used import LastUsed
from pkgcat.storage.postgres.connection import PostgresDatabase


def _commit_setting(parameter: int) -> str:
    """SQL that sets this transaction's ``synchronous_commit`` to the text parameter
    ``$parameter`` (NULL: as the database sets it), and is never NULL itself."""
    return (
        f"set_config('synchronous_commit', "
        f"coalesce(${parameter}::text, current_setting('synchronous_commit')), true)"
    )


# Only the applications that exist are counted, their rows locked FOR KEY SHARE
# (what the foreign key check takes anyway): a delete in progress is waited
# for, and then its application drops out of the join instead of failing the
# foreign key, and with it every other count of the batch.
_COUNT = f"""
WITH counted AS (
    INSERT INTO usage_days (application_id, day, count)
    SELECT c.application_id, c.day, c.count
    FROM unnest($1::integer[], $2::text[], $3::bigint[]) AS c(application_id, day, count)
    JOIN applications AS a ON a.id = c.application_id
    WHERE statement_timestamp() < to_timestamp($8::float8)
    ORDER BY c.application_id, c.day
    FOR KEY SHARE OF a
    ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + excluded.count
    RETURNING application_id, day, count
), split AS (
    INSERT INTO usage_operations (application_id, day, operation, count)
    SELECT o.application_id, o.day, o.operation, o.count
    FROM unnest($4::integer[], $5::text[], $6::text[], $7::bigint[])
        AS o(application_id, day, operation, count)
    JOIN applications AS a ON a.id = o.application_id
    WHERE statement_timestamp() < to_timestamp($8::float8)
    ORDER BY o.application_id, o.day, o.operation
    FOR KEY SHARE OF a
    ON CONFLICT (application_id, day, operation)
    DO UPDATE SET count = usage_operations.count + excluded.count
), downloaded AS (
    INSERT INTO download_days (package, day, count)
    SELECT d.package, d.day, d.count
    FROM unnest($9::text[], $10::text[], $11::bigint[]) AS d(package, day, count)
    WHERE statement_timestamp() < to_timestamp($8::float8)
    ORDER BY d.package, d.day
    ON CONFLICT (package, day) DO UPDATE SET count = download_days.count + excluded.count
), totalled AS (
    INSERT INTO download_totals (package, count)
    SELECT t.package, t.count FROM unnest($12::text[], $13::bigint[]) AS t(package, count)
    WHERE statement_timestamp() < to_timestamp($8::float8)
    ORDER BY t.package
    ON CONFLICT (package) DO UPDATE SET count = download_totals.count + excluded.count
)
SELECT application_id, day, count FROM counted
UNION ALL  -- a row of nulls: too late, nothing counted
SELECT NULL::integer, NULL::text, NULL::bigint
WHERE statement_timestamp() >= to_timestamp($8::float8)
UNION ALL  -- never a row: sets how this transaction's commit waits for the disk
SELECT NULL::integer, NULL::text, NULL::bigint WHERE {_commit_setting(14)} IS NULL
"""  # noqa: S608 - constants only
_TOUCH = f"""
WITH locked AS (
    SELECT id FROM secret_keys WHERE id = ANY($1::integer[]) ORDER BY id FOR UPDATE
)
UPDATE secret_keys SET last_used_at = used.at
FROM unnest($1::integer[], $2::bigint[]) AS used(key_id, at), locked
WHERE secret_keys.id = used.key_id AND locked.id = used.key_id
    -- checked for each row it updates: its commit waits for the disk as the counts' did
    AND {_commit_setting(3)} IS NOT NULL
"""  # noqa: S608 - constants only
_DOWNLOADS_TOTAL = rows.numbered(rows.DOWNLOADS_TOTAL)
_LANDED = Counted(1, -1)
"""What a download's waiter gets once its batch has landed."""
DOWNLOADS_CHANNEL = "pkgcat_downloads"
"""Notified (migration 0008) by every commit that changes ``download_days``."""
_NEVER = float("inf")
"""The cutoff of a batch with no deadline (PostgreSQL reads it as ``infinity``)."""

Waiter = tuple["asyncio.Future[Counted]", tuple[int, str] | None, str, float]
"""A waiting request's future, the (application, day) of its count (None: a download), its
operation and cutoff."""


HOLD_FOR = 1_000
"""Batches in a row one connection carries before it goes back to the pool, whose own limits
apply then: asyncpg replaces a connection after 50,000 queries, counted when it comes back."""


class Batch(NamedTuple):
    """What one commit carries."""

    counts: dict[tuple[int, str], int]
    operations: dict[tuple[int, str, str], int]
    touches: dict[int, int]
    retracted: dict[tuple[int, str, str], int]
    cutoff: float
    downloads: dict[tuple[str, str], int]
    probe: bool = False
    """A download waits to know the database answers (:meth:`PostgresCounter.reachable`):
    the statement goes even with nothing to count."""


class TooLate(TimeoutError):
    """A batch reached the database after its cutoff: nothing of it was counted."""


class PostgresCounter:
    """:class:`~pkgcat.storage.interfaces.UsageCounter` on PostgreSQL; one per event loop."""

    def __init__(
        self,
        database: PostgresDatabase,
        *,
        told: Callable[[], bool] | None = None,
        synchronous: bool = False,
    ) -> None:
        """``told``: whether this worker is listening for ``pkgcat_downloads`` now (then
        :meth:`forget_downloads` is called on each notification); without it no total is kept.
        ``synchronous``: commit the counts with the database's own ``synchronous_commit``
        (``PKGCAT_DATABASE_SYNCHRONOUS_COUNTS``) instead of ``off``."""
        self._database = database
        self._synchronous_commit = None if synchronous else "off"
        self._told = told
        self._last_used = LastUsed()
        self._touches: dict[int, int] = {}
        # (package, UTC day) -> whole downloads of the next batch
        self._downloads: dict[tuple[str, str], int] = {}
        # package -> counted downloads, while notifications say nothing changed
        self._totals: dict[str, int] = {}
        self._forgotten = 0
        """How many times the totals were dropped: a read that saw it move keeps nothing."""
        # Each waiting request's future, the (application, day) of its count, its operation
        # and cutoff, resolved with that day's count by the batch that carries it.
        self._waiters: list[Waiter] = []
        # (application, day, operation) -> counts to take back with the next batch.
        self._retracted: dict[tuple[int, str, str], int] = {}
        self._in_flight: asyncio.Task[None] | None = None
        self._probing = False
        """Whether the next batch carries a :meth:`reachable` (it then goes, even empty)."""
        self._flying = 0
        self._running = RunningLoop()
        # The pool and its connection the last batch kept for the next (see the module
        # docstring), and how many batches in a row that connection has carried.
        self._held: tuple[Any, Any] | None = None
        self._carried = 0
        self.on_flush: Callable[[float], None] | None = None
        """Called with the seconds each batch's commit took, failed ones included."""

    @property
    def pending_counts(self) -> int:
        """Counts waiting for their commit: the batch in flight and the one queued behind it."""
        return self._flying + len(self._waiters)

    async def downloads_total(self, package: str) -> int:
        known = self._totals.get(package)
        if known is not None:
            return known
        if "\x00" in package:  # PostgreSQL text cannot hold it: no package is named so
            return 0
        listening = self._told is not None and self._told()
        before = self._forgotten
        pool = await self._database.pool()
        total = int(await pool.fetchval(_DOWNLOADS_TOTAL, package) or 0)
        # Kept only if the listener was up before the read and told of no change during it.
        if listening and before == self._forgotten:
            if len(self._totals) >= 10_000:
                self._totals.clear()
            self._totals[package] = total
        return total

    def forget_downloads(self) -> None:
        """Some worker committed downloads (or notifications may have been missed)."""
        self._forgotten += 1
        self._totals.clear()

    async def record_download(self, package: str, day: date, count: int = 1) -> None:
        key = (package, day.isoformat())
        self._downloads[key] = self._downloads.get(key, 0) + count
        try:
            await self._enqueue(None, "", _NEVER)
        finally:
            self.forget_downloads()  # not waiting for our own notification

    async def reachable(self) -> None:
        # The batch's statement with nothing to count writes no row (and so notifies
        # nothing: the trigger of download_days is FOR EACH ROW), but makes its round trip.
        self._probing = True
        await self._enqueue(None, "", _NEVER)

    def _enqueue(
        self, key: tuple[int, str] | None, operation: str, cutoff: float
    ) -> asyncio.Future[Counted]:
        """A future resolved by the batch that carries this count (``key`` None: a download)."""
        loop = self._running()
        waiter: asyncio.Future[Counted] = loop.create_future()
        self._waiters.append((waiter, key, operation, cutoff))
        if len(self._waiters) == 1 and self._in_flight is None:
            # After the callbacks already queued: the requests of this turn join in.
            loop.call_soon(self._send)
        return waiter

    async def record(
        self,
        application_id: int,
        day: date,
        key_id: int,
        when: int,
        operation: str,
        cutoff: float | None = None,
    ) -> Counted:
        key = (application_id, day.isoformat())
        if self._last_used.due(key_id, when):
            self._touches[key_id] = when
        waiter = self._enqueue(key, operation, _NEVER if cutoff is None else cutoff)
        # A caller going away cancels only its own future (and its count, if its batch has
        # not left yet): the batch goes on for the others.
        try:
            return await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled() and waiter.exception() is None and waiter.result().requests:
                # Cancelled just after its batch landed: taken back.
                self.retract(application_id, day, operation)
            raise

    def retract(self, application_id: int, day: date, operation: str) -> None:
        taken = (application_id, day.isoformat(), operation)
        self._retracted[taken] = self._retracted.get(taken, 0) + 1
        if self._in_flight is None and not self._waiters:
            self._running().call_soon(self._send)

    def _send(self) -> None:
        if self._in_flight is not None or not (self._waiters or self._retracted):
            return
        touches, waiters, retracted = self._touches, self._waiters, self._retracted
        self._touches, self._waiters, self._retracted = {}, [], {}
        downloads, self._downloads = self._downloads, {}
        probe, self._probing = self._probing, False
        counts: dict[tuple[int, str], int] = {}
        operations: dict[tuple[int, str, str], int] = {}
        cutoff = _NEVER
        carried = []
        for waiter in waiters:
            if waiter[0].done():  # cancelled: its request has been answered without it
                continue
            carried.append(waiter)
            _, key, operation, until = waiter
            if key is None:  # a download: counted in ``downloads``
                continue
            counts[key] = counts.get(key, 0) + 1
            split = (*key, operation)
            operations[split] = operations.get(split, 0) + 1
            cutoff = min(cutoff, until)
        # Counts taken back ride in the same statement, as negative counts: the totals
        # it returns are exact.
        for (a, d, operation), n in retracted.items():
            counts[a, d] = counts.get((a, d), 0) - n
            operations[a, d, operation] = operations.get((a, d, operation), 0) - n
        self._flying = len(carried)
        self._in_flight = self._running().create_task(
            self._commit(
                carried, Batch(counts, operations, touches, retracted, cutoff, downloads, probe)
            )
        )

    async def _commit(self, waiters: list[Waiter], batch: Batch) -> None:
        started = time.perf_counter()
        landed = False
        try:
            going = batch.counts or batch.downloads or batch.probe
            found = await self._count(batch) if going else []
            if found and found[-1]["application_id"] is None:
                raise TooLate("the batch reached the database after its requests' deadline")
        except BaseException as error:
            self._keep(batch.retracted)
            for waiter, *_ in waiters:
                if not waiter.done():
                    waiter.set_exception(error)
            if isinstance(error, asyncio.CancelledError):
                raise
        else:
            # The generation is not read here: the change feed pushes it (-1: not known).
            totals = {(row["application_id"], row["day"]): int(row["count"]) for row in found}
            for waiter, key, operation, _ in waiters:
                if key is None:  # a download
                    if not waiter.done():
                        waiter.set_result(_LANDED)
                    continue
                requests = totals.get(key, 0)
                if not waiter.done():
                    waiter.set_result(Counted(requests, -1))
                elif requests:  # cancelled at its deadline while the batch was in flight
                    self._keep({(*key, operation): 1})
            landed = True
        finally:
            self._in_flight, self._flying = None, 0
            if self.on_flush is not None:
                self.on_flush(time.perf_counter() - started)
            # Counts to take back left alone wait for a batch that works, not a loop of retries.
            if self._waiters or (self._retracted and landed):
                self._send()
            elif self._held is not None:  # no batch follows after all: given back
                await self._give_back()

    async def _count(self, batch: Batch) -> list[Any]:
        """The batch's statements, on the connection the last batch kept or one of the pool."""
        pool = await self._database.pool()
        if self._held is not None and self._held[0] is not pool:  # that pool was closed since
            await self._give_back()
        held, self._held = self._held, None
        connection = await pool.acquire() if held is None else held[1]
        kept = False
        try:
            found = await self._statements(connection, batch, self._synchronous_commit)
            # Kept for the next batch only if one waits already, and the pool has another
            # connection for the reads.
            kept = bool(self._waiters) and self._carried + 1 < HOLD_FOR and pool.get_max_size() > 1
            return found
        finally:
            if kept:
                self._held, self._carried = (pool, connection), self._carried + 1
            else:
                self._carried = 0
                await pool.release(connection)

    @staticmethod
    async def _statements(
        connection: Any, batch: Batch, synchronous_commit: str | None
    ) -> list[Any]:
        """The batch's counts, in one statement; its last-used times, in a second. Each
        commits with ``synchronous_commit`` (None: as the database sets it)."""
        ordered = sorted(batch.counts.items())
        split = sorted(batch.operations.items())
        fetched = sorted(batch.downloads.items())
        per_package = rows.downloads_by_package(batch.downloads)
        key_ids = sorted(batch.touches)
        found: list[Any] = await connection.fetch(
            _COUNT,
            [a for (a, _), _ in ordered],
            [d for (_, d), _ in ordered],
            [n for _, n in ordered],
            [a for (a, _, _), _ in split],
            [d for (_, d, _), _ in split],
            [o for (_, _, o), _ in split],
            [n for _, n in split],
            batch.cutoff,
            [p for (p, _), _ in fetched],
            [d for (_, d), _ in fetched],
            [n for _, n in fetched],
            [p for p, _ in per_package],
            [n for _, n in per_package],
            synchronous_commit,
        )
        if key_ids and not (found and found[-1]["application_id"] is None):
            touched = [batch.touches[k] for k in key_ids]
            await connection.execute(_TOUCH, key_ids, touched, synchronous_commit)
        return found

    def _keep(self, retracted: dict[tuple[int, str, str], int]) -> None:
        for taken, n in retracted.items():
            self._retracted[taken] = self._retracted.get(taken, 0) + n

    async def close(self) -> None:
        # A batch may be queued behind the one in flight: wait for both.
        while self._in_flight is not None:
            await asyncio.gather(self._in_flight, return_exceptions=True)
        try:
            await self._give_back()  # the pool's close waits for every connection to come back
        finally:
            await self._database.close()

    async def _give_back(self) -> None:
        """Release the connection kept for a next batch, if one is, to the pool it came from."""
        held, self._held, self._carried = self._held, None, 0
        if held is not None:
            pool, connection = held
            await pool.release(connection)
