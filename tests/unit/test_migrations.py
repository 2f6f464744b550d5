"""Alembic migrations: on each backend they build exactly the schema the code describes,
are idempotent, and every one of them can be undone and redone."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.storage.engine import engine_for
from pkgcat.storage.migrate import alembic_config, current_revision, head_revision, upgrade
from pkgcat.storage.schema import metadata
from tests.backends import PostgresDatabases, rows
from tests.conftest import BACKENDS

TABLES = {
    "sources", "packages", "applications", "secret_keys", "purchases", "usage_days",
    "buyer_devices", "usage_operations", "api_secrets", "deb_files", "repository_keys",
    "download_grants",
}  # fmt: skip


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
        with engine.connect() as connection, warnings.catch_warnings():
            # uq_packages_folded indexes lower(package): neither dialect reflects an expression
            # index, so the comparison leaves it out (test_0011_... checks what it refuses).
            warnings.filterwarnings("ignore", "(?i).*expression-based index '?uq_packages_folded")
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


def generation(url: str) -> int:
    [(value,)] = rows(url, "SELECT value FROM catalogue_generation")
    assert isinstance(value, int)
    return value


def execute(url: str, *statements: str) -> None:
    """Each statement in a transaction of its own."""
    engine = engine_for(url)
    try:
        for statement in statements:
            with engine.begin() as connection:
                connection.execute(text(statement))
    finally:
        engine.dispose()


def test_each_database_gets_its_own_cursor_key(empty_url: str, tmp_path: Path) -> None:
    upgrade(empty_url)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    upgrade(other)
    keys = []
    for url in (empty_url, other):
        [(name, key)] = rows(url, "SELECT name, value FROM api_secrets")
        assert name == "cursor_key"
        assert isinstance(key, str)
        assert len(key) == 64
        bytes.fromhex(key)
        keys.append(key)
    assert keys[0] != keys[1]


def test_a_change_to_buyers_devices_moves_the_catalogue_generation(empty_url: str) -> None:
    upgrade(empty_url)
    execute(empty_url, "INSERT INTO sources (id, name, url, created_at) VALUES (1, 's', 'u', 0)")
    steps = [
        "INSERT INTO buyer_devices (source_id, nickname, udid) VALUES (1, 'ann', 'abc')",
        "UPDATE buyer_devices SET device_model = 'iPhone10,3'",
        "DELETE FROM buyer_devices",
    ]
    for step in steps:
        before = generation(empty_url)
        execute(empty_url, step)
        assert generation(empty_url) > before, step
    execute(
        empty_url,
        "INSERT INTO applications (id, source_id, name, created_at) VALUES (1, 1, 'a', 0)",
    )
    before = generation(empty_url)
    execute(
        empty_url,
        "INSERT INTO usage_operations (application_id, day, operation, count)"
        " VALUES (1, '2026-01-01', 'package/details', 1)",
    )
    assert generation(empty_url) == before


def test_undoing_0005_keeps_the_purchase_triggers(empty_url: str) -> None:
    """Its purchase columns go in place: a rebuilt table would lose the triggers of 0003."""
    upgrade(empty_url)
    command.downgrade(alembic_config(empty_url), "0004")
    engine = engine_for(empty_url)
    try:
        columns = {c["name"] for c in inspect(engine).get_columns("purchases")}
    finally:
        engine.dispose()
    assert columns.isdisjoint({"account", "udid", "device_model"})
    execute(empty_url, "INSERT INTO sources (id, name, url, created_at) VALUES (1, 's', 'u', 0)")
    before = generation(empty_url)
    execute(
        empty_url,
        "INSERT INTO purchases (source_id, allowed_for, nickname, status, total, commission,"
        " currency, purchased_at, txn_id, payment_platform)"
        " VALUES (1, 'source', 'ann', 'Completed', '1.00', '0.10', 'USD', 0, 't1', 'PayPal')",
    )
    assert generation(empty_url) > before


def test_stored_files_and_signing_keys_move_the_generation_spent_grants_do_not(
    empty_url: str,
) -> None:
    """The served indexes are rebuilt on the generation: files and keys change them, grants not."""
    upgrade(empty_url)
    execute(empty_url, "INSERT INTO sources (id, name, url, created_at) VALUES (1, 's', 'u', 0)")
    steps = [
        "INSERT INTO deb_files (sha256, source_id, package, version, architecture, size,"
        " md5sum, sha1, sha512, control, stored_at)"
        " VALUES ('aaaa', 1, 'p', '1.0', 'all', 1, '', '', '', '', 0)",
        "UPDATE deb_files SET control = 'Package: p'",
        "DELETE FROM deb_files",
        "INSERT INTO repository_keys (fingerprint, public_key, sealed_key, created_at)"
        " VALUES ('f', 'public', 'sealed', 0)",
        "UPDATE repository_keys SET retired_at = 1",
        "DELETE FROM repository_keys",
    ]
    for step in steps:
        before = generation(empty_url)
        execute(empty_url, step)
        assert generation(empty_url) > before, step
    before = generation(empty_url)
    execute(empty_url, "INSERT INTO download_grants (grant_id, expires_at) VALUES ('g', 1)")
    assert generation(empty_url) == before


INSERT_PACKAGE = (
    "INSERT INTO packages (id, package, source_id, name, version, released_at, created_at,"
    " updated_at) VALUES (?, 'x', '1.0', 0, 0, 0)"
)


def test_0011_keeps_ids_that_differ_only_in_case_and_the_check_lists_them(
    empty_url: str,
) -> None:
    # Rows of before 0011, from imports or uploads: nothing is changed or deleted, the oldest
    # row of each id is the one the new unique index holds, and pkgcat check names them all.
    command.upgrade(alembic_config(empty_url), "0010")
    execute(
        empty_url,
        "INSERT INTO sources (id, name, url, created_at) VALUES (1, 'Alpha', 'u', 0)",
        "INSERT INTO sources (id, name, url, created_at) VALUES (2, 'Beta', 'u', 0)",
        *(
            INSERT_PACKAGE.replace("?", values)
            for values in (
                "1, 'com.alpha.tweak', 1",
                "2, 'com.alone', 1",
                "3, 'COM.ALPHA.TWEAK', 2",
                "4, 'Com.Alpha.Tweak', 1",
            )
        ),
    )
    upgrade(empty_url)
    assert rows(empty_url, "SELECT id, package, case_twin FROM packages ORDER BY id") == [
        (1, "com.alpha.tweak", 0),
        (2, "com.alone", 0),
        (3, "COM.ALPHA.TWEAK", 3),
        (4, "Com.Alpha.Tweak", 4),
    ]
    with pytest.raises(IntegrityError):
        execute(
            empty_url,
            "INSERT INTO packages (package, source_id, name, version, released_at, created_at,"
            " updated_at) VALUES ('com.ALPHA.tweak', 2, 'x', '3.0', 0, 0, 0)",
        )
    result = CliRunner().invoke(
        cli, ["check", "package-ids", "--json"], env={"PKGCAT_DATABASE_URL": empty_url}
    )
    assert result.exit_code == 1, result.output
    assert [(r["package"], r["source"], r["kept"]) for r in json.loads(result.output)] == [
        ("com.alpha.tweak", "Alpha", True),
        ("COM.ALPHA.TWEAK", "Beta", False),
        ("Com.Alpha.Tweak", "Alpha", False),
    ]
    execute(empty_url, "DELETE FROM packages WHERE id > 2")
    clean = CliRunner().invoke(
        cli, ["check", "package-ids"], env={"PKGCAT_DATABASE_URL": empty_url}
    )
    assert clean.exit_code == 0, clean.output
    assert "no package ids differ only in letter case" in clean.output
    command.downgrade(alembic_config(empty_url), "0010")
    assert rows(empty_url, "SELECT id, package FROM packages ORDER BY id") == [
        (1, "com.alpha.tweak"),
        (2, "com.alone"),
    ]


def test_0019_keeps_existing_keys_secret_and_whitelist_changes_move_the_generation(
    empty_url: str,
) -> None:
    command.upgrade(alembic_config(empty_url), "0018")
    execute(
        empty_url,
        "INSERT INTO sources (id, name, url, created_at) VALUES (1, 's', 'u', 0)",
        "INSERT INTO applications (id, source_id, name, created_at) VALUES (1, 1, 'a', 0)",
        "INSERT INTO secret_keys (application_id, key_hash, prefix, created_at)"
        " VALUES (1, 'h', 'pkc_abcdefgh', 0)",
        INSERT_PACKAGE.replace("?", "1, 'com.a', 1"),
    )
    upgrade(empty_url)
    assert rows(empty_url, "SELECT kind, package FROM secret_keys") == [("secret", None)]
    steps = [
        "INSERT INTO package_whitelist (package_id, udid, description, added_at)"
        " VALUES (1, 'abc', 'a tester', 0)",
        "UPDATE package_whitelist SET description = 'the tester'",
        "DELETE FROM package_whitelist",
    ]
    for step in steps:
        before = generation(empty_url)
        execute(empty_url, step)
        assert generation(empty_url) > before, step
    command.downgrade(alembic_config(empty_url), "0018")
    assert "package_whitelist" not in tables(empty_url)
    # The keys' triggers of 0003 are still there: a new key moves the generation.
    before = generation(empty_url)
    execute(
        empty_url,
        "INSERT INTO secret_keys (application_id, key_hash, prefix, created_at)"
        " VALUES (1, 'h2', 'pkc_ijklmnop', 0)",
    )
    assert generation(empty_url) > before
