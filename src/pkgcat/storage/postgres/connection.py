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

from pkgcat.loops import RunningLoop
from pkgcat.storage.interfaces import PoolUse

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


async def _keep_session(_connection: Any) -> None:
    """Nothing to reset when a connection goes back to the pool.

    asyncpg's default reset sends ``RESET ALL``, ``UNLISTEN *``, ``CLOSE ALL``
    and an advisory unlock on every release: one more round trip for each use
    of the pool, that is for every batch of counts. The request path changes
    no session state (no ``SET``, cursor, advisory lock or ``LISTEN`` on a
    pooled connection: the change feed listens on a connection of its own),
    and asyncpg still rolls back a transaction left open before calling this.
    """


class PostgresDatabase:
    """One worker's pools of connections, opened on first use (after the server forks).

    A pool belongs to the event loop that opened it: a server worker has one loop and
    so one pool; code that drives the same app from a second loop (an embedding
    application, a test) gets a pool of its own there instead of a broken one.
    """

    def __init__(self, database_url: str, *, pool_size: int = 4) -> None:
        self.dsn = asyncpg_dsn(database_url)
        self.shown = _url(database_url).render_as_string(hide_password=True)
        self._pool_size = pool_size
        self._pools: dict[asyncio.AbstractEventLoop, asyncio.Future[Any]] = {}
        self._running = RunningLoop()  # asked once a batch of counts

    async def pool(self) -> asyncpg.Pool:
        loop = self._running()
        opening = self._pools.get(loop)
        if opening is None:
            # Requests that arrive while the pool opens wait for the same one.
            opening = self._pools[loop] = asyncio.ensure_future(
                asyncpg.create_pool(
                    self.dsn,
                    min_size=1,
                    max_size=self._pool_size,
                    command_timeout=COMMAND_TIMEOUT,
                    reset=_keep_session,
                )
            )
        try:
            return await asyncio.shield(opening)
        except BaseException:
            if opening.done() and self._pools.get(loop) is opening:
                del self._pools[loop]  # the next request tries again
            raise

    def pool_use(self) -> PoolUse | None:
        """This loop's pool as it stands, or None while it is not open (no round trip)."""
        opening = self._pools.get(asyncio.get_running_loop())
        if opening is None or not opening.done() or opening.cancelled() or opening.exception():
            return None
        pool = opening.result()
        size, idle = pool.get_size(), pool.get_idle_size()
        return PoolUse(size, size - idle, pool.get_max_size())

    async def connect(self) -> Any:
        """A connection of its own, outside the pool (the change feed's LISTEN)."""
        return await asyncpg.connect(self.dsn, command_timeout=COMMAND_TIMEOUT)

    async def close(self) -> None:
        """Close this loop's pool; pools of loops that have ended went with their loop."""
        pools, self._pools = self._pools, {}
        opening = pools.get(asyncio.get_running_loop())
        if opening is None:
            return
        try:
            pool = await opening
        except Exception:
            return  # it never opened: nothing to close
        await pool.close()
