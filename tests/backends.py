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
from sqlalchemy import text
from sqlalchemy.engine import make_url

from pkgcat.storage.engine import engine_for
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
        with psycopg.connect(conninfo(url), connect_timeout=2) as connection:
            connection.execute("SELECT 1")
        return True
    except (OSError, psycopg.Error, redis.RedisError):
        return False


def rows(url: str, query: str) -> list[tuple[object, ...]]:
    """``query``'s rows in the database at ``url``, read through a connection of its own."""
    engine = engine_for(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(query))]
    finally:
        engine.dispose()


def conninfo(url: str) -> str:
    """``url`` as psycopg takes it: without the driver name SQLAlchemy's URLs may carry."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


SCHEMA = r"""
WITH ours AS (
    SELECT oid FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
)
SELECT md5(string_agg(item, E'\n' ORDER BY item)) FROM (
    SELECT concat_ws(' ', 'ns', nspname, nspowner::regrole, nspacl)
    FROM pg_namespace WHERE oid IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'rel', oid::regclass, relkind, relpersistence, relrowsecurity,
        relforcerowsecurity, relowner::regrole, relacl, reloptions)
    FROM pg_class WHERE relnamespace IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'col', a.attrelid::regclass, a.attname,
        format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attcollation, a.attidentity,
        a.attgenerated, a.attacl, pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute AS a
    JOIN pg_class AS c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace IN (SELECT oid FROM ours) AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT concat_ws(' ', 'con', conrelid::regclass, conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE connamespace IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'idx', pg_get_indexdef(i.indexrelid))
    FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
    WHERE c.relnamespace IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'trg', pg_get_triggerdef(oid), tgenabled)
    FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL
    SELECT concat_ws(' ', 'fn', oid::regprocedure, md5(prosrc), provolatile, prosecdef,
        proowner::regrole, proacl, proconfig)
    FROM pg_proc WHERE pronamespace IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'type', oid::regtype, typtype, typowner::regrole, typacl)
    FROM pg_type WHERE typnamespace IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'enum', enumtypid::regtype, enumlabel, enumsortorder) FROM pg_enum
    UNION ALL
    SELECT concat_ws(' ', 'seq', seqrelid::regclass, seqtypid::regtype, seqstart, seqincrement,
        seqmax, seqmin, seqcache, seqcycle)
    FROM pg_sequence
    UNION ALL
    SELECT concat_ws(' ', 'policy', polrelid::regclass, polname, polcmd, polpermissive,
        pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid))
    FROM pg_policy
    UNION ALL
    SELECT concat_ws(' ', 'rule', pg_get_ruledef(oid)) FROM pg_rewrite WHERE rulename <> '_RETURN'
    UNION ALL
    SELECT concat_ws(' ', 'stats', stxname) FROM pg_statistic_ext
    UNION ALL
    SELECT concat_ws(' ', 'collation', collname) FROM pg_collation
    WHERE collnamespace IN (SELECT oid FROM ours)
    UNION ALL
    SELECT concat_ws(' ', 'publication', pubname) FROM pg_publication
    UNION ALL
    SELECT concat_ws(' ', 'event', evtname, evtenabled) FROM pg_event_trigger
    UNION ALL
    SELECT concat_ws(' ', 'extension', extname, extversion) FROM pg_extension
    UNION ALL
    SELECT concat_ws(' ', 'large objects', count(*)) FROM pg_largeobject_metadata
    UNION ALL
    SELECT concat_ws(' ', 'database', datallowconn, datconnlimit, datacl) FROM pg_database
    WHERE datname = current_database()
    UNION ALL
    SELECT concat_ws(' ', 'settings', setrole, setconfig) FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
    UNION ALL
    SELECT concat_ws(' ', 'prepared', gid) FROM pg_prepared_xacts
    WHERE database = current_database()
) AS items(item)
"""
"""One digest of what a database is beyond its rows: its schemas, relations (persistence,
row security, owners, grants, options), columns, constraints, indexes, triggers (and whether
they are enabled), functions (their bodies), types, sequences, policies, rules, extensions,
large objects, settings and prepared transactions. A test that changed any of them leaves a
database that is dropped, not handed on."""


class PostgresDatabases:
    """Databases made from one migrated template, each a fresh, isolated catalogue for its test.

    Copying the template (``CREATE DATABASE ... TEMPLATE``) costs the server 0.25-0.45 s of
    CPU here, and some 770 tests ask for one. So a database a test is done with is put back
    as the template left it and handed to the next test, in some 20 ms:

    - the processes that carry its URL are killed, its other connections ended;
    - its schema is compared with the template's (:data:`SCHEMA`);
    - every table is emptied, and the template's own rows (the migration's secrets and
      generation) are copied back, every sequence set back;
    - the tables that hold pages are vacuumed (autovacuum may be off), so that what a test
      wrote leaves no dead rows for the next one to scan;
    - it is renamed: a client of the last test that still holds its URL cannot reach it.

    A database that fails a check is dropped, and the next test gets a fresh copy.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.template = f"pkgcat_template_{uuid.uuid4().hex[:12]}"
        self._free: list[str] = []
        self._admin = psycopg.connect(conninfo(url), autocommit=True)
        self._execute(f'CREATE DATABASE "{self.template}"')
        try:
            upgrade(_with_database(url, self.template))
            with self._connect(self.template) as template:
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
        except BaseException:
            self.close()
            raise

    def _connect(self, name: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
        """A connection to database ``name`` (the URL may name a driver: psycopg takes none)."""
        return psycopg.connect(conninfo(_with_database(self.url, name)), autocommit=autocommit)

    def _execute(self, statement: str, *arguments: object) -> list[tuple[object, ...]]:
        """A statement on the server's own database, through the one connection kept for them."""
        if self._admin.closed:  # a test stopped the server, or cut its connections
            self._admin = psycopg.connect(conninfo(self.url), autocommit=True)
        cursor = self._admin.execute(statement, arguments or None)  # names made here
        return cursor.fetchall() if cursor.description else []

    @contextmanager
    def database(self, *, migrated: bool = True) -> Iterator[str]:
        """A migrated database as new (or an empty one, made for the test and dropped after)."""
        if not migrated:
            name = _name()
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
            try:
                renewed = self._renewed(name, url)
            except psycopg.Error:  # whatever the test left that the emptying trips on
                renewed = None
            if renewed:
                self._free.append(renewed)
            else:
                self._drop(name)

    def _copy(self) -> str:
        name = _name()
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return name

    def _drop(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _renewed(self, name: str, url: str) -> str | None:
        """Put the database back as the template left it, under a new name (None: it cannot
        be trusted to be)."""
        if kill_marked(url):  # a server the test left running: it could write on later
            return None
        others = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        self._execute(f"SELECT pg_terminate_backend(pid) FROM ({others}) AS o", name)  # noqa: S608
        deadline = time.monotonic() + 5
        while self._execute(others, name):  # a terminated backend takes a moment to exit
            if time.monotonic() > deadline:
                return None
            time.sleep(0.002)  # polling the server's own list, not timing anything
        with self._connect(name, autocommit=True) as db:
            if _schema(db) != self._schema:
                return None
            try:
                with db.transaction():
                    db.execute("SET LOCAL lock_timeout = '5s'")
                    # No trigger fires and no foreign key orders the deletes: a superuser's right.
                    db.execute("SET LOCAL session_replication_role = replica")
                    db.execute("; ".join(f"DELETE FROM {t}" for t in self._tables))  # noqa: S608
                    for table, rows in self._rows.items():
                        with db.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                            copy.write(rows)
                    for sequence, value, called in self._sequences:
                        db.execute("SELECT setval(%s::regclass, %s, %s)", (sequence, value, called))
            except psycopg.errors.InsufficientPrivilege:
                return None  # another role: each test gets a fresh copy, as it always may
            written = db.execute(
                "SELECT string_agg(oid::regclass::text, ', ') FROM pg_class "
                "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' "
                "AND pg_relation_size(oid) > 0"
            ).fetchone()
            if written and written[0]:
                db.execute(f"VACUUM {written[0]}")
        renamed = _name()
        self._execute(f'ALTER DATABASE "{name}" RENAME TO "{renamed}"')
        return renamed

    def close(self) -> None:
        for name in [*self._free, self.template]:
            self._drop(name)
        self._free.clear()
        self._admin.close()


def _name() -> str:
    return f"pkgcat_test_{uuid.uuid4().hex[:12]}"


def _schema(connection: psycopg.Connection[Any]) -> object:
    row = connection.execute(SCHEMA).fetchone()
    connection.rollback()  # a read: no transaction left open on the template
    return row[0] if row else None
