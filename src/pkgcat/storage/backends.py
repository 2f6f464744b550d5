"""Pick the backends the settings name and wire them behind the cache layer.

``PKGCAT_DATABASE_URL`` chooses the catalogue reader, its change feed and the
usage counter (``sqlite:///...`` or ``postgresql://...``); ``PKGCAT_REDIS_URL``
chooses the rate limiter (Redis, shared by every worker and host) over the
in-process one; ``PKGCAT_S3_BUCKET`` the store of .deb files (S3) over a
directory (``PKGCAT_BLOB_DIR``). Nothing here opens a connection: each worker's backends
connect on first use, after the server has forked.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pkgcat.config import Settings
from pkgcat.errors import NotReady
from pkgcat.storage.blobs import BlobStore, DirectoryBlobs, default_blob_dir
from pkgcat.storage.cache import CachedCatalogue
from pkgcat.storage.engine import backend_name, engine_for
from pkgcat.storage.interfaces import (
    ChangeFeed,
    Executor,
    FailureLimiter,
    PoolUse,
    RateLimiter,
    UsageCounter,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from pkgcat.storage.public_limits import PublicLimits


class WatchedCounter(UsageCounter, Protocol):
    """A usage counter that tells ``/metrics`` how its group commit is doing."""

    on_flush: Callable[[float], None] | None
    """Called with the seconds each batch of counts took to commit."""

    @property
    def pending_counts(self) -> int:
        """Counts waiting for their commit now."""
        ...


def _no_pool() -> PoolUse | None:
    return None  # SQLite: one connection per worker, no pool


@dataclass(frozen=True, slots=True)
class Storage:
    """Everything the request path reads and writes, for one worker."""

    catalogue: CachedCatalogue
    usage: WatchedCounter
    limiter: RateLimiter
    counter: WatchedCounter
    """The counter behind ``usage``, for ``/metrics``."""
    pool_use: Callable[[], PoolUse | None] = _no_pool
    """The worker's pool of database connections now, where there is one (``/metrics``)."""

    async def start(self) -> None:
        """At the worker's start, on its event loop: the change feed begins listening."""
        self.catalogue.start()

    async def readiness(self) -> dict[str, object]:
        """What ``/readyz`` reports; raises :class:`NotReady` when a backend cannot be used."""
        try:
            database, seen = await self.catalogue.freshness()
        except Exception as error:
            raise NotReady(f"database: {type(error).__name__}") from error
        found: dict[str, object] = {"catalogue_generation": database, "seen_generation": seen}
        try:
            await self.limiter.ready()
        except Exception as error:
            raise NotReady(f"redis: {type(error).__name__}", found) from error
        return found

    async def close(self) -> None:
        await self.limiter.close()
        await self.usage.close()
        await self.catalogue.close()


def database_unavailable(error: Exception) -> bool:
    """Whether a request failed because the database is locked or unreachable, for now.

    Such a request is answered 503 (code 15, ``Retry-After``), without a trace in
    the log: SQLite's write lock held past the counter's budget, a file it cannot
    open or read; a PostgreSQL server refusing, dropping or not answering the
    connection, or shutting down; the same failures as SQLAlchemy wraps them (the
    served repository's download URLs, the uploads). Anything else is a bug, answered 500.
    """
    sqlalchemy = sys.modules.get("sqlalchemy.exc")
    if sqlalchemy is not None and isinstance(error, sqlalchemy.DBAPIError):
        if error.connection_invalidated:
            return True
        psycopg = sys.modules.get("psycopg")
        orig = error.orig
        if psycopg is not None and isinstance(orig, psycopg.OperationalError):
            return True  # connection refused, dropped, timed out (psycopg's class)
        return isinstance(orig, Exception) and database_unavailable(orig)
    if isinstance(error, sqlite3.OperationalError):
        text = str(error)
        return any(
            sign in text for sign in ("locked", "busy", "unable to open", "disk I/O", "full")
        )
    if isinstance(error, OSError):  # refused, reset, timed out (TimeoutError is one)
        return True
    asyncpg = sys.modules.get("asyncpg")  # imported by the PostgreSQL backend, if in use
    return asyncpg is not None and isinstance(
        error,
        (
            asyncpg.PostgresConnectionError,  # class 08
            asyncpg.InterfaceError,  # the connection is closed, or went away mid-query
            asyncpg.exceptions.OperatorInterventionError,  # shutting down, cannot connect now
            asyncpg.TooManyConnectionsError,
        ),
    )


def _database(
    settings: Settings,
) -> tuple[Executor, ChangeFeed, WatchedCounter, Callable[[], PoolUse | None]]:
    backend = backend_name(settings.database_url)
    if backend == "sqlite":
        from pkgcat.storage.sqlite import SqliteChanges, SqliteCounter, SqliteExecutor
        from pkgcat.storage.sqlite.connection import SqliteDatabase

        database = SqliteDatabase(settings.database_url)
        changes = SqliteChanges(database)
        counter = SqliteCounter(database, changes=changes)
        return SqliteExecutor(database), changes, counter, _no_pool
    if backend == "postgresql":
        from pkgcat.storage.postgres import PostgresChanges, PostgresCounter, PostgresExecutor
        from pkgcat.storage.postgres.connection import PostgresDatabase

        pg = PostgresDatabase(settings.database_url, pool_size=settings.database_pool_size)
        feed = PostgresChanges(pg)
        pg_counter = PostgresCounter(
            pg, told=feed.listening, synchronous=settings.database_synchronous_counts
        )
        feed.on_downloads = pg_counter.forget_downloads
        return PostgresExecutor(pg), feed, pg_counter, pg.pool_use
    raise ValueError(
        f"PKGCAT_DATABASE_URL: pkgcat runs on sqlite:/// or postgresql://, not {backend!r}"
    )


def _limiter(settings: Settings) -> RateLimiter:
    redis_url = settings.shared_limit_url
    if redis_url is not None:
        from pkgcat.storage.redis.limiter import RedisLimiter

        return RedisLimiter(redis_url, settings.rate_limit, settings.rate_limit_namespace)
    from pkgcat.storage.limiter import WindowLimiter

    return WindowLimiter(settings.rate_limit)


def _allowance(settings: Settings, limit: str, kind: str, limits: str) -> FailureLimiter:
    """An allowance per client counted in Redis when the rate limit is shared, else here.

    Redis counts one allowance for every worker and host, under a key prefix of its own
    (``kind``); ``limits`` names them in the log when Redis cannot be reached.
    """
    redis_url = settings.shared_limit_url
    if redis_url is not None:
        from pkgcat.storage.redis.limiter import RedisLimiter

        return RedisLimiter(
            redis_url, limit, settings.rate_limit_namespace, kind=kind, limits=limits
        )
    from pkgcat.storage.limiter import WindowLimiter

    return WindowLimiter(limit)


def open_failure_limiter(settings: Settings) -> FailureLimiter:
    """Where failed authentications are counted (per client address)."""
    return _allowance(
        settings, settings.auth_failure_limit, "auth-failures", "limits on failed authentications"
    )


def open_code_limiter(settings: Settings) -> FailureLimiter:
    """Where the store's sign-in codes sent are counted (per address and per email)."""
    return _allowance(
        settings, settings.store_code_limit, "store-codes", "limits on store sign-in codes"
    )


def open_public_limits(settings: Settings) -> PublicLimits:
    """The public keys' allowances (per key, per device), in Redis when the rate limit is."""
    from pkgcat.storage.public_limits import PublicLimits

    return PublicLimits(
        settings.public_key_limit,
        settings.public_device_limit,
        redis_url=settings.shared_limit_url,
        namespace=settings.rate_limit_namespace,
    )


def open_storage(settings: Settings) -> Storage:
    """The backends ``settings`` name, the catalogue and usage behind one cache layer."""
    executor, changes, counter, pool_use = _database(settings)
    budget = settings.cache_max_bytes
    catalogue = CachedCatalogue(executor, changes, max_bytes=budget)
    return Storage(
        catalogue=catalogue,
        usage=counter,
        limiter=_limiter(settings),
        counter=counter,
        pool_use=pool_use,
    )


class WriteEngine:
    """A worker's one SQLAlchemy engine, for what it does off the request path's drivers: the
    uploads, the webhook operations, the served repository and the store.

    Made at its first use (in the worker, after the fork), from whichever thread comes
    first: a lock makes sure only one is ever made.
    """

    def __init__(self, database_url: str) -> None:
        self._url = database_url
        self._engine: Engine | None = None
        self._making = threading.Lock()

    def __call__(self) -> Engine:
        engine = self._engine
        if engine is None:
            with self._making:
                if self._engine is None:
                    self._engine = engine_for(self._url)
                engine = self._engine
        return engine

    def dispose(self) -> None:
        with self._making:
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()


def open_write_engine(settings: Settings) -> WriteEngine:
    """The worker's engine for the database the settings name, made at its first use."""
    return WriteEngine(settings.database_url)


def open_blobs(settings: Settings) -> BlobStore:
    """The store of .deb files the settings name: an S3 bucket when one is set, else a directory."""
    if settings.s3_bucket is not None:
        from pkgcat.storage.s3 import S3Blobs

        secret = settings.s3_secret_access_key
        return S3Blobs(
            settings.s3_bucket,
            endpoint=settings.s3_endpoint,
            region=settings.s3_region,
            prefix=settings.s3_prefix,
            access_key_id=settings.s3_access_key_id,
            secret_access_key=secret.get_secret_value() if secret is not None else None,
            deadline=settings.request_deadline,
        )
    root = Path(settings.blob_dir) if settings.blob_dir else default_blob_dir(settings.database_url)
    return DirectoryBlobs(root)


def open_index_blobs(settings: Settings) -> BlobStore:
    """The store of the published index files (:mod:`pkgcat.storage.publications`), apart
    from the .deb files: under ``indexes/`` of the bucket's prefix, or in the directory
    beside the .deb files' named as it with ``-indexes``."""
    if settings.s3_bucket is not None:
        prefix = settings.s3_prefix.strip("/")
        nested = settings.model_copy(
            update={"s3_prefix": f"{prefix}/indexes" if prefix else "indexes"}
        )
        return open_blobs(nested)
    root = Path(settings.blob_dir) if settings.blob_dir else default_blob_dir(settings.database_url)
    return DirectoryBlobs(root.with_name(f"{root.name}-indexes"))
