"""The repository's fixtures: `pkgcat publish` in-process against a test's database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli
from pkgcat.storage.engine import engine_for
from tests.conftest import REPOSITORY_PASSPHRASE

Publisher = Callable[..., Result]


@pytest.fixture
def blob_dir(tmp_path: Path) -> Path:
    return tmp_path / "blobs"


@pytest.fixture
def cli_env(database_url: str, blob_dir: Path, catalogue: dict[str, str]) -> dict[str, str]:
    """The settings every command of a repository test runs with, on the test catalogue."""
    return {
        "PKGCAT_DATABASE_URL": database_url,
        "PKGCAT_BLOB_DIR": str(blob_dir),
        "PKGCAT_REPOSITORY_PASSPHRASE": REPOSITORY_PASSPHRASE,
    }


@pytest.fixture
def pkgcat(cli_env: dict[str, str]) -> Publisher:
    """Run ``pkgcat ARGS...`` in-process with :func:`cli_env`; the result, failures included."""
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(cli, list(args), env=cli_env, catch_exceptions=False)

    return invoke


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
