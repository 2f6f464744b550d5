"""Alembic migrations: they build exactly the schema the code describes, and are idempotent."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from pkgcat.storage.migrate import current_revision, head_revision, upgrade
from pkgcat.storage.schema import metadata


def test_a_new_database_is_migrated_to_head_and_matches_the_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert current_revision(url) is None
    upgrade(url)
    assert current_revision(url) == head_revision()
    engine = create_engine(url)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), metadata)
    engine.dispose()
    assert differences == []


def test_upgrading_twice_changes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twice.db'}"
    upgrade(url)
    engine = create_engine(url)
    before = sorted(inspect(engine).get_table_names())
    engine.dispose()
    upgrade(url)
    engine = create_engine(url)
    assert sorted(inspect(engine).get_table_names()) == before
    engine.dispose()
    assert {"sources", "packages", "applications", "secret_keys", "purchases", "usage_days"} <= set(
        before
    )
