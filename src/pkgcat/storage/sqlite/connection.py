"""SQLite connections, set up in one place for the server, the checkpointer and SQLAlchemy.

The server calls ``sqlite3`` directly: each of its queries takes tens of
microseconds, so they run on the event loop's thread (a thread hop per query,
as aiosqlite makes, would cost more than the query). Operator commands and
imports go through SQLAlchemy, whose connections get the same pragmas from
:func:`on_connect`.

Durability: the database runs in WAL mode with ``synchronous=NORMAL``. A
committed count survives the server process crashing or being killed; a power
loss can lose the last transactions (SQLite's documented WAL trade-off).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy.engine import make_url

BUSY_TIMEOUT_MS = 20
"""How long one statement of the server may block the event loop waiting for the write lock.

Longer waits (an import's transaction, another worker's commit) are retried
asynchronously by the group commit, so other requests keep being served.
"""

OPERATOR_BUSY_TIMEOUT_MS = 5_000
"""Operator commands and imports wait longer: they block nobody but their own user."""

JOURNAL_SIZE_LIMIT = 16 * 1024 * 1024
"""Bytes the WAL file is cut back to each time it restarts from its beginning.

Without it, the file keeps the largest size it ever reached while the server
runs (SQLite reuses the file, it never shrinks it). Every connection sets it:
the truncation is done by whichever connection writes first after a restart.
"""


def sqlite_path(database_url: str) -> str:
    """The file behind a ``sqlite:///PATH`` URL (an in-memory database cannot be shared)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        raise ValueError(f"not a SQLite URL: {url.render_as_string(hide_password=True)}")
    if not url.database or url.database == ":memory:":
        raise ValueError("the SQLite database must be a file: sqlite:///path/to/pkgcat.db")
    return url.database


def _pragmas(connection: Any, busy_timeout_ms: int) -> None:
    # SQLite leaves foreign keys unchecked unless each connection asks for them.
    cursor = connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    cursor.close()


def connect(path: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A connection in autocommit mode, in WAL mode, with the pragmas every pkgcat reader relies on."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    (mode,) = connection.execute("PRAGMA journal_mode=WAL").fetchone()
    if str(mode).lower() != "wal":
        connection.close()
        raise RuntimeError(
            f"{path}: SQLite refused WAL mode ({mode!r}); the request path needs it "
            "(a network file system cannot host the database)"
        )
    _pragmas(connection, busy_timeout_ms)
    return connection


def on_connect(dbapi_connection: Any, _record: Any) -> None:
    """SQLAlchemy's ``connect`` event for SQLite engines: the same pragmas, a longer wait."""
    _pragmas(dbapi_connection, OPERATOR_BUSY_TIMEOUT_MS)


class SqliteDatabase:
    """One worker's connection to the file, opened on first use.

    Opened lazily so that an app can be built before a server forks its
    workers: each worker opens its own. The catalogue reader, the change feed
    and the usage counter of a worker share it.
    """

    def __init__(self, database_url: str) -> None:
        self.path = sqlite_path(database_url)
        self._connection: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = connect(self.path)
            # Checkpoints run on a thread of their own (the counter), never in a commit.
            self._connection.execute("PRAGMA wal_autocheckpoint=0")
            # Rows are read by column name (pkgcat.storage.rows), never by position.
            self._connection.row_factory = sqlite3.Row
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
