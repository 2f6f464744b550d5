"""What-if variants of the server, to size the suggestions in docs/benchmarks.md.

Each variant swaps one piece of the details request path for a cheaper
stand-in, behind the same protocols (``CatalogueStore``, ``UsageCounter``,
``RateLimiter``), and wires the app exactly as ``pkgcat.app.create_app``
does otherwise. They are measuring aids, not proposed code: they skip what a
real change needs (invalidation on import, shared state between workers).

``PKGCAT_BENCH_VARIANT`` names the swaps, comma-separated:

- ``packages``: package records cached in memory for a few seconds
  (no SELECT, no dataclass building; rendering stays).
- ``keys``: key records cached in memory, bounded in size and time.
- ``group-commit``: usage counts of requests that arrive together committed
  in one transaction; each request still waits for its count to be durable.
- ``batched``: usage counts kept in memory and committed once a second
  (a crash loses up to a second of counts).
- ``limiter``: the fixed-window rate limit counted in a plain dict.

``bench/details.py --variants`` serves them under granian and measures them
with wrk; ``bench/profile_details.py`` times them in-process.
"""

from __future__ import annotations

import asyncio
import math
import os
import sqlite3
import time
from collections import Counter
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TypeVar

from limits import parse

from pkgcat.config import Settings
from pkgcat.domain import KeyRecord, Package, Purchase, RateDecision
from pkgcat.http.asgi import ApiApp
from pkgcat.http.site import create_site
from pkgcat.services import CatalogueService
from pkgcat.storage.limiter import WindowLimiter
from pkgcat.storage.sqlite import SqliteCatalogue, connect, sqlite_path

VARIANT_ENV = "PKGCAT_BENCH_VARIANT"
T = TypeVar("T")
SWAPS = ("packages", "keys", "group-commit", "batched", "limiter")

_ADD_COUNT = """
INSERT INTO usage_days (application_id, day, count) VALUES (?, ?, ?)
ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + excluded.count
"""


class CachingStore:
    """A ``CatalogueStore`` that keeps key and/or package records in memory for a while."""

    def __init__(
        self,
        store: SqliteCatalogue,
        *,
        keys: bool,
        packages: bool,
        key_ttl: float = 30.0,
        package_ttl: float = 5.0,
        max_entries: int = 10_000,
    ) -> None:
        self._store = store
        self._cache_keys = keys
        self._cache_packages = packages
        self._key_ttl = key_ttl
        self._package_ttl = package_ttl
        self._max_entries = max_entries
        self._keys: dict[str, tuple[float, KeyRecord | None]] = {}
        self._packages: dict[str, tuple[float, Package | None]] = {}

    def _bounded(self, cache: dict[str, tuple[float, T]]) -> None:
        while len(cache) >= self._max_entries:
            del cache[next(iter(cache))]  # the oldest insertion goes first

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        if not self._cache_keys:
            return await self._store.find_key(key_hash)
        now = time.monotonic()
        hit = self._keys.get(key_hash)
        if hit is not None and hit[0] > now:
            return hit[1]
        record = await self._store.find_key(key_hash)
        self._bounded(self._keys)
        self._keys[key_hash] = (now + self._key_ttl, record)
        return record

    async def touch_key(self, key_id: int, when: int) -> None:
        await self._store.touch_key(key_id, when)
        # Keep the cached record's last use current, or every request would touch it again.
        for key_hash, (expiry, record) in self._keys.items():
            if record is not None and record.id == key_id:
                self._keys[key_hash] = (expiry, replace(record, last_used_at=when))

    async def package(self, package_id: str) -> Package | None:
        if not self._cache_packages:
            return await self._store.package(package_id)
        now = time.monotonic()
        hit = self._packages.get(package_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        package = await self._store.package(package_id)
        self._bounded(self._packages)
        self._packages[package_id] = (now + self._package_ttl, package)
        return package

    async def buyers(
        self, package_row_id: int, source_id: int, limit: int, offset: int
    ) -> tuple[int, list[Purchase]]:
        return await self._store.buyers(package_row_id, source_id, limit, offset)

    async def usage(self, application_id: int, first: date, last: date) -> dict[date, int]:
        return await self._store.usage(application_id, first, last)

    async def close(self) -> None:
        await self._store.close()


class GroupCommitCounter:
    """A ``UsageCounter`` that commits the counts of one event-loop turn together.

    ``increment`` returns once the transaction holding its count has
    committed, so a response still follows a durable count.
    """

    def __init__(self, database_url: str) -> None:
        self._path = sqlite_path(database_url)
        self._db: sqlite3.Connection | None = None
        self._pending: Counter[tuple[int, str]] = Counter()
        self._flushed: asyncio.Future[None] | None = None

    async def increment(self, application_id: int, day: date) -> None:
        self._pending[(application_id, day.isoformat())] += 1
        if self._flushed is None:
            loop = asyncio.get_running_loop()
            self._flushed = loop.create_future()
            loop.call_soon(self._flush)
        await asyncio.shield(self._flushed)

    def _flush(self) -> None:
        pending, self._pending = self._pending, Counter()
        flushed, self._flushed = self._flushed, None
        assert flushed is not None
        try:
            _commit_counts(self._connection(), pending)
        except Exception as error:
            flushed.set_exception(error)
        else:
            flushed.set_result(None)

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = connect(self._path)
        return self._db

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class BatchedCounter:
    """A ``UsageCounter`` that keeps counts in memory and commits them every ``interval`` s."""

    def __init__(self, database_url: str, interval: float = 1.0) -> None:
        self._path = sqlite_path(database_url)
        self._interval = interval
        self._db: sqlite3.Connection | None = None
        self._pending: Counter[tuple[int, str]] = Counter()
        self._next_flush = time.monotonic() + interval

    async def increment(self, application_id: int, day: date) -> None:
        self._pending[(application_id, day.isoformat())] += 1
        now = time.monotonic()
        if now >= self._next_flush:
            self._next_flush = now + self._interval
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            if self._db is None:
                self._db = connect(self._path)
            pending, self._pending = self._pending, Counter()
            _commit_counts(self._db, pending)

    async def close(self) -> None:
        self._flush()
        if self._db is not None:
            self._db.close()
            self._db = None


def _commit_counts(db: sqlite3.Connection, counts: Counter[tuple[int, str]]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany(_ADD_COUNT, [(app, day, n) for (app, day), n in counts.items()])
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class DictLimiter:
    """A ``RateLimiter``: clock-aligned fixed windows counted in a dict (one process)."""

    def __init__(self, rate_limit: str) -> None:
        item = parse(rate_limit)
        self._limit = int(item.amount)
        self._window = int(item.get_expiry())
        self._current = -1
        self._counts: dict[int, int] = {}

    def hit(self, application_id: int) -> RateDecision:
        now = time.time()
        window = int(now // self._window)
        if window != self._current:
            self._current, self._counts = window, {}
        used = self._counts.get(application_id, 0)
        allowed = used < self._limit
        if allowed:
            used += 1
            self._counts[application_id] = used
        return RateDecision(
            allowed=allowed,
            limit=self._limit,
            remaining=self._limit - used,
            reset_after=max(1, math.ceil((window + 1) * self._window - now)),
        )


def build_app(settings: Settings, swaps: set[str]) -> ApiApp:
    """``pkgcat.app.create_app``, with the named pieces swapped."""
    unknown = swaps - set(SWAPS)
    if unknown:
        raise ValueError(f"unknown swaps {sorted(unknown)}; choose from {', '.join(SWAPS)}")
    if {"group-commit", "batched"} <= swaps:
        raise ValueError("group-commit and batched both replace the usage counter; pick one")
    sqlite = SqliteCatalogue(settings.database_url)
    store = CachingStore(sqlite, keys="keys" in swaps, packages="packages" in swaps)
    counter: SqliteCatalogue | GroupCommitCounter | BatchedCounter = sqlite
    if "group-commit" in swaps:
        counter = GroupCommitCounter(settings.database_url)
    elif "batched" in swaps:
        counter = BatchedCounter(settings.database_url)
    limiter: WindowLimiter | DictLimiter = (
        DictLimiter(settings.rate_limit)
        if "limiter" in swaps
        else WindowLimiter(settings.rate_limit, settings.rate_limit_storage)
    )
    service = CatalogueService(
        store,
        counter,
        limiter,
        default_shape=settings.shape,
        default_timezone=settings.timezone,
    )

    async def close() -> None:
        await counter.close()
        await store.close()

    return ApiApp(service, create_site(on_shutdown=close))


def parse_swaps(text: str) -> set[str]:
    return {name.strip() for name in text.split(",") if name.strip() and name.strip() != "none"}


def app_from_environment() -> ApiApp:
    """Granian's factory target: settings from ``PKGCAT_*``, swaps from ``PKGCAT_BENCH_VARIANT``."""
    return build_app(Settings(), parse_swaps(os.environ.get(VARIANT_ENV, "")))


def serve(host: str, port: int, variant: str) -> None:
    """Serve a variant with the settings ``pkgcat serve`` gives granian."""
    from granian import Granian
    from granian.constants import Interfaces
    from granian.log import LogLevels

    build_app(Settings(), parse_swaps(variant))  # fail here, not in the worker
    os.environ[VARIANT_ENV] = variant  # the worker process reads it
    Granian(
        target="variants:app_from_environment",
        factory=True,
        interface=Interfaces.ASGI,
        address=host,
        port=port,
        workers=1,
        log_access=False,
        log_level=LogLevels.info,
        working_dir=Path(__file__).resolve().parent,
    ).serve()


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8002)
    parser.add_argument("--variant", required=True, help=f"comma-separated: {', '.join(SWAPS)}")
    args = parser.parse_args()
    serve(args.host, args.port, args.variant)


if __name__ == "__main__":
    main()
