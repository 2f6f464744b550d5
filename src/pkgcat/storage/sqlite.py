"""The catalogue store and usage counter on SQLite, called directly through ``sqlite3``.

Each query here takes tens of microseconds, so they run on the event loop's
thread: a thread hop per query (aiosqlite) would cost more than the query.
The SQL is portable (``ON CONFLICT ... DO UPDATE`` reads the same in
PostgreSQL); only the connection and its pragmas are SQLite's own.

Durability: the database runs in WAL mode with ``synchronous=NORMAL``. A
committed count survives the server process crashing or being killed; a power
loss can lose the last transactions (SQLite's documented WAL trade-off).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from heapq import merge
from itertools import islice
from typing import Any, TypeVar

import orjson
from sqlalchemy.engine import make_url

from pkgcat.domain import Application, KeyRecord, Package, Purchase, Source

log = logging.getLogger("pkgcat.storage")

_FIND_KEY = """
SELECT k.id, k.key_hash, k.last_used_at, a.id, a.source_id, a.name, a.shape, a.timezone
FROM secret_keys AS k JOIN applications AS a ON a.id = k.application_id
WHERE k.key_hash = ? AND k.revoked_at IS NULL
"""

_PACKAGE = """
SELECT p.id, p.package, p.name, p.version, p.architecture, p.author, p.section,
       p.description, p.long_description, p.pre_depends, p.depends, p.conflicts,
       p.replaces, p.size, p.md5sum, p.sha256, p.compatible, p.total_download,
       p.total_votes, p.total_value_votes, p.online, p.price, p.currency, p.icon,
       p.screenshots, p.url, p.released_at,
       s.id, COALESCE(NULLIF(s.label, ''), s.name), s.origin, s.url, p.commercial
FROM packages AS p JOIN sources AS s ON s.id = p.source_id
WHERE p.package = ?
"""

# A package's buyers are two newest-first streams, each an index range:
# the package's own purchases and its source's whole-source purchases.
_BUYERS_COUNT = """
SELECT (SELECT count(*) FROM purchases WHERE package_id = ?)
     + (SELECT count(*) FROM purchases WHERE source_id = ? AND allowed_for = 'source')
"""
_BUYER_COLUMNS = """nickname, status, total, commission, currency, purchased_at, txn_id,
       profile_url, allowed_for, payment_platform"""
_OWN = "package_id = ?"
_SOURCE_WIDE = "source_id = ? AND allowed_for = 'source'"
# Resume after a known buyer (keyset seek): older, or as old with a later txn_id.
_AFTER = "AND purchased_at <= ? AND NOT (purchased_at = ? AND txn_id <= ?)"
_NEWEST_FIRST = "ORDER BY purchased_at DESC, txn_id ASC"


def _stream(where: str, after: bool, columns: str = _BUYER_COLUMNS) -> str:
    """One newest-first stream of buyers; assembled from the constants above only."""
    seek = _AFTER if after else ""
    return f"SELECT {columns} FROM purchases WHERE {where} {seek} {_NEWEST_FIRST} LIMIT ?"  # noqa: S608


_STREAMS = {
    (where, after): _stream(where, after)
    for where in (_OWN, _SOURCE_WIDE)
    for after in (False, True)
}
_KEY_STREAMS = {
    where: _stream(where, False, "purchased_at, txn_id") for where in (_OWN, _SOURCE_WIDE)
}

_GENERATION = "SELECT value FROM catalogue_generation WHERE id = 1"

_USAGE = """
SELECT day, count FROM usage_days
WHERE application_id = ? AND day >= ? AND day <= ?
"""

_INCREMENT = """
INSERT INTO usage_days (application_id, day, count) VALUES (?, ?, ?)
ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + excluded.count
"""

_TOUCH_KEY = "UPDATE secret_keys SET last_used_at = ? WHERE id = ?"


def sqlite_path(database_url: str) -> str:
    """The file behind a ``sqlite:///PATH`` URL (an in-memory database cannot be shared)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        raise ValueError(f"not a SQLite URL: {url.render_as_string(hide_password=True)}")
    if not url.database or url.database == ":memory:":
        raise ValueError("the SQLite database must be a file: sqlite:///path/to/pkgcat.db")
    return url.database


BUSY_TIMEOUT_MS = 20
"""How long one statement may block the event loop waiting for the write lock.

Longer waits (an import's transaction, another worker's commit) are retried
asynchronously by the group commit, so other requests keep being served.
"""


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode with the pragmas the request path relies on."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    (mode,) = connection.execute("PRAGMA journal_mode=WAL").fetchone()
    if str(mode).lower() != "wal":
        connection.close()
        raise RuntimeError(
            f"{path}: SQLite refused WAL mode ({mode!r}); the request path needs it "
            "(a network file system cannot host the database)"
        )
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    connection.execute("PRAGMA foreign_keys=ON")
    return connection


def _is_busy(error: sqlite3.OperationalError) -> bool:
    return "locked" in str(error) or "busy" in str(error)


CHECKPOINT_INTERVAL = 1.0
"""Seconds between two WAL checkpoints started by the server (each on its own thread)."""

MARK_EVERY = 100
"""Deep buyers pages seek to a mark kept every this many buyers (the largest page)."""

_BuyerKey = tuple[int, str]
K = TypeVar("K")
V = TypeVar("V")


def _seek(after: _BuyerKey | None) -> tuple[object, ...]:
    return () if after is None else (after[0], after[0], after[1])


def _buyer_order(row: tuple[Any, ...]) -> tuple[int, str]:
    """Newest first, then txn_id: the merge key of two buyer streams (columns 5 and 6)."""
    return (-row[5], row[6])


def _key_order(row: tuple[Any, ...]) -> tuple[int, str]:
    return (-row[0], row[1])


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


_FREE = Decimal("0.00")


def _price(stored: str | None, commercial: bool) -> Decimal | None:
    """The operator's price; without one, free unless the repository marks the package paid."""
    if stored is not None:
        return Decimal(stored)
    return None if commercial else _FREE


def _package(row: tuple[Any, ...]) -> Package:
    return Package(
        id=row[0],
        package=row[1],
        name=row[2],
        version=row[3],
        architecture=row[4],
        author=row[5],
        section=row[6],
        description=row[7],
        long_description=row[8],
        pre_depends=row[9],
        depends=row[10],
        conflicts=row[11],
        replaces=row[12],
        size=row[13],
        md5sum=row[14],
        sha256=row[15],
        compatible=tuple(orjson.loads(row[16])),
        total_download=row[17],
        total_votes=row[18],
        total_value_votes=row[19],
        online=bool(row[20]),
        price=_price(row[21], bool(row[31])),
        currency=row[22],
        icon=row[23],
        screenshots=tuple(orjson.loads(row[24])),
        url=row[25],
        released_at=_utc(row[26]),
        source=Source(id=row[27], name=row[28], origin=row[29], url=row[30]),
        commercial=bool(row[31]),
    )


def _purchase(row: tuple[Any, ...]) -> Purchase:
    return Purchase(
        nickname=row[0],
        status=row[1],
        total=Decimal(row[2]),
        commission=Decimal(row[3]),
        currency=row[4],
        purchased_at=_utc(row[5]),
        txn_id=row[6],
        profile_url=row[7],
        allowed_for=row[8],
        payment_platform=row[9],
    )


class SqliteCatalogue:
    """:class:`~pkgcat.storage.interfaces.CatalogueStore` and ``UsageCounter`` on one SQLite file.

    One instance serves one event loop (a server worker): the connection opens
    on first use, so an instance can be built before a server forks.

    Caching: keys and packages read here are kept in memory and dropped as a
    whole as soon as SQLite's ``data_version`` says another connection (an
    import, a revocation, a price change, another worker's counts) committed
    to the file. A request never sees a record older than the last commit made
    before it started.

    Counting: :meth:`increment` joins the counts of the requests that reach it
    in the same turn of the event loop, with any pending last-used times, and
    commits them in one transaction (group commit); each caller resumes only
    once its count is committed. While another connection holds the write
    lock, the commit is retried without blocking the loop, for up to
    ``busy_budget`` seconds; then the waiting requests fail (code 15).
    """

    def __init__(
        self, database_url: str, *, cache_size: int = 10_000, busy_budget: float = 10.0
    ) -> None:
        self._path = sqlite_path(database_url)
        self._connection: sqlite3.Connection | None = None
        self._cache_size = cache_size
        self._busy_budget = busy_budget
        self._generation = -1
        self._keys: dict[str, KeyRecord] = {}
        self._buyer_totals: dict[int, int] = {}
        # Per application: first day asked -> (the day the history stops before, its counts).
        self._history: dict[int, dict[date, tuple[date, dict[date, int]]]] = {}
        self._marks: dict[int, list[_BuyerKey]] = {}
        self._packages: dict[str, Package] = {}
        self._counts: dict[tuple[int, str], int] = {}
        self._touches: dict[int, int] = {}
        self._committed: asyncio.Future[None] | None = None
        self._busy_since: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._checkpointer: ThreadPoolExecutor | None = None
        self._checkpoint_db: sqlite3.Connection | None = None
        self._checkpointing = False
        self._last_checkpoint = float("-inf")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = connect(self._path)
            # Checkpoints run on their own thread (see _checkpoint_soon), never in a commit.
            self._connection.execute("PRAGMA wal_autocheckpoint=0")
        return self._connection

    async def generation(self) -> int:
        self._revalidate()
        return self._generation

    def _revalidate(self) -> None:
        """Drop every cached record if the catalogue changed since the last look."""
        row = self._db.execute(_GENERATION).fetchone()
        generation = -1 if row is None else row[0]  # no counter row: trust no cache
        if generation != self._generation or generation == -1:
            self._generation = generation
            self._keys.clear()
            self._packages.clear()
            self._buyer_totals.clear()
            self._history.clear()
            self._marks.clear()

    def _remember(self, cache: dict[K, V], key: K, value: V) -> None:
        if len(cache) >= self._cache_size:
            cache.clear()  # a crude bound: a full cache starts over
        cache[key] = value

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        cached = self._keys.get(key_hash)
        if cached is not None:
            return cached
        row = self._db.execute(_FIND_KEY, (key_hash,)).fetchone()
        if row is None:
            return None  # unknown keys are not cached: they would fill memory
        application = Application(
            id=row[3], source_id=row[4], name=row[5], shape=row[6], timezone=row[7]
        )
        record = KeyRecord(id=row[0], key_hash=row[1], last_used_at=row[2], application=application)
        self._remember(self._keys, key_hash, record)
        return record

    async def touch_key(self, record: KeyRecord, when: int) -> None:
        # Written with the next group commit; the cached copy knows at once.
        self._touches[record.id] = when
        if record.key_hash in self._keys:
            self._keys[record.key_hash] = replace(record, last_used_at=when)

    async def package(self, package_id: str) -> Package | None:
        cached = self._packages.get(package_id)
        if cached is not None:
            return cached
        row = self._db.execute(_PACKAGE, (package_id,)).fetchone()
        if row is None:
            return None
        package = _package(row)
        self._remember(self._packages, package_id, package)
        return package

    async def buyers(
        self, package_row_id: int, source_id: int, limit: int, offset: int
    ) -> tuple[int, list[Purchase]]:
        db = self._db
        # One read transaction: the generation checked, the total, the marks and the
        # page all come from the same snapshot, so the total and the page agree.
        db.execute("BEGIN")
        try:
            self._revalidate()
            return self._buyers_page(package_row_id, source_id, limit, offset)
        finally:
            db.execute("COMMIT")

    def _buyers_page(
        self, package_row_id: int, source_id: int, limit: int, offset: int
    ) -> tuple[int, list[Purchase]]:
        db = self._db
        total = self._buyer_totals.get(package_row_id)
        if total is None:
            (total,) = db.execute(_BUYERS_COUNT, (package_row_id, source_id)).fetchone()
            self._remember(self._buyer_totals, package_row_id, total)
        if offset >= total:
            return total, []
        # Seek to the nearest mark at or before the offset, then skip the rest.
        start, after = 0, None
        if offset >= 2 * MARK_EVERY:
            marks = self._buyer_marks(package_row_id, source_id)
            index = min(offset // MARK_EVERY, len(marks))
            if index:
                start, after = index * MARK_EVERY, marks[index - 1]
        wanted = offset - start + limit
        streams = [
            db.execute(_STREAMS[(where, after is not None)], (ident, *_seek(after), wanted))
            for where, ident in ((_OWN, package_row_id), (_SOURCE_WIDE, source_id))
        ]
        rows = islice(merge(*streams, key=_buyer_order), offset - start, wanted)
        return total, [_purchase(row) for row in rows]

    def _buyer_marks(self, package_row_id: int, source_id: int) -> list[_BuyerKey]:
        """The sort key of every MARK_EVERY-th buyer (the last before each mark).

        Read once per catalogue generation from the covering indexes, so a deep
        page costs about what the first page costs.
        """
        marks = self._marks.get(package_row_id)
        if marks is None:
            db = self._db
            keys = merge(
                db.execute(_KEY_STREAMS[_OWN], (package_row_id, -1)),
                db.execute(_KEY_STREAMS[_SOURCE_WIDE], (source_id, -1)),
                key=_key_order,
            )
            marks = [
                (t, x)
                for position, (t, x) in enumerate(keys, start=1)
                if position % MARK_EVERY == 0
            ]
            self._remember(self._marks, package_row_id, marks)
        return marks

    async def usage(self, application_id: int, first: date, last: date) -> dict[date, int]:
        # Days before yesterday no longer change (requests are counted on their today):
        # they are read once per catalogue generation; yesterday and today every time.
        recent = last - timedelta(days=1)
        if first >= recent:
            return self._usage_rows(application_id, first, last)
        if application_id not in self._history and len(self._history) >= self._cache_size:
            self._history.clear()  # a crude bound, as for the other caches
        histories = self._history.setdefault(application_id, {})
        history = histories.get(first)
        if history is None or history[0] != recent:
            counts = self._usage_rows(application_id, first, recent - timedelta(days=1))
            history = histories[first] = (recent, counts)
        return history[1] | self._usage_rows(application_id, recent, last)

    def _usage_rows(self, application_id: int, first: date, last: date) -> dict[date, int]:
        rows = self._db.execute(
            _USAGE, (application_id, first.isoformat(), last.isoformat())
        ).fetchall()
        return {date.fromisoformat(day): count for day, count in rows}

    async def increment(self, application_id: int, day: date) -> None:
        histories = self._history.get(application_id)
        if histories and any(day < stop for stop, _ in histories.values()):
            del self._history[application_id]  # counted on a day a history holds
        key = (application_id, day.isoformat())
        self._counts[key] = self._counts.get(key, 0) + 1
        committed = self._committed
        if committed is None:
            loop = asyncio.get_running_loop()
            if self._loop is None:
                self._loop = loop
            elif loop is not self._loop:
                raise RuntimeError("one SqliteCatalogue serves one event loop; build one per loop")
            committed = self._committed = loop.create_future()
            # Runs after the callbacks already queued: the requests of this turn join in.
            loop.call_soon(self._commit)
        # Shielded: one caller going away must not cancel the others' commit.
        await asyncio.shield(committed)

    def _commit(self) -> None:
        """Commit every pending count and last-used time in one transaction."""
        committed = self._committed
        assert committed is not None
        try:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(_INCREMENT, [(a, d, n) for (a, d), n in self._counts.items()])
                db.executemany(_TOUCH_KEY, [(w, k) for k, w in self._touches.items()])
                db.execute("COMMIT")
            finally:
                # A failed statement, or a failed COMMIT, must not leave the
                # transaction (and the write lock) open.
                if db.in_transaction:
                    db.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            if _is_busy(error) and self._retry_later():
                return
            self._finish(committed, error)
        except Exception as error:
            self._finish(committed, error)
        else:
            self._finish(committed, None)

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

    def _finish(self, committed: asyncio.Future[None], error: Exception | None) -> None:
        self._committed = None
        self._busy_since = None
        self._counts = {}
        self._touches = {}
        if error is None:
            committed.set_result(None)
            self._checkpoint_soon()
        else:
            committed.set_exception(error)

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
            self._checkpoint_db = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False
            )
        self._checkpoint_db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

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
        if self._connection is not None:
            self._connection.close()
            self._connection = None
