"""Real databases for the tests: a SQLite file, or a PostgreSQL database of the test's own.

PostgreSQL and Redis come from ``PKGCAT_TEST_POSTGRES_URL`` and
``PKGCAT_TEST_REDIS_URL`` (``.ci/run`` sets both). A variable that is not set
means the service's default local address (:data:`DEFAULT_URLS`) when something
answers there, as on a developer's machine that runs both. Without either, a test
that needs the service skips with one line saying so; under CI (``CI`` set) it
fails instead, so a missing service can never turn a run green.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

from pkgcat.storage.migrate import upgrade

POSTGRES_VARIABLE = "PKGCAT_TEST_POSTGRES_URL"
REDIS_VARIABLE = "PKGCAT_TEST_REDIS_URL"
DEFAULT_URLS = {
    POSTGRES_VARIABLE: "postgresql://postgres@127.0.0.1:5432/test",
    REDIS_VARIABLE: "redis://127.0.0.1:6379/0",
}
"""Where each service is looked for when its variable is not set: the default local address."""


def unavailable(reason: str) -> NoReturn:
    """Skip the test for ``reason`` in one line; under CI (``CI`` set), fail: CI runs every test."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run this test", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def service_url(variable: str, what: str, default: str | None = None) -> str:
    """The address a test service is at: ``variable``'s, else ``default`` (the service's
    local address, :data:`DEFAULT_URLS`) if it answers there; skip (fail under CI) else."""
    url = os.environ.get(variable)
    if url:
        return url
    default = default or DEFAULT_URLS[variable]
    if answers(default):
        return default
    unavailable(
        f"{what} tests need {what} at {default}, or its address in {variable} "
        "(see docs/deploy.md, 'Running the tests against PostgreSQL and Redis')"
    )


@functools.cache
def answers(url: str) -> bool:
    """Whether a PostgreSQL or Redis server answers at ``url``: asked once a run, briefly."""
    try:
        if url.startswith("redis"):
            client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
            try:
                return bool(client.ping())
            finally:
                client.close()
        with psycopg.connect(_admin_conninfo(url), connect_timeout=2) as connection:
            connection.execute("SELECT 1")
        return True
    except (OSError, psycopg.Error, redis.RedisError):
        return False


def _admin_conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


class PostgresDatabases:
    """Databases made from one migrated template: a fresh, isolated catalogue per test in ~50 ms."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.template = f"pkgcat_template_{uuid.uuid4().hex[:12]}"
        self._execute(f'CREATE DATABASE "{self.template}"')
        upgrade(_with_database(url, self.template))

    def _execute(self, statement: str) -> None:
        with psycopg.connect(_admin_conninfo(self.url), autocommit=True) as connection:
            connection.execute(statement)  # names made here, not input

    @contextmanager
    def database(self, *, migrated: bool = True) -> Iterator[str]:
        """A new database, copied from the migrated template (or empty), dropped afterwards."""
        name = f"pkgcat_test_{uuid.uuid4().hex[:12]}"
        template = self.template if migrated else "template0"
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        try:
            yield _with_database(self.url, name)
        finally:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{self.template}" WITH (FORCE)')
