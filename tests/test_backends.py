"""Where the tests find PostgreSQL and Redis: the variables, else the default local addresses.

`make test` on a machine that runs both at their usual places uses them with no variable
set; a service that is nowhere skips its tests (and fails them under CI).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.backends import (
    DEFAULT_URLS,
    POSTGRES_VARIABLE,
    REDIS_VARIABLE,
    PostgresDatabases,
    conninfo,
    rows,
    service_url,
)
from tests.servers import free_port, poll

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
IDENTITY = "SELECT oid FROM pg_database WHERE datname = current_database()"


def test_a_database_handed_on_is_as_the_template_left_it(
    postgres_databases: PostgresDatabases,
) -> None:
    """The next test gets the same database under a new name: emptied, the migration's rows
    back, ids from 1, no dead rows, nothing of the last test's connected or holding a lock."""
    made = (
        "SELECT name, value FROM api_secrets "
        "UNION ALL SELECT 'generation', value::text FROM catalogue_generation"
    )
    with postgres_databases.database() as url:
        fresh, identity = rows(url, made), rows(url, IDENTITY)
        with psycopg.connect(conninfo(url)) as db:
            db.execute(SOURCE, ("used",))
            db.execute(
                "INSERT INTO sources (name, url, created_at) "
                "SELECT 'n' || g, 'https://x.test/', 0 FROM generate_series(1, 5000) AS g"
            )
            db.execute("DELETE FROM api_secrets")
            db.execute("UPDATE catalogue_generation SET value = value + 7")
        forgotten = psycopg.connect(conninfo(url), autocommit=True)  # a test's connection...
        forgotten.execute("BEGIN; LOCK TABLE usage_days IN ACCESS EXCLUSIVE MODE")  # ...locking
    with postgres_databases.database() as again:
        assert rows(again, IDENTITY) == identity  # handed on, not copied afresh
        assert again != url
        with pytest.raises(psycopg.OperationalError):
            forgotten.execute("SELECT 1")
        with pytest.raises(psycopg.OperationalError, match="does not exist"):
            psycopg.connect(conninfo(url))  # the last test's URL leads nowhere
        assert rows(again, "SELECT count(*), pg_relation_size('sources') FROM sources") == [(0, 0)]
        assert rows(again, made) == fresh
        with psycopg.connect(conninfo(again)) as db:
            db.execute("SET lock_timeout = '2s'")
            db.execute("LOCK TABLE usage_days IN ACCESS EXCLUSIVE MODE")
            assert db.execute(SOURCE, ("new",)).fetchone() == (1,)


CHANGES = {
    "a trigger": [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'refused'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON sources EXECUTE FUNCTION refuse()",
    ],
    "a constraint": ["ALTER TABLE sources ADD CONSTRAINT short CHECK (length(name) < 3)"],
    "a dropped table": ["DROP TABLE download_totals"],
    "a trigger disabled": ["ALTER TABLE packages DISABLE TRIGGER ALL"],
    "a function's body": [
        "CREATE FUNCTION one() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "COMMIT",
        "CREATE OR REPLACE FUNCTION one() RETURNS int LANGUAGE sql AS 'SELECT 2'",
    ],
    "a sequence's step": ["ALTER SEQUENCE sources_id_seq INCREMENT BY 10"],
    "an unlogged table": ["ALTER TABLE download_totals SET UNLOGGED"],
    "row security": [
        "ALTER TABLE sources ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY none ON sources USING (false)",
    ],
    "a rule": ["CREATE RULE nothing AS ON INSERT TO sources DO INSTEAD NOTHING"],
    "a grant": ["REVOKE ALL ON sources FROM PUBLIC", "GRANT SELECT ON sources TO PUBLIC"],
    "a table option": ["ALTER TABLE sources SET (fillfactor = 50)"],
    "a type": ["CREATE TYPE mood AS ENUM ('sad', 'ok')"],
    "a schema": ["CREATE SCHEMA elsewhere"],
    "a large object": ["SELECT lo_create(0)"],
    "a column's collation": [
        'ALTER TABLE sources ALTER COLUMN label TYPE varchar(200) COLLATE "C"'
    ],
    "a setting": ["ALTER DATABASE {database} SET work_mem = '1MB'"],
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES)
def test_a_database_whose_schema_a_test_changed_is_not_handed_on(
    postgres_databases: PostgresDatabases, change: list[str]
) -> None:
    with postgres_databases.database() as url, psycopg.connect(conninfo(url)) as db:
        changed = rows(url, IDENTITY)
        for statement in change:
            db.execute(statement.format(database=url.rsplit("/", 1)[1]))
    with postgres_databases.database() as other, psycopg.connect(conninfo(other)) as db:
        assert rows(other, IDENTITY) != changed  # a fresh copy
        assert db.execute(SOURCE, ("fine",)).fetchone() == (1,)


def test_a_database_a_process_of_the_test_still_uses_is_not_handed_on(
    postgres_databases: PostgresDatabases,
) -> None:
    """A server the test left running could write into the next test's catalogue."""
    with postgres_databases.database() as url:
        used = rows(url, IDENTITY)
        env = {**os.environ, "PKGCAT_DATABASE_URL": url}
        left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
        # Popen can return before the new program's environment shows in /proc (seen in 118 of
        # 300 starts): until then nothing tells the process uses the database.
        mark = f"PKGCAT_DATABASE_URL={url}".encode()
        environ = Path(f"/proc/{left.pid}/environ")
        poll(lambda: True if mark in environ.read_bytes().split(b"\0") else None, "its environment")
    try:
        assert left.wait(timeout=10) == -signal.SIGKILL
        with postgres_databases.database() as other:
            assert rows(other, IDENTITY) != used  # a fresh copy
    finally:
        left.kill()


def test_a_url_that_names_a_driver_works_as_the_plain_one() -> None:
    """pkgcat takes ``postgresql+psycopg://`` and ``postgresql+asyncpg://``; the tests too."""
    plain = service_url(POSTGRES_VARIABLE, "PostgreSQL")
    databases = PostgresDatabases(plain.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with databases.database() as url:
            assert rows(url, "SELECT count(*) FROM sources") == [(0,)]
    finally:
        databases.close()
