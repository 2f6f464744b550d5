"""The catalogue's executor and change feed on SQLite (:mod:`pkgcat.storage.interfaces`).

The reads themselves are :mod:`pkgcat.storage.reads`'s, the same on every database. A read
that must agree with itself (a buyers page and its total) runs in one read transaction,
which SQLite's WAL mode serves from one snapshot.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pkgcat.storage import rows
from pkgcat.storage.sqlite.connection import SqliteDatabase


def read_generation(db: sqlite3.Connection) -> int:
    """The catalogue generation in the database (in the caller's transaction, if any)."""
    row = db.execute(rows.GENERATION).fetchone()
    return -1 if row is None else int(row["value"])  # no counter row: trust no cache


class SqliteChanges:
    """:class:`~pkgcat.storage.interfaces.ChangeFeed` on SQLite: learnt in each commit of counts.

    SQLite cannot push a change to another process, and reading the
    generation once per request was one more statement on every request (with
    the GIL released and taken back around it). Instead, the usage counter
    reads it inside each group commit, which every counted request waits for
    (:meth:`observe`): a request's commit starts after the request did, so the
    generation it reads is at least the one of the last change committed before
    the request arrived. :meth:`current` is the latest value seen so far, which
    is older until the request's own commit; :meth:`latest` reads the database.

    One read of :meth:`latest` serves every request of the event loop's turn it is made in
    (a crowd of refused keys asks for it once a turn, not once each): those requests were
    all queued before the read, so each had arrived before it, and a change committed
    before a request arrived is one the read sees. The first call of the next turn reads
    again.
    """

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database
        self._seen: int | None = None
        self._read_this_turn = False

    def start(self) -> None:
        """Nothing to start: SQLite pushes nothing, each commit of counts reads the generation."""

    def current(self) -> int:
        if self._seen is None:
            self._seen = read_generation(self._database.db)
        return self._seen

    def observe(self, generation: int) -> None:
        """Note the generation read by a commit of this process, the latest it knows of."""
        self._seen = generation

    async def latest(self) -> int:
        if self._seen is None or not self._read_this_turn:
            self._seen = read_generation(self._database.db)
            self._read_this_turn = True
            # Runs after every callback queued so far: a request queued later reads again.
            asyncio.get_running_loop().call_soon(self._turn_ended)
        return self._seen

    def _turn_ended(self) -> None:
        self._read_this_turn = False

    async def close(self) -> None:
        self._database.close()


class SqliteExecutor:
    """:class:`~pkgcat.storage.interfaces.Executor` on one SQLite file: ``sqlite3`` called on
    the event loop's thread (a statement takes microseconds; a thread hop would cost more).

    No method ever suspends, so a :meth:`snapshot` runs whole between two turns of the
    event loop, and nothing else of the worker runs on the connection in the middle of it.
    """

    collate = ""  # SQLite compares text byte by byte already

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database

    async def row(self, sql: str, parameters: tuple[object, ...] = ()) -> sqlite3.Row | None:
        found: sqlite3.Row | None = self._database.db.execute(sql, parameters).fetchone()
        return found

    async def rows(self, sql: str, parameters: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        return self._database.db.execute(sql, parameters).fetchall()

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteExecutor]:
        # One read transaction: WAL mode serves all its statements from one snapshot.
        db = self._database.db
        db.execute("BEGIN")
        try:
            yield self
        finally:
            db.execute("COMMIT")

    async def close(self) -> None:
        self._database.close()
