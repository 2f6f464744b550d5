"""Pick the backends the settings name and wire them behind the cache layer.

``PKGCAT_DATABASE_URL`` chooses the catalogue reader, its change feed and the
usage counter (``sqlite:///...`` or ``postgresql://...``); ``PKGCAT_REDIS_URL``
chooses the rate limiter (Redis, shared by every worker and host) over the
in-process one. Nothing here opens a connection: each worker's backends
connect on first use, after the server has forked.
"""

from __future__ import annotations

from dataclasses import dataclass

from pkgcat.config import Settings
from pkgcat.storage.cache import CachedCatalogue, CachedUsage
from pkgcat.storage.engine import backend_name
from pkgcat.storage.interfaces import CatalogueReader, ChangeFeed, RateLimiter, UsageCounter


@dataclass(frozen=True, slots=True)
class Storage:
    """Everything the request path reads and writes, for one worker."""

    catalogue: CachedCatalogue
    usage: CachedUsage
    limiter: RateLimiter

    async def readiness(self) -> dict[str, object]:
        """What ``/readyz`` reports; raises when the database cannot be read."""
        database, seen = await self.catalogue.freshness()
        return {"catalogue_generation": database, "seen_generation": seen}

    async def close(self) -> None:
        await self.limiter.close()
        await self.usage.close()
        await self.catalogue.close()


def _database(settings: Settings) -> tuple[CatalogueReader, ChangeFeed, UsageCounter]:
    backend = backend_name(settings.database_url)
    if backend == "sqlite":
        from pkgcat.storage.sqlite import SqliteCatalogue, SqliteChanges, SqliteCounter
        from pkgcat.storage.sqlite.connection import SqliteDatabase

        database = SqliteDatabase(settings.database_url)
        changes = SqliteChanges(database)
        counter = SqliteCounter(database, changes=changes)
        return SqliteCatalogue(database), changes, counter
    if backend == "postgresql":
        from pkgcat.storage.postgres import PostgresCatalogue, PostgresChanges, PostgresCounter
        from pkgcat.storage.postgres.connection import PostgresDatabase

        pg = PostgresDatabase(settings.database_url, pool_size=settings.database_pool_size)
        return PostgresCatalogue(pg), PostgresChanges(pg), PostgresCounter(pg)
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


def open_storage(settings: Settings) -> Storage:
    """The backends ``settings`` name, the catalogue and usage behind one cache layer."""
    reader, changes, counter = _database(settings)
    budget = settings.cache_max_bytes
    catalogue = CachedCatalogue(reader, changes, max_bytes=budget)
    return Storage(
        catalogue=catalogue,
        usage=CachedUsage(counter, catalogue, max_bytes=budget),
        limiter=_limiter(settings),
    )
