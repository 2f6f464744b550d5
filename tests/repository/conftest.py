"""The repository's fixtures: `pkgcat publish` in-process against a test's database."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli
from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for

Publisher = Callable[..., Result]


PASSPHRASE = "a test passphrase of some length"
"""The passphrase of :func:`cli_env`, which seals the repository's keys."""


@pytest.fixture
def blob_dir(tmp_path: Path) -> Path:
    return tmp_path / "blobs"


@pytest.fixture
def cli_env(database_url: str, blob_dir: Path, catalogue: dict[str, str]) -> dict[str, str]:
    """The settings every command of a repository test runs with, on the test catalogue."""
    return {
        "PKGCAT_DATABASE_URL": database_url,
        "PKGCAT_BLOB_DIR": str(blob_dir),
        "PKGCAT_REPOSITORY_PASSPHRASE": PASSPHRASE,
    }


@pytest.fixture
def pkgcat(cli_env: dict[str, str]) -> Publisher:
    """Run ``pkgcat ARGS...`` in-process with :func:`cli_env`; the result, failures included."""
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(cli, list(args), env=cli_env, catch_exceptions=False)

    return invoke


@pytest.fixture(scope="session")
def made_signing_key(
    tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path
) -> dict[str, Any]:
    """One signing key made by `pkgcat repo key create` for the process, sealed with the tests'
    passphrase: its stored row.

    Making a key costs a test some 60 ms of CPU (sealing it is a deliberately slow password
    encryption); the tests that only need the repository signed share this one, each in its
    own database (:func:`signing_key`). tests/repository/test_keys.py makes its own.
    """
    path = tmp_path_factory.mktemp("signing-key") / "pkgcat.db"
    shutil.copyfile(migrated_sqlite, path)
    env = {"PKGCAT_DATABASE_URL": f"sqlite:///{path}", "PKGCAT_REPOSITORY_PASSPHRASE": PASSPHRASE}
    made = CliRunner().invoke(cli, ["repo", "key", "create"], env=env, catch_exceptions=False)
    assert made.exit_code == 0, made.output
    engine = engine_for(env["PKGCAT_DATABASE_URL"])
    try:
        with engine.connect() as db:
            (row,) = db.execute(select(t.repository_keys)).mappings().all()
    finally:
        engine.dispose()
    return dict(row)


@pytest.fixture
def signing_key(made_signing_key: dict[str, Any]) -> Callable[[str], None]:
    """``signing_key(database_url)``: the shared key stored there, as `repo key create` stores it."""

    def store(database_url: str) -> None:
        engine = engine_for(database_url)
        try:
            with engine.begin() as db:
                db.execute(insert(t.repository_keys).values(**made_signing_key))
        finally:
            engine.dispose()

    return store


def scalar(database_url: str, query: str, **params: Any) -> Any:
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            return db.execute(text(query), params).scalar()
    finally:
        engine.dispose()


def get_scope(path: str, **headers: str) -> dict[str, Any]:
    """The ASGI scope of a GET of ``path`` (under ``/repo``) as a server that offers
    ``http.response.pathsend`` sends it."""
    return {
        "type": "http",
        "method": "GET",
        "path": path,
        "root_path": "/repo",
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
        "query_string": b"",
        "extensions": {"http.response.pathsend": {}},
    }
