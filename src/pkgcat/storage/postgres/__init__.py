"""The PostgreSQL backend: shared by many workers and hosts (see :mod:`.connection`)."""

from pkgcat.storage.postgres.catalogue import PostgresChanges, PostgresExecutor
from pkgcat.storage.postgres.connection import PostgresDatabase
from pkgcat.storage.postgres.counter import PostgresCounter

__all__ = ["PostgresChanges", "PostgresCounter", "PostgresDatabase", "PostgresExecutor"]
