"""PostgreSQL connections: one asyncpg pool per server worker, psycopg for SQLAlchemy.

The request path runs on asyncpg (its binary protocol and prepared statements
make a primary-key read cost about half of what other drivers spend); the
operator's commands, imports and Alembic run on SQLAlchemy with psycopg 3
(synchronous, and batching ``executemany`` into few round trips). Both read the same
``PKGCAT_DATABASE_URL``: ``postgresql://user:password@host:port/database``
(a ``postgresql+driver://`` spelling is accepted too).
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
from sqlalchemy.engine import URL, make_url

COMMAND_TIMEOUT = 10.0
"""Seconds one statement of the request path may take before the request fails (code 15)."""


def _url(database_url: str) -> URL:
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"not a PostgreSQL URL: {url.render_as_string(hide_password=True)}")
    return url


def sqlalchemy_url(database_url: str) -> URL:
    """The URL with SQLAlchemy's psycopg 3 driver, whatever driver it named."""
    return _url(database_url).set(drivername="postgresql+psycopg")


def asyncpg_dsn(database_url: str) -> str:
    """The URL as asyncpg reads it: no driver name in the scheme."""
    return _url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresDatabase:
    """One worker's pool of connections, opened on first use (after the server forks)."""

    def __init__(self, database_url: str, *, pool_size: int = 4) -> None:
        self.dsn = asyncpg_dsn(database_url)
        self.shown = _url(database_url).render_as_string(hide_password=True)
        self._pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._opening: asyncio.Future[Any] | None = None

    async def pool(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            # Requests that arrive while the pool opens wait for the same one.
            self._opening = asyncio.ensure_future(
                asyncpg.create_pool(
                    self.dsn,
                    min_size=1,
                    max_size=self._pool_size,
                    command_timeout=COMMAND_TIMEOUT,
                )
            )
        try:
            pool = await asyncio.shield(self._opening)
        except BaseException:
            self._opening = None  # the next request tries again
            raise
        self._pool = pool
        return pool

    async def connect(self) -> Any:
        """A connection of its own, outside the pool (the change feed's LISTEN)."""
        return await asyncpg.connect(self.dsn, command_timeout=COMMAND_TIMEOUT)

    async def close(self) -> None:
        pool, self._pool, self._opening = self._pool, None, None
        if pool is not None:
            await pool.close()
