"""The shop's fixtures: the store's (a real SMTP server, packages published), an engine, and
the app serving the repository at a public address (depictions and images need one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.repository.conftest import (  # noqa: F401  # fixtures the shop's tests share
    blob_dir,
    cli_env,
    pkgcat,
)
from tests.store.conftest import (  # noqa: F401  # fixtures the shop's tests share
    Mailbox,
    mailbox,
    sold,
    store_settings,
)

__all__ = ["ALPHA", "NOW", "REPO", "Mailbox", "store_settings"]

ALPHA = 1
"""The catalogue's source Alpha (tests/conftest.py), whose packages the tests sell."""
REPO = "http://testserver/repo/"
NOW = 1_800_000_000


@pytest.fixture
def engine(database_url: str, sold: dict[str, Path]) -> Iterator[Engine]:  # noqa: F811
    made = engine_for(database_url)
    yield made
    made.dispose()


@pytest.fixture
def shop(
    make_api: AppFactory,
    sold: dict[str, Path],  # noqa: F811
    cli_env: dict[str, str],  # noqa: F811
    mailbox: tuple[Mailbox, int],  # noqa: F811
) -> Api:
    settings = store_settings(mailbox[1], repository_url=REPO)
    return make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)
