"""Bring a database to the current schema with Alembic.

Every command that touches the database calls :func:`upgrade` first, so a new
or older database is always migrated before it is read or written.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from pkgcat.storage.engine import backend_name, engine_for

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for ``database_url``; no ini file is needed."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["database_url"] = database_url
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None, "the migrations folder has no revision"
    return head


def current_revision(database_url: str) -> str | None:
    engine = engine_for(database_url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def upgrade(database_url: str) -> None:
    """Apply every migration the database lacks (a no-op when it is current).

    A SQLite file is also put in WAL mode, which the file keeps: the server's
    readers then never wait for a writer, and no request has to switch the mode.
    """
    if current_revision(database_url) != head_revision():
        command.upgrade(alembic_config(database_url), "head")
    if backend_name(database_url) == "sqlite":
        engine = engine_for(database_url)
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA journal_mode=WAL")
        finally:
            engine.dispose()
