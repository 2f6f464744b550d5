"""Alembic migrations: on each backend they build exactly the schema the code describes,
are idempotent, and every one of them can be undone and redone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from pkgcat.storage.engine import engine_for
from pkgcat.storage.migrate import alembic_config, current_revision, head_revision, upgrade
from pkgcat.storage.schema import metadata
from tests.backends import PostgresDatabases
from tests.conftest import BACKENDS

TABLES = {"sources", "packages", "applications", "secret_keys", "purchases", "usage_days"}


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with nothing in it yet, on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'new.db'}"
        return
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    with databases.database(migrated=False) as url:
        yield url


def differences(url: str) -> list[object]:
    """What the database's schema lacks or has beyond the one the code describes."""
    engine = engine_for(url)
    try:
        with engine.connect() as connection:
            found: list[object] = compare_metadata(MigrationContext.configure(connection), metadata)
            return found
    finally:
        engine.dispose()


def tables(url: str) -> set[str]:
    engine = engine_for(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_new_database_is_migrated_to_head_and_matches_the_schema(empty_url: str) -> None:
    assert current_revision(empty_url) is None
    upgrade(empty_url)
    assert current_revision(empty_url) == head_revision()
    assert differences(empty_url) == []


def test_upgrading_twice_changes_nothing(empty_url: str) -> None:
    upgrade(empty_url)
    before = tables(empty_url)
    upgrade(empty_url)
    assert tables(empty_url) == before
    assert before >= TABLES


def test_every_migration_is_undone_and_redone(empty_url: str) -> None:
    upgrade(empty_url)
    config = alembic_config(empty_url)
    command.downgrade(config, "base")
    assert current_revision(empty_url) is None
    assert tables(empty_url) & TABLES == set()
    command.upgrade(config, "head")
    assert differences(empty_url) == []
