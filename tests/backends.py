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
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

from pkgcat.storage.migrate import upgrade
from tests.servers import kill_marked

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


SCHEMA = """
SELECT md5(string_agg(item, E'\\n' ORDER BY item)) FROM (
    SELECT 'rel ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname NOT LIKE 'pg\\_%'
    UNION ALL
    SELECT 'col ' || a.attrelid::regclass || ' ' || a.attname || ' '
        || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text || ' '
        || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'con ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'idx ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    WHERE c.relnamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'trg ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL
    SELECT 'fn ' || oid::regprocedure::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'evt ' || evtname FROM pg_event_trigger
    UNION ALL
    SELECT 'ext ' || extname FROM pg_extension
    UNION ALL
    SELECT 'set ' || array_to_string(setconfig, ',') FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
    UNION ALL
    SELECT 'xact ' || gid FROM pg_prepared_xacts WHERE database = current_database()
) AS items(item)
"""
"""One digest of what a database is beyond its rows: its relations, columns, constraints,
indexes, triggers, functions and settings. A test that changed any of them (a trigger that
refuses writes, a dropped table) leaves a database that is dropped, not handed on."""


class PostgresDatabases:
    """Databases made from one migrated template, each a fresh, isolated catalogue for its test.

    Copying the template (``CREATE DATABASE ... TEMPLATE``) costs the server 0.25-0.45 s of
    CPU here, and some 770 tests ask for one. So a database a test is done with is put back
    as the template left it and handed to the next test: its processes and connections gone,
    its schema checked against the template's (:data:`SCHEMA`), every table emptied and the
    template's own rows (the migration's secrets and generation) copied back, every sequence
    set back. That takes a few milliseconds; a database that fails a check is dropped.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.template = f"pkgcat_template_{uuid.uuid4().hex[:12]}"
        self._execute(f'CREATE DATABASE "{self.template}"')
        upgrade(_with_database(url, self.template))
        self._free: list[str] = []
        with psycopg.connect(_with_database(url, self.template)) as template:
            self._schema = _schema(template)
            self._tables = [
                name
                for (name,) in template.execute(
                    "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'"
                )
            ]
            self._rows: dict[str, bytes] = {}
            for table in self._tables:
                with template.cursor().copy(f"COPY {table} TO STDOUT") as copy:
                    if rows := b"".join(bytes(block) for block in copy):
                        self._rows[table] = rows
            self._sequences = template.execute(
                "SELECT format('%I.%I', schemaname, sequencename), "
                "coalesce(last_value, start_value), last_value IS NOT NULL FROM pg_sequences"
            ).fetchall()

    def _execute(self, statement: str, *arguments: object) -> list[tuple[object, ...]]:
        with psycopg.connect(_admin_conninfo(self.url), autocommit=True) as connection:
            cursor = connection.execute(statement, arguments or None)  # names made here
            return cursor.fetchall() if cursor.description else []

    @contextmanager
    def database(self, *, migrated: bool = True) -> Iterator[str]:
        """A migrated database as new (or an empty one, made for the test and dropped after)."""
        if not migrated:
            name = f"pkgcat_test_{uuid.uuid4().hex[:12]}"
            self._execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
            try:
                yield _with_database(self.url, name)
            finally:
                self._drop(name)
            return
        name = self._free.pop() if self._free else self._copy()
        url = _with_database(self.url, name)
        try:
            yield url
        finally:
            if self._renewed(name, url):
                self._free.append(name)
            else:
                self._drop(name)

    def _copy(self) -> str:
        name = f"pkgcat_test_{uuid.uuid4().hex[:12]}"
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return name

    def _drop(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _renewed(self, name: str, url: str) -> bool:
        """Put the database back as the template left it; False if it cannot be trusted to be."""
        if kill_marked(url):  # a server the test left running: it could write on later
            return False
        others = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        self._execute(f"SELECT pg_terminate_backend(pid) FROM ({others}) AS o", name)  # noqa: S608
        deadline = time.monotonic() + 5
        while self._execute(others, name):  # a terminated backend takes a moment to exit
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)  # polling the server's own list, not timing anything
        with psycopg.connect(url) as db:
            if _schema(db) != self._schema:
                return False
            try:  # no trigger fires and no foreign key orders the deletes; a superuser's right
                db.execute("SET LOCAL session_replication_role = replica")
            except psycopg.errors.InsufficientPrivilege:
                return False  # another role: each test gets a fresh copy, as it always may
            db.execute("; ".join(f"DELETE FROM {t}" for t in self._tables))  # noqa: S608 - ours
            for table, rows in self._rows.items():
                with db.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                    copy.write(rows)
            for sequence, value, called in self._sequences:
                db.execute("SELECT setval(%s::regclass, %s, %s)", (sequence, value, called))
        return True

    def close(self) -> None:
        for name in [*self._free, self.template]:
            self._drop(name)
        self._free.clear()


def _schema(connection: psycopg.Connection[Any]) -> object:
    row = connection.execute(SCHEMA).fetchone()
    connection.rollback()  # a read: no transaction left open on the template
    return row[0] if row else None
