"""The SQLite backend: one file, the embedded default (see :mod:`.connection`)."""

from pkgcat.storage.sqlite.catalogue import SqliteChanges, SqliteExecutor
from pkgcat.storage.sqlite.connection import SqliteDatabase, connect, sqlite_path
from pkgcat.storage.sqlite.counter import SqliteCounter

__all__ = [
    "SqliteChanges",
    "SqliteCounter",
    "SqliteDatabase",
    "SqliteExecutor",
    "connect",
    "sqlite_path",
]
