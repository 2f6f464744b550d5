"""The SQLite backend: one file, the embedded default (see :mod:`.connection`)."""

from pkgcat.storage.sqlite.catalogue import SqliteCatalogue, SqliteChanges
from pkgcat.storage.sqlite.connection import SqliteDatabase, connect, sqlite_path
from pkgcat.storage.sqlite.counter import SqliteCounter

__all__ = [
    "SqliteCatalogue",
    "SqliteChanges",
    "SqliteCounter",
    "SqliteDatabase",
    "connect",
    "sqlite_path",
]
