"""SQLAlchemy engines for operator commands, imports and migrations, on either backend.

The server's request path does not use SQLAlchemy (see
:mod:`pkgcat.storage.sqlite` and :mod:`pkgcat.storage.postgres`); everything
else that touches the database gets its engine here, so each backend's
connection set-up is written once: SQLite's pragmas come from
:mod:`pkgcat.storage.sqlite.connection`, PostgreSQL's driver choice from
:mod:`pkgcat.storage.postgres.connection`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection, make_url


def backend_name(database_url: str) -> str:
    """``sqlite`` or ``postgresql`` (or whatever else the URL names, for the error message)."""
    return make_url(database_url).get_backend_name()


def engine_for(database_url: str) -> Engine:
    """An engine for ``database_url`` with the backend's connection set-up."""
    backend = backend_name(database_url)
    if backend == "postgresql":
        from pkgcat.storage.postgres.connection import sqlalchemy_url

        return create_engine(sqlalchemy_url(database_url))
    engine = create_engine(database_url)
    if backend == "sqlite":
        from pkgcat.storage.sqlite.connection import on_connect

        event.listen(engine, "connect", on_connect)
    return engine


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that reads and writes as one unit: committed at the end, rolled back on error.

    On SQLite it holds the write lock from its first statement (``BEGIN
    IMMEDIATE``). SQLite's driver otherwise starts the transaction at the first
    write only, so the reads before it (what a delete counts, what a command
    checks) would not be part of it, and another writer could change them before
    the write. On PostgreSQL it is an ordinary transaction; the rows a unit of
    work relies on are locked with ``FOR UPDATE`` where it reads them.
    """
    with engine.begin() as db:
        if db.dialect.name == "sqlite":
            db.exec_driver_sql("BEGIN IMMEDIATE")
        yield db
