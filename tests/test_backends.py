"""Where the tests find PostgreSQL and Redis: the variables, else the default local addresses.

`make test` on a machine that runs both at their usual places uses them with no variable
set; a service that is nowhere skips its tests (and fails them under CI).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import psycopg
import pytest

from tests.backends import (
    DEFAULT_URLS,
    POSTGRES_VARIABLE,
    REDIS_VARIABLE,
    PostgresDatabases,
    service_url,
)
from tests.servers import free_port

SERVICES = [(POSTGRES_VARIABLE, "PostgreSQL"), (REDIS_VARIABLE, "Redis")]


@pytest.mark.parametrize(("variable", "what"), SERVICES)
def test_without_its_variable_a_service_answering_at_its_default_address_is_used(
    monkeypatch: pytest.MonkeyPatch, variable: str, what: str
) -> None:
    monkeypatch.delenv(variable, raising=False)
    assert service_url(variable, what) == DEFAULT_URLS[variable]


@pytest.mark.parametrize(("variable", "what"), SERVICES)
def test_the_variable_names_the_service_wherever_it_is(
    monkeypatch: pytest.MonkeyPatch, variable: str, what: str
) -> None:
    elsewhere = DEFAULT_URLS[variable].replace("127.0.0.1", "192.0.2.1")  # TEST-NET: nothing
    monkeypatch.setenv(variable, elsewhere)
    assert service_url(variable, what) == elsewhere


@pytest.mark.parametrize(("variable", "what"), SERVICES)
@pytest.mark.parametrize("ci", [None, "true"])
def test_a_service_that_answers_nowhere_skips_its_tests_or_fails_them_in_ci(
    monkeypatch: pytest.MonkeyPatch, variable: str, what: str, ci: str | None
) -> None:
    monkeypatch.delenv(variable, raising=False)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    nowhere = (
        DEFAULT_URLS[variable].replace("6379", str(free_port())).replace("5432", str(free_port()))
    )
    expected = pytest.skip.Exception if ci is None else pytest.fail.Exception
    with pytest.raises(expected, match=variable):
        service_url(variable, what, nowhere)


# Databases handed from test to test --------------------------------------------------------------

SOURCE = (
    "INSERT INTO sources (name, url, created_at) VALUES (%s, 'https://x.test/', 0) RETURNING id"
)


def rows(url: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as db:
        return db.execute(query).fetchall()


def exists(databases: PostgresDatabases, url: str) -> bool:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(databases.url) as db:
        return (
            db.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            is not None
        )


def test_a_database_handed_on_is_as_the_template_left_it(
    postgres_databases: PostgresDatabases,
) -> None:
    """The next test gets the same database: emptied, the migration's rows back, ids from 1,
    and nothing of the last test's still connected or holding a lock."""
    made = "SELECT name, value FROM api_secrets UNION ALL SELECT 'generation', value::text FROM catalogue_generation"
    with postgres_databases.database() as url:
        fresh = rows(url, made)
        with psycopg.connect(url) as db:
            db.execute(SOURCE, ("used",))
            db.execute("DELETE FROM api_secrets")
            db.execute("UPDATE catalogue_generation SET value = value + 7")
        forgotten = psycopg.connect(url, autocommit=True)  # a test's connection left open...
        forgotten.execute("BEGIN; LOCK TABLE usage_days IN ACCESS EXCLUSIVE MODE")  # ...locking
    with postgres_databases.database() as again:
        assert again == url  # handed on, not copied afresh
        with pytest.raises(psycopg.OperationalError):
            forgotten.execute("SELECT 1")
        assert rows(again, "SELECT count(*) FROM sources") == [(0,)]
        assert rows(again, made) == fresh
        with psycopg.connect(again) as db:
            db.execute("SET lock_timeout = '2s'")
            db.execute("LOCK TABLE usage_days IN ACCESS EXCLUSIVE MODE")
            assert db.execute(SOURCE, ("new",)).fetchone() == (1,)


def test_a_database_whose_schema_a_test_changed_is_dropped(
    postgres_databases: PostgresDatabases,
) -> None:
    with postgres_databases.database() as url, psycopg.connect(url) as db:
        db.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused'; END $$"
        )
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON sources EXECUTE FUNCTION refuse()")
    assert not exists(postgres_databases, url)
    with postgres_databases.database() as other, psycopg.connect(other) as db:
        db.execute(SOURCE, ("fine",))


def test_a_database_a_process_of_the_test_still_uses_is_dropped(
    postgres_databases: PostgresDatabases,
) -> None:
    """A server the test left running could write into the next test's catalogue."""
    with postgres_databases.database() as url:
        env = {**os.environ, "PKGCAT_DATABASE_URL": url}
        left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        assert left.wait(timeout=10) == -signal.SIGKILL
        assert not exists(postgres_databases, url)
    finally:
        left.kill()
