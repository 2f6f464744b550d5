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
first, for the same reason. It fails no request: the counts have landed by then,
and a time lost is written again within a minute.

A 503 is never counted. The statement carries the batch's cutoff (the
earliest of its requests' deadlines, less a margin): if it reaches the
database later than that (a database that stopped answering, then woke), it
counts nothing, and its requests fail as for an unreachable database. A
request cancelled at its deadline before its batch left is not in it; one
cancelled while its batch was in flight, if that batch lands, is taken back
(:meth:`PostgresCounter.retract`) by the next batch, as are the counts of
requests answered 503 after their count landed: as negative counts in the
same statement.

Each batch is applied once (:mod:`pkgcat.storage.postgres.batches`): a statement whose
reply is lost leaves its batch in doubt, and its requests fail as for an unreachable
database (code 15, 503: not counted). The next statement the database answers says
whether it had landed; if it had, everything it counted is taken back by the statement
after, as are the counts of a landed batch's requests that had gone by then. What a
batch takes back is kept until a statement that carries it is known to have landed, or
known not to have (then it goes again); never twice. While anything is owed (a batch in
doubt, counts to take back) and no request comes to carry it, the counter tries again
every :data:`RETRY_AFTER` seconds.

Whole downloads of the served repository (:meth:`PostgresCounter.record_download`)
join the batch too, a third INSERT of the same statement into ``download_days``
(one row per package and UTC day, in that order). Each worker keeps the
counted total of the packages details asked for, and drops them all when the
``pkgcat_downloads`` notification of a commit arrives (migration 0008), or
while it is not listening.

Downloads ride under the same cutoff: a batch too late counts none of them. A download
cancelled before its batch left is not in it; one cancelled while it was in flight is
taken back if it landed. A download taken back (``count`` below 0: its file could not go
out after all) is owed as a retraction is, and never fails.

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
import contextlib
import itertools
import secrets
import time
from collections.abc import Callable
from datetime import date
from typing import Any

from pkgcat.loops import RunningLoop
from pkgcat.storage import rows
from pkgcat.storage.interfaces import Counted
from pkgcat.storage.last_used import LastUsed
from pkgcat.storage.postgres import batches
from pkgcat.storage.postgres.batches import Batch, Reply, TooLate, Waiter
from pkgcat.storage.postgres.connection import PostgresDatabase

_DOWNLOADS_TOTAL = rows.numbered(rows.DOWNLOADS_TOTAL)
_LANDED = Counted(1, -1)
"""What a download's waiter gets once its batch has landed."""
DOWNLOADS_CHANNEL = "pkgcat_downloads"
"""Notified (migration 0008) by every commit that changes ``download_days``."""
_NEVER = float("inf")
"""The cutoff of a batch with no deadline (PostgreSQL reads it as ``infinity``)."""

HOLD_FOR = 1_000
"""Batches in a row one connection carries before it goes back to the pool, whose own limits
apply then: asyncpg replaces a connection after 50,000 queries, counted when it comes back."""
CLOSE_WAIT = 2.0
"""Seconds a counter that stops waits for its last statement, sent for what it owes."""
RETRY_AFTER = 1.0
"""Seconds before a statement goes again for what is owed (a batch in doubt, counts to take
back) when its last one failed and no request has come to carry it."""


def _add(into: dict[Any, int], more: dict[Any, int]) -> None:
    for key, n in more.items():
        into[key] = into.get(key, 0) + n


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
        # package -> counted downloads, while notifications say nothing changed
        self._totals: dict[str, int] = {}
        self._forgotten = 0
        """How many times the totals were dropped: a read that saw it move keeps nothing."""
        self._waiters: list[Waiter] = []
        # (application, day, operation) -> counts to take back; (package, day) -> downloads.
        self._retracted: dict[tuple[int, str, str], int] = {}
        self._untaken: dict[tuple[str, str], int] = {}
        self.worker = secrets.randbits(63)
        """This counter's own number in ``count_batches``."""
        self._numbers = itertools.count(1)
        self._doubts: dict[int, Batch] = {}
        """Batches sent whose reply was lost, by number, until a statement settles them."""
        self._settled: list[int] = []
        self._expire_after = 0.0
        self._retry: asyncio.TimerHandle | None = None
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

    @property
    def owed(self) -> bool:
        """Whether a batch is in doubt, or counts or downloads wait to be taken back."""
        return bool(self._doubts or self._retracted or self._untaken)

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
        taken = (package, day.isoformat())
        try:
            if count < 0:  # owed until a statement carries it, and waited for once
                self._untaken[taken] = self._untaken.get(taken, 0) - count
                with contextlib.suppress(Exception):
                    await self._enqueue(None, "", _NEVER)
                return
            waiter = self._enqueue(None, "", _NEVER, (*taken, count))
            try:
                await waiter
            except asyncio.CancelledError:
                if not waiter.cancelled() and waiter.exception() is None:
                    self._take_back({}, {taken: count})  # landed just before
                raise
        finally:
            self.forget_downloads()  # not waiting for our own notification

    async def reachable(self) -> None:
        # The batch's statement with nothing to count writes no count (and so notifies
        # nothing: the trigger of download_days is FOR EACH ROW), but makes its round trip.
        self._probing = True
        await self._enqueue(None, "", _NEVER)

    def _enqueue(
        self,
        key: tuple[int, str] | None,
        operation: str,
        cutoff: float,
        download: tuple[str, str, int] | None = None,
    ) -> asyncio.Future[Counted]:
        """A future resolved by the batch that carries this count (``key`` None: a download)."""
        loop = self._running()
        waiter: asyncio.Future[Counted] = loop.create_future()
        self._waiters.append(Waiter(waiter, key, operation, cutoff, download))
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
        self._take_back({(application_id, day.isoformat(), operation): 1}, {})

    def _take_back(
        self, counts: dict[tuple[int, str, str], int], downloads: dict[tuple[str, str], int]
    ) -> None:
        _add(self._retracted, counts)
        _add(self._untaken, downloads)
        if self._in_flight is None and not self._waiters:
            self._running().call_soon(self._send)

    def _send(self) -> None:
        if self._in_flight is not None:
            return
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if not (self._waiters or self.owed):
            return
        touches, waiters, self._touches, self._waiters = self._touches, self._waiters, {}, []
        retracted, untaken, self._retracted, self._untaken = (
            self._retracted,
            self._untaken,
            {},
            {},
        )
        probe, self._probing = self._probing, False
        added: dict[tuple[int, str, str], int] = {}
        downloads: dict[tuple[str, str], int] = {}
        cutoff = _NEVER
        carried = []
        for waiter in waiters:
            if waiter.future.done():  # cancelled: its request has been answered without it
                continue
            carried.append(waiter)
            if waiter.download is not None:
                package, day, n = waiter.download
                downloads[package, day] = downloads.get((package, day), 0) + n
            elif waiter.key is not None:
                split = (*waiter.key, waiter.operation)
                added[split] = added.get(split, 0) + 1
                cutoff = min(cutoff, waiter.cutoff)
        now = time.monotonic()
        expire = now >= self._expire_after
        if expire:
            self._expire_after = now + batches.EXPIRE_EVERY
        settled: tuple[int, ...] = ()
        if len(self._settled) >= batches.SETTLE_EVERY or (self._doubts or expire):
            settled, self._settled = tuple(self._settled), []
        batch = Batch(
            next(self._numbers),
            added,
            downloads,
            retracted,
            untaken,
            touches,
            cutoff,
            tuple(sorted(self._doubts)),
            settled,
            expire,
            probe,
        )
        self._flying = len(carried)
        self._in_flight = self._running().create_task(self._commit(carried, batch))

    async def _commit(self, waiters: list[Waiter], batch: Batch) -> None:
        started = time.perf_counter()
        replied = False
        try:
            answer = await self._count(batch) if batch.going else Reply({}, {}, False)
            replied = True
            self._settle(answer.fenced)
            if answer.late:
                raise TooLate("the batch reached the database after its requests' deadline")
        except BaseException as error:
            if batch.number not in self._doubts:  # known not to have landed: owed still
                _add(self._retracted, batch.retracted)
                _add(self._untaken, batch.untaken)
            if not replied:
                self._settled.extend(batch.settled)
            for waiter in waiters:
                if not waiter.future.done():
                    waiter.future.set_exception(error)
            if isinstance(error, asyncio.CancelledError):
                raise
        else:
            if batch.going:
                self._settled.append(batch.number)
            else:  # nothing went: what it would have deleted, and its expiry, wait
                self._settled.extend(batch.settled)
                self._expire_after = 0.0 if batch.expire else self._expire_after
            self._resolve(waiters, answer.totals)
        finally:
            self._in_flight, self._flying = None, 0
            if self.on_flush is not None:
                self.on_flush(time.perf_counter() - started)
            if self._waiters or (replied and self.owed):
                self._send()
            elif self.owed and self._retry is None:  # alone, it waits: no loop of retries
                self._retry = self._running().call_later(RETRY_AFTER, self._send)
            if self._in_flight is None and self._held is not None:  # none follows: given back
                await self._give_back()

    def _resolve(self, waiters: list[Waiter], totals: dict[tuple[int, str], int]) -> None:
        """Answer the waiters of a batch that landed; take back the counts of those gone."""
        # The generation is not read here: the change feed pushes it (-1: not known).
        for future, key, operation, _, download in waiters:
            if key is None:  # a download, or a probe
                if not future.done():
                    future.set_result(_LANDED)
                elif download is not None:  # cancelled while its batch was in flight
                    package, day, n = download
                    self._take_back({}, {(package, day): n})
                continue
            requests = totals.get(key, 0)
            if not future.done():
                future.set_result(Counted(requests, -1))
            elif requests:  # cancelled at its deadline while the batch was in flight
                self._take_back({(*key, operation): 1}, {})

    def _settle(self, fenced: dict[int, bool]) -> None:
        """Batches in doubt, settled: one that landed is taken back whole (its requests
        were answered as not counted); what one that did not land took back is owed again."""
        for number, landed in fenced.items():
            doubt = self._doubts.pop(number, None)
            if doubt is None:
                continue
            self._settled.append(number)
            if landed:
                _add(self._retracted, doubt.added)
                _add(self._untaken, doubt.downloads)
            else:
                _add(self._retracted, doubt.retracted)
                _add(self._untaken, doubt.untaken)

    async def _count(self, batch: Batch) -> Reply:
        """The batch's statements, on the connection the last batch kept or one of the pool."""
        pool = await self._database.pool()
        if self._held is not None and self._held[0] is not pool:  # that pool was closed since
            await self._give_back()
        held, self._held = self._held, None
        if held is not None and batches.closed(held[1]):  # lost while it waited: sent nothing
            await pool.release(held[1])
            held = None
        connection = await pool.acquire() if held is None else held[1]
        kept = False
        try:
            try:
                answer = await self._statements(connection, batch)
            except BaseException as error:
                if not batches.refused(error, connection):
                    self._doubts[batch.number] = batch  # sent: it may have landed
                raise
            # Kept for the next batch only if one waits already, and the pool has another
            # connection for the reads.
            kept = (
                bool(self._waiters)
                and self._carried + 1 < HOLD_FOR
                and pool.get_max_size() > 1
                and not batches.closed(connection)
            )
            return answer
        finally:
            if kept:
                self._held, self._carried = (pool, connection), self._carried + 1
            else:
                self._carried = 0
                await pool.release(connection)

    async def _statements(self, connection: Any, batch: Batch) -> Reply:
        """The batch's counts, in one statement; its last-used times, in a second. Each
        commits with ``synchronous_commit`` (None: as the database sets it)."""
        synchronous_commit = self._synchronous_commit
        found = await connection.fetch(*batches.statement(batch, self.worker, synchronous_commit))
        answer = batches.reply(found)
        key_ids = sorted(batch.touches)
        if key_ids and not answer.late:
            touched = [batch.touches[k] for k in key_ids]
            # The counts have landed: a last-used time lost with its connection is written
            # again within a minute, and fails no request.
            with contextlib.suppress(Exception):
                await connection.execute(batches.TOUCH, key_ids, touched, synchronous_commit)
        return answer

    async def close(self) -> None:
        # A batch may be queued behind the one in flight: wait for both.
        while self._in_flight is not None:
            await asyncio.gather(self._in_flight, return_exceptions=True)
        if self.owed:  # one more try for what is owed (and what it leads to), not for long
            self._send()
            loop = asyncio.get_running_loop()
            ends = loop.time() + CLOSE_WAIT
            while (last := self._in_flight) is not None:
                await asyncio.wait({last}, timeout=max(0.0, ends - loop.time()))
                last.cancel()  # no-op once done
                await asyncio.gather(last, return_exceptions=True)
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
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
