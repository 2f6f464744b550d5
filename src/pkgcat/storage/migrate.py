"""Bring a database to the current schema with Alembic.

Every command that touches the database calls :func:`upgrade` first, so a new
or older database is always migrated before it is read or written.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from pkgcat.storage.engine import engine_for

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for ``database_url``; no ini file is needed."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["database_url"] = database_url
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision of the migrations folder, read once a process: every command and
    server start asks, and reading the folder loads each migration's module."""
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None, "the migrations folder has no revision"
    return head


@contextmanager
def _engine(database: str | Engine) -> Iterator[Engine]:
    """``database`` itself when it is an engine (a command's one engine), else one for the URL."""
    if isinstance(database, Engine):
        yield database
        return
    engine = engine_for(database)
    try:
        yield engine
    finally:
        engine.dispose()


def current_revision(database: str | Engine) -> str | None:
    with _engine(database) as engine, engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(database: str | Engine) -> None:
    """Apply every migration the database lacks (a no-op when it is current).

    Given an engine, every step runs on its connections: a command opens one engine.
    A SQLite file is also put in WAL mode, which the file keeps: the server's
    readers then never wait for a writer, and no request has to switch the mode.
    """
    with _engine(database) as engine:
        if current_revision(engine) != head_revision():
            config = alembic_config(engine.url.render_as_string(hide_password=False))
            with engine.connect() as connection:  # env.py begins and commits on it
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        if engine.dialect.name == "sqlite":
            with engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA journal_mode=WAL")
