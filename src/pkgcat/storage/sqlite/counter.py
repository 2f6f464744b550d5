"""The usage counter on SQLite: durable per-day counts by group commit.

:meth:`SqliteCounter.record` joins the counts of the requests that reach it in
the same turn of the event loop, with any last-used times due, and commits
them in one transaction; each caller resumes only once its count is
committed, so a request answered 200 is counted even if its worker is killed
right after. While another connection holds the write lock (another worker's
commit, an import's short write transactions), the commit is retried without
blocking the loop, for up to ``busy_budget`` seconds; then the waiting
requests fail (code 15). Every worker commits to the same file, so
a usage read by any worker (:meth:`pkgcat.storage.reads.Catalogue.usage`) includes every
worker's counts.

A request cancelled before its commit (answered 503 at its deadline) is left
out of it; one cancelled just after, or answered 503 for a later failure, is
taken back (:meth:`SqliteCounter.retract`) by the next commit: a 503 is never
counted.

The same transaction adds the batch's whole downloads of the served repository
to ``download_days`` (:meth:`SqliteCounter.record_download`, one row per
package and UTC day) and to ``download_totals``, under the same rules: the
download's caller resumes once they are committed, and one cancelled before is
left out. A download taken back (``count`` below 0) is kept until a commit
carries it, as a retraction is, and never fails.

A commit here has no reply to lose: ``COMMIT`` returns, or the transaction is
rolled back (the ``finally`` below), so each batch lands once or not at all.

The same transaction adds the batch's counts by operation to
``usage_operations``: one row per (application, day, operation) of the batch,
in one ``executemany``, and only for the counts that landed in ``usage_days``.

A count whose key was revoked or deleted while its request was under way
(``pkgcat key revoke``, ``app delete``, ``source delete --cascade`` on a
serving database) is dropped (:data:`~pkgcat.storage.rows.INCREMENT` checks
that the key is live, under the same write lock as the insert); the batch's
other counts land. The request is then refused (``CatalogueService.admit``).

Each commit also reads the catalogue generation, in the same transaction, and
hands it to the worker's :class:`~pkgcat.storage.sqlite.SqliteChanges`: this is
how the request path learns of changes without a statement of its own.

WAL checkpoints run on a thread of their own, never inside a request's commit.
A PASSIVE checkpoint alone does not bound the WAL file under steady load: the
file restarts from its beginning only when a write begins with every frame
checkpointed, and commits that land during each checkpoint prevent that
forever (the file grew by 7 to 13 MiB a second, to 1 GiB in a 90 s soak). So
once the log holds more than :data:`RESTART_FRAMES`, the checkpoint thread
runs a RESTART checkpoint, which holds the write lock for the few frames left
and lets the next commit start the file over (and cut it back to
:data:`~pkgcat.storage.sqlite.connection.JOURNAL_SIZE_LIMIT`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date

from pkgcat.loops import RunningLoop
from pkgcat.storage import rows
from pkgcat.storage.interfaces import Counted
from pkgcat.storage.last_used import LastUsed
from pkgcat.storage.sqlite.catalogue import SqliteChanges, read_generation
from pkgcat.storage.sqlite.connection import SqliteDatabase, connect

log = logging.getLogger("pkgcat.storage")

_DROPPED = Counted(0, -1)
"""A count the commit dropped: its key or application had gone."""
_LANDED = Counted(1, -1)
"""What a download's waiter gets once its commit has landed."""
TOTALS_FOR = 1.0
"""Seconds a worker keeps a package's counted downloads: another worker's show in details
within this long, the worker's own at once."""
TOTALS_KEPT = 10_000
"""Packages whose totals a worker keeps before it drops them all."""

CHECKPOINT_INTERVAL = 1.0
"""Seconds between two WAL checkpoints started by the server (each on its own thread)."""

RESTART_FRAMES = 2_000
"""Frames in the log (about 8 MiB with 4 KiB pages) past which a checkpoint restarts it.

A RESTART checkpoint waits up to the connection's busy timeout for the write
lock and for readers of older frames; while it holds the lock, a request's
commit waits (a few milliseconds, once a second at most, and only under load).
"""


Waiter = tuple[
    "asyncio.Future[Counted]", tuple[int, int, str] | None, str, tuple[str, str, int] | None
]
"""A waiting caller's future, the (application, key, day) of its count (None: a download or a
probe) and its operation, and the (package, UTC day, count) of its download."""


def _is_busy(error: sqlite3.OperationalError) -> bool:
    return "locked" in str(error) or "busy" in str(error)


class SqliteCounter:
    """:class:`~pkgcat.storage.interfaces.UsageCounter` on one SQLite file; one per event loop."""

    def __init__(
        self,
        database: SqliteDatabase,
        *,
        changes: SqliteChanges | None = None,
        busy_budget: float = 10.0,
    ) -> None:
        self._database = database
        self._changes = changes
        self._busy_budget = busy_budget
        self._last_used = LastUsed()
        self._touches: dict[int, int] = {}
        # Each waiting request's future, the (application, key, day) of its count and its
        # operation, resolved by the commit that carries it; the batch's counts are added up
        # from them at the commit, without the requests cancelled by then.
        self._waiters: list[Waiter] = []
        self._scheduled = False
        self._probing = False
        """Whether the next commit carries a :meth:`reachable` (it then runs, even empty)."""
        # (application, day, operation) -> counts to take back with the next commit.
        self._retracted: dict[tuple[int, str, str], int] = {}
        # (package, UTC day) -> downloads to take back with the next commit.
        self._untaken: dict[tuple[str, str], int] = {}
        # package -> (counted downloads, when read): see downloads_total
        self._totals: dict[str, tuple[int, float]] = {}
        self._busy_since: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = RunningLoop()
        self._checkpointer: ThreadPoolExecutor | None = None
        self._checkpoint_db: sqlite3.Connection | None = None
        self._checkpointing = False
        self._last_checkpoint = float("-inf")
        self.on_flush: Callable[[float], None] | None = None
        """Called with the seconds each batch took, from its first attempt to its end."""
        self._flush_started: float | None = None

    @property
    def pending_counts(self) -> int:
        """Counts waiting for their commit (more than a turn's worth while the file is busy)."""
        return len(self._waiters)

    async def downloads_total(self, package: str) -> int:
        # Kept for TOTALS_FOR seconds (a read costs more than the rest of a cached details
        # answer); this worker's own commits drop what it keeps, so they show at once.
        now = time.monotonic()
        kept = self._totals.get(package)
        if kept is not None and now - kept[1] < TOTALS_FOR:
            return kept[0]
        found = self._database.db.execute(rows.DOWNLOADS_TOTAL, (package,)).fetchone()
        total = 0 if found is None else int(found[0])
        if len(self._totals) >= TOTALS_KEPT:
            self._totals.clear()
        self._totals[package] = (total, now)
        return total

    async def record_download(self, package: str, day: date, count: int = 1) -> None:
        loop = self._own_loop()
        key = (package, day.isoformat())
        if count < 0:  # kept until a commit carries it, and waited for once
            self._untaken[key] = self._untaken.get(key, 0) - count
            with contextlib.suppress(Exception):
                await self._enqueue(loop, None, "")
            return
        waiter = self._enqueue(loop, None, "", (*key, count))
        try:
            await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled() and waiter.exception() is None:
                # Cancelled just after its commit landed: taken back.
                self._untaken[key] = self._untaken.get(key, 0) + count
                self._commit_soon()
            raise

    async def reachable(self) -> None:
        # The commit's transaction, with nothing to write: it takes the write lock (waiting
        # for it as a count would) and reads the generation, so a file that cannot be
        # opened, or a lock held past the budget, fails here as the count would.
        loop = self._own_loop()
        self._probing = True
        await self._enqueue(loop, None, "")

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._running()
        if loop is not self._loop:
            if self._loop is not None:
                raise RuntimeError("one SqliteCounter serves one event loop; build one per loop")
            self._loop = loop
        return loop

    def _enqueue(
        self,
        loop: asyncio.AbstractEventLoop,
        key: tuple[int, int, str] | None,
        operation: str,
        download: tuple[str, str, int] | None = None,
    ) -> asyncio.Future[Counted]:
        """A future resolved by the commit that carries this count (``key`` None: a download
        of ``download``'s (package, day, count), or none)."""
        waiter: asyncio.Future[Counted] = loop.create_future()
        self._waiters.append((waiter, key, operation, download))
        if not self._scheduled:  # the first of a batch: no commit is scheduled yet
            self._scheduled = True
            # Runs after the callbacks already queued: the requests of this turn join in.
            loop.call_soon(self._commit)
        return waiter

    async def record(
        self,
        application_id: int,
        day: date,
        key_id: int,
        when: int,
        operation: str,
        cutoff: float | None = None,  # noqa: ARG002 - a commit here is on this thread, never late
    ) -> Counted:
        loop = self._own_loop()
        key = (application_id, key_id, day.isoformat())
        if self._last_used.due(key_id, when):
            self._touches[key_id] = when
        waiter = self._enqueue(loop, key, operation)
        # A caller going away cancels only its own future, and its count is left out of the
        # commit; the commit goes on for the others.
        try:
            return await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled() and waiter.exception() is None and waiter.result().requests:
                # Cancelled just after its commit landed: taken back.
                self.retract(application_id, day, operation)
            raise

    def retract(self, application_id: int, day: date, operation: str) -> None:
        taken = (application_id, day.isoformat(), operation)
        self._retracted[taken] = self._retracted.get(taken, 0) + 1
        self._commit_soon()

    def _commit_soon(self) -> None:
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._commit)

    def _commit(self) -> None:
        """Commit every pending count and last-used time in one transaction."""
        if self.on_flush is not None and self._flush_started is None:
            self._flush_started = time.perf_counter()
        counts: dict[tuple[int, int, str], int] = {}
        operations: dict[tuple[int, int, str, str], int] = {}
        downloads = {file: -n for file, n in self._untaken.items()}
        for waiter, key, operation, download in self._waiters:
            if waiter.done():  # cancelled: answered without it
                continue
            if download is not None:
                package, day, n = download
                downloads[package, day] = downloads.get((package, day), 0) + n
            if key is None:  # a download, or a probe
                continue
            counts[key] = counts.get(key, 0) + 1
            split = (*key, operation)
            operations[split] = operations.get(split, 0) + 1
        work = counts or self._retracted or self._touches or downloads
        if not work and not self._probing:
            self._finish(None)
            return
        try:
            db = self._database.db
            totals: dict[tuple[int, str], int] = {}
            live: set[tuple[int, int, str]] = set()
            db.execute("BEGIN IMMEDIATE")
            try:
                # First, so that the totals the increments return are exact. Statements
                # with nothing to do are not sent: each costs microseconds even empty.
                if self._retracted:
                    for statement, parameters in rows.retractions(self._retracted).items():
                        db.executemany(statement, parameters)
                for (a, k, d), n in counts.items():
                    row = db.execute(rows.INCREMENT, (d, n, k, a)).fetchone()
                    if row is not None:  # else dropped: the key has gone
                        totals[a, d] = int(row[0])
                        live.add((a, k, d))
                if live:
                    db.executemany(rows.INCREMENT_OPERATION, _split(operations, live))
                if self._touches:
                    db.executemany(rows.TOUCH_KEY, [(w, k) for k, w in self._touches.items()])
                if downloads:
                    self._totals.clear()  # this worker's downloads show in details at once
                    db.executemany(
                        rows.INCREMENT_DOWNLOADS, [(p, d, n) for (p, d), n in downloads.items()]
                    )
                    db.executemany(
                        rows.INCREMENT_DOWNLOAD_TOTAL, rows.downloads_by_package(downloads)
                    )
                generation = read_generation(db)
                db.execute("COMMIT")
            finally:
                # A failed statement, or a failed COMMIT, must not leave the
                # transaction (and the write lock) open.
                if db.in_transaction:
                    db.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            if _is_busy(error) and self._retry_later():
                return
            self._finish(error)
        except Exception as error:
            self._finish(error)
        else:
            if self._changes is not None:
                self._changes.observe(generation)
            self._retracted, self._untaken = {}, {}
            self._finish(None, {k: Counted(totals[k[0], k[2]], generation) for k in live})

    def _retry_later(self) -> bool:
        """Try the commit again soon, unless the write lock has been busy for too long."""
        assert self._loop is not None
        now = self._loop.time()
        if self._busy_since is None:
            self._busy_since = now
        waited = now - self._busy_since
        if waited >= self._busy_budget:
            return False
        # Requests arriving meanwhile join the pending counts and wait on the same commit.
        self._loop.call_later(min(0.001 * 2 ** min(int(waited * 20), 6), 0.05), self._commit)
        return True

    def _finish(
        self,
        error: Exception | None,
        counted: dict[tuple[int, int, str], Counted] | None = None,
    ) -> None:
        waiters = self._waiters
        self._waiters = []
        if self._flush_started is not None:
            if self.on_flush is not None:
                self.on_flush(time.perf_counter() - self._flush_started)
            self._flush_started = None
        counted = counted or {}
        self._busy_since = None
        self._scheduled = False
        self._touches = {}
        self._probing = False
        for waiter, key, _, _ in waiters:
            if not waiter.done():  # cancelled when its request went away
                if error is None:
                    waiter.set_result(_LANDED if key is None else counted.get(key, _DROPPED))
                else:
                    waiter.set_exception(error)
        if error is None:
            self._checkpoint_soon()

    def _checkpoint_soon(self) -> None:
        """Start a WAL checkpoint on the checkpoint thread, at most once a second.

        SQLite's automatic checkpoint runs inside the commit that crosses its
        threshold, stalling the event loop while it copies and syncs pages (the
        benchmark's p99). Here the request connection never checkpoints itself:
        a PASSIVE checkpoint, which waits for no reader or writer, runs on a
        thread of its own instead.
        """
        assert self._loop is not None
        now = self._loop.time()
        if self._checkpointing or now - self._last_checkpoint < CHECKPOINT_INTERVAL:
            return
        self._checkpointing, self._last_checkpoint = True, now
        if self._checkpointer is None:
            self._checkpointer = ThreadPoolExecutor(1, thread_name_prefix="pkgcat-checkpoint")
        done = self._loop.run_in_executor(self._checkpointer, self._checkpoint)
        done.add_done_callback(self._checkpointed)

    def _checkpoint(self) -> None:
        if self._checkpoint_db is None:
            self._checkpoint_db = connect(self._database.path)
        # (busy, frames in the log, frames checkpointed); -1 frames when another
        # connection's checkpoint was running.
        _, frames, _ = self._checkpoint_db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if frames > RESTART_FRAMES:
            # Blocks writers, then waits for readers of the log: the next commit
            # starts the log over. Busy (a long reader, an import's transaction):
            # it did what it could, and the next turn tries again.
            self._checkpoint_db.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()

    def _checkpointed(self, done: asyncio.Future[None]) -> None:
        self._checkpointing = False
        if not done.cancelled() and done.exception() is not None:
            log.warning("WAL checkpoint failed: %s", done.exception())

    async def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.shutdown(wait=True)
            self._checkpointer = None
        if self._checkpoint_db is not None:
            self._checkpoint_db.close()
            self._checkpoint_db = None
        self._database.close()


def _split(
    operations: dict[tuple[int, int, str, str], int], live: set[tuple[int, int, str]]
) -> list[tuple[int, str, str, int]]:
    """The batch's landed counts by (application, day, operation): one row each."""
    totals: dict[tuple[int, str, str], int] = {}
    for (a, k, d, operation), n in operations.items():
        if (a, k, d) in live:
            totals[a, d, operation] = totals.get((a, d, operation), 0) + n
    return [(a, d, operation, n) for (a, d, operation), n in totals.items()]
