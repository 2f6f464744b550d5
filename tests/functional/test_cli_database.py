"""Which commands may create a database, and how database failures reach the operator."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli
from pkgcat.storage.engine import engine_for
from pkgcat.storage.migrate import head_revision
from tests.backends import PostgresDatabases
from tests.conftest import BACKENDS
from tests.servers import environment, serving

# Commands that read or write a catalogue; none of them may make one.
USERS = [
    ("key", "list"),
    ("source", "add", "Alpha", "--url", "https://alpha.example/"),
    ("app", "create", "--source", "Alpha", "--name", "a"),
    ("import-stats", "stats.csv"),
    ("serve", "--port", "1"),
]


def invoke(url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"PKGCAT_DATABASE_URL": url})


def tables(url: str) -> set[str]:
    engine = engine_for(url)
    try:
        with engine.connect() as db:
            if url.startswith("sqlite"):
                rows = db.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))
            else:
                rows = db.execute(
                    text(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
                    )
                )
            return {row[0] for row in rows}
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database that exists but holds nothing: an empty SQLite file, or a new PostgreSQL one."""
    if request.param == "sqlite":
        (tmp_path / "empty.db").touch()
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    with databases.database(migrated=False) as url:
        yield url


@pytest.mark.parametrize("args", USERS, ids=lambda a: " ".join(a[:2]))
def test_a_missing_sqlite_file_is_named_and_not_created(
    tmp_path: Path, args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stats.csv").write_text("package,total_download,total_votes\n")
    missing = tmp_path / "elsewhere" / "catalogue.db"
    result = invoke(f"sqlite:///{missing}", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1
    assert f"no database at {missing}" in result.stderr
    assert "pkgcat init" in result.stderr
    assert not missing.exists()
    assert not missing.parent.exists()


def test_the_default_database_is_not_created_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named by its full path: the point is to show a command run from the wrong folder."""
    monkeypatch.chdir(tmp_path)
    for args in (["key", "list"], ["serve"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        assert f"no database at {tmp_path / 'pkgcat.db'} (sqlite:///./pkgcat.db)" in result.stderr
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", USERS[:3], ids=lambda a: " ".join(a[:2]))
def test_a_database_without_a_catalogue_is_left_as_it_is(
    empty_url: str, args: tuple[str, ...]
) -> None:
    result = invoke(empty_url, *args)
    assert result.exit_code == 2, result.output
    assert "holds no pkgcat catalogue; `pkgcat init` creates one there" in result.stderr
    assert tables(empty_url) == set()


def test_init_makes_a_catalogue_the_other_commands_then_use(empty_url: str) -> None:
    made = invoke(empty_url, "init")
    assert made.exit_code == 0, made.output
    assert f"(revision {head_revision()})" in made.stdout
    assert invoke(empty_url, *USERS[1]).exit_code == 0
    listed = invoke(empty_url, "source", "list", "--json")
    assert '"Alpha"' in listed.stdout
    again = invoke(empty_url, "init")
    assert again.exit_code == 1
    assert "holds a catalogue already" in again.stderr
    assert '"Alpha"' in invoke(empty_url, "source", "list", "--json").stdout  # kept


def test_init_and_migrate_create_a_missing_sqlite_file(tmp_path: Path) -> None:
    for command in ("init", "migrate"):
        file = tmp_path / command / "pkgcat.db"
        file.parent.mkdir()
        result = invoke(f"sqlite:///{file}", command)
        assert result.exit_code == 0, result.output
        assert file.exists()
        assert invoke(f"sqlite:///{file}", "key", "list").exit_code == 0


def test_an_unknown_revision_is_one_line_not_a_traceback(database_url: str) -> None:
    """A database migrated by a newer pkgcat: the operator reads what is wrong, in one line."""
    engine = engine_for(database_url)
    with engine.begin() as db:
        db.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    result = invoke(database_url, "key", "list")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "Can't locate revision identified by '9999'" in result.stderr


def test_a_database_error_inside_a_command_is_one_line(tmp_path: Path) -> None:
    """Through the installed entry point: no SQLAlchemy page, no SQL, no link, exit code 2."""
    file = tmp_path / "broken.db"
    assert invoke(f"sqlite:///{file}", "init").exit_code == 0
    engine = engine_for(f"sqlite:///{file}")
    with engine.begin() as db:
        db.execute(text("DROP TABLE sources"))
    engine.dispose()
    done = subprocess.run(
        [sys.executable, "-m", "pkgcat", "source", "add", "Alpha", "--url", "https://a.example/"],
        env={**os.environ, "PKGCAT_DATABASE_URL": f"sqlite:///{file}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: database sqlite:///{file}: no such table: sources\n"


def test_passwords_in_the_query_are_masked_too() -> None:
    url = "postgresql://seller@127.0.0.1:1/none?password=s3cr3tpw&sslmode=disable"
    result = invoke(url, "migrate")
    assert result.exit_code == 2
    assert "postgresql://seller@127.0.0.1:1/none?password=***&sslmode=disable" in result.stderr
    assert "s3cr3tpw" not in result.output


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://seller:s3cr3tpw@db:port/none", "not a database address"),
        ("mysql://seller:s3cr3tpw@db/none", "pkgcat runs on sqlite:/// or postgresql://"),
    ],
)
def test_an_unusable_database_address_is_one_line(url: str, says: str) -> None:
    for args in (("key", "list"), ("migrate",), ("serve",)):
        result = invoke(url, *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: PKGCAT_DATABASE_URL:")
        assert says in result.stderr
        assert result.stderr.count("\n") == 1
        assert "s3cr3tpw" not in result.output


@pytest.mark.parametrize(
    ("variable", "value", "driver", "extra"),
    [
        ("PKGCAT_DATABASE_URL", "postgresql://seller@127.0.0.1:1/none", "asyncpg", "postgres"),
        ("PKGCAT_REDIS_URL", "redis://127.0.0.1:1/0", "redis", "redis"),
    ],
)
def test_a_missing_driver_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    variable: str,
    value: str,
    driver: str,
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, driver, None)  # as if that extra were not installed
    env = {"PKGCAT_DATABASE_URL": f"sqlite:///{tmp_path / 'absent.db'}", variable: value}
    result = CliRunner().invoke(cli, ["key", "list"], env=env)
    assert result.exit_code == 2
    assert f"needs the {driver} driver: pip install 'pkgcat[{extra}]'" in result.stderr


@pytest.mark.server
def test_serve_names_what_it_serves_with_passwords_masked(
    tmp_path: Path, postgres_url: str, redis_url: str
) -> None:
    """The limiter named is the one in use, whichever of its two settings names it."""
    with_password = postgres_url.replace("://postgres@", "://postgres:s3cr3tpw@")
    assert with_password != postgres_url  # trust authentication ignores the password
    env = environment(with_password, rate_limit_storage=redis_url.replace("://", "://:s3cr3tpw@"))
    with serving(env, tmp_path / "server.log") as served:
        banner = (tmp_path / "server.log").read_text()
    assert f"pkgcat {version('pkgcat')}: serving the Package Catalogue API" in banner
    assert f"database  {postgres_url.replace('://postgres@', '://postgres:***@')}" in banner
    assert f"limiter   {redis_url.replace('://', '://:***@')}" in banner
    assert "workers   1 worker on uvloop, shape A" in banner
    assert f"API       {served.base}/1.0/" in banner
    assert f"docs      {served.base}/docs" in banner
    assert "s3cr3tpw" not in banner
