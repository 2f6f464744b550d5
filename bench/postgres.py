"""The benchmark catalogue on PostgreSQL: the generated SQLite file copied with COPY.

The load benchmark generates its catalogue once, as a SQLite file
(``catalogue.py``). For ``--backend postgres`` that file is copied into a fresh
PostgreSQL database created by the project's migrations: every table, row for
row, through ``COPY ... FROM STDIN`` (psycopg 3), then the id sequences are
moved past the copied ids. The catalogue generation is copied too, so the
servers start on the same numbers either way.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy import Boolean, Integer
from sqlalchemy.engine import make_url


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and the addresses of the PostgreSQL and Redis it may use."""
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default=None,
        help="postgres: the catalogue copied into PostgreSQL, the rate limit in Redis "
        "(default: sqlite; with run.py --defaults, both)",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(
            "PKGCAT_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="a PostgreSQL server to create the database on [PKGCAT_BENCH_POSTGRES_URL]",
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("PKGCAT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="the Redis of the rate limit with --backend postgres [PKGCAT_BENCH_REDIS_URL]",
    )


def _conninfo(url: str, database: str | None = None) -> str:
    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def _copy(source: Path, target_url: str) -> None:
    from pkgcat.storage import schema

    with (
        sqlite3.connect(source) as lite,
        psycopg.connect(_conninfo(target_url)) as pg,
        pg.cursor() as cursor,
    ):
        # Triggers off for the copy: each COPY would bump the generation, which is copied too.
        cursor.execute("SET session_replication_role = replica")
        # What the migrations wrote (the generation, the cursors' secret) is in the copy too.
        for table in reversed(schema.metadata.sorted_tables):
            cursor.execute(f"DELETE FROM {table.name}")  # type: ignore[arg-type]  # noqa: S608 - our schema
        for table in schema.metadata.sorted_tables:
            names = [column.name for column in table.columns]
            flags = [isinstance(column.type, Boolean) for column in table.columns]
            listed = ", ".join(names)
            rows = lite.execute(f"SELECT {listed} FROM {table.name}")  # noqa: S608 - our schema
            with cursor.copy(f"COPY {table.name} ({listed}) FROM STDIN") as copy:  # type: ignore[arg-type]
                for row in rows:
                    copy.write_row(
                        [
                            bool(v) if flag and v is not None else v
                            for v, flag in zip(row, flags, strict=True)
                        ]
                    )
            # A serial id's sequence continues after the copied rows (a text id has none).
            serial = "id" in names and isinstance(table.columns["id"].type, Integer)
            if serial and table.name != "catalogue_generation":
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "  # type: ignore[arg-type]  # noqa: S608 - our schema
                    f"(SELECT coalesce(max(id), 0) + 1 FROM {table.name}), false)"
                )
        cursor.execute("SET session_replication_role = origin")
        cursor.execute("ANALYZE")
        pg.commit()


@contextmanager
def fresh_database(server_url: str, prefix: str = "pkgcat_bench") -> Iterator[str]:
    """A new, empty database on the PostgreSQL server of ``server_url``; dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = _conninfo(server_url)
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


@contextmanager
def catalogue_database(source: Path, server_url: str) -> Iterator[str]:
    """A new PostgreSQL database holding a copy of ``source``; dropped afterwards."""
    from pkgcat.storage.migrate import upgrade

    with fresh_database(server_url) as url:
        started = time.perf_counter()
        upgrade(url)
        _copy(source, url)
        print(
            f"copied {source.name} into PostgreSQL in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        yield url


STATS_SETTLE_S = 11
"""PostgreSQL reports a session's transaction counts within 10 s of it going idle."""


def round_trips(database_url: str, redis_url: str) -> tuple[int, int]:
    """Transactions committed or rolled back in the database so far, and Redis's reads.

    Between two calls around a load of N requests, each difference over N is what
    one request costs: one transaction is one round trip for the server's counts
    (one statement each), and Redis counts one read per pipeline it receives.
    """
    import redis

    name = make_url(database_url).database
    with psycopg.connect(_conninfo(database_url), autocommit=True) as db:
        db.execute("SELECT pg_stat_clear_snapshot()")
        row = db.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            (name,),
        ).fetchone()
    assert row is not None
    client = redis.Redis.from_url(redis_url)
    try:
        reads = int(client.info("stats")["total_reads_processed"])
    finally:
        client.close()
    return int(row[0]), reads
