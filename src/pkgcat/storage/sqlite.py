"""The catalogue store and usage counter on SQLite, called directly through ``sqlite3``.

Each query here takes tens of microseconds, so they run on the event loop's
thread: a thread hop per query (aiosqlite) would cost more than the query.
The SQL is portable (``ON CONFLICT ... DO UPDATE`` reads the same in
PostgreSQL); only the connection and its pragmas are SQLite's own.

Durability: the database runs in WAL mode with ``synchronous=NORMAL``. A
committed count survives the server process crashing or being killed; a power
loss can lose the last transactions (SQLite's documented WAL trade-off).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy.engine import make_url

from pkgcat.domain import Application, KeyRecord, Package, Purchase, Source

_FIND_KEY = """
SELECT k.id, k.key_hash, k.last_used_at, a.id, a.source_id, a.name, a.shape, a.timezone
FROM secret_keys AS k JOIN applications AS a ON a.id = k.application_id
WHERE k.key_hash = ? AND k.revoked_at IS NULL
"""

_PACKAGE = """
SELECT p.id, p.package, p.name, p.version, p.architecture, p.author, p.section,
       p.description, p.long_description, p.pre_depends, p.depends, p.conflicts,
       p.replaces, p.size, p.md5sum, p.sha256, p.compatible, p.total_download,
       p.total_votes, p.total_value_votes, p.online, p.price, p.currency, p.icon,
       p.screenshots, p.url, p.released_at,
       s.id, s.name, s.origin, s.url
FROM packages AS p JOIN sources AS s ON s.id = p.source_id
WHERE p.package = ?
"""

# A package's buyers: its own purchases and those of its whole source.
_BUYERS_COUNT = """
SELECT count(*) FROM purchases
WHERE package_id = ? OR (source_id = ? AND allowed_for = 'source')
"""
_BUYERS_PAGE = """
SELECT nickname, status, total, commission, currency, purchased_at, txn_id,
       profile_url, allowed_for, payment_platform
FROM purchases
WHERE package_id = ? OR (source_id = ? AND allowed_for = 'source')
ORDER BY purchased_at DESC, txn_id ASC
LIMIT ? OFFSET ?
"""

_USAGE = """
SELECT day, count FROM usage_days
WHERE application_id = ? AND day >= ? AND day <= ?
"""

_INCREMENT = """
INSERT INTO usage_days (application_id, day, count) VALUES (?, ?, 1)
ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + 1
"""

_TOUCH_KEY = "UPDATE secret_keys SET last_used_at = ? WHERE id = ?"


def sqlite_path(database_url: str) -> str:
    """The file behind a ``sqlite:///PATH`` URL (an in-memory database cannot be shared)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        raise ValueError(f"not a SQLite URL: {url.render_as_string(hide_password=True)}")
    if not url.database or url.database == ":memory:":
        raise ValueError("the SQLite database must be a file: sqlite:///path/to/pkgcat.db")
    return url.database


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode with the pragmas the request path relies on."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA busy_timeout=5000")
    connection.execute("PRAGMA foreign_keys=ON")
    return connection


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _package(row: tuple[Any, ...]) -> Package:
    return Package(
        id=row[0],
        package=row[1],
        name=row[2],
        version=row[3],
        architecture=row[4],
        author=row[5],
        section=row[6],
        description=row[7],
        long_description=row[8],
        pre_depends=row[9],
        depends=row[10],
        conflicts=row[11],
        replaces=row[12],
        size=row[13],
        md5sum=row[14],
        sha256=row[15],
        compatible=tuple(orjson.loads(row[16])),
        total_download=row[17],
        total_votes=row[18],
        total_value_votes=row[19],
        online=bool(row[20]),
        price=Decimal(row[21]),
        currency=row[22],
        icon=row[23],
        screenshots=tuple(orjson.loads(row[24])),
        url=row[25],
        released_at=_utc(row[26]),
        source=Source(id=row[27], name=row[28], origin=row[29], url=row[30]),
    )


def _purchase(row: tuple[Any, ...]) -> Purchase:
    return Purchase(
        nickname=row[0],
        status=row[1],
        total=Decimal(row[2]),
        commission=Decimal(row[3]),
        currency=row[4],
        purchased_at=_utc(row[5]),
        txn_id=row[6],
        profile_url=row[7],
        allowed_for=row[8],
        payment_platform=row[9],
    )


class SqliteCatalogue:
    """:class:`~pkgcat.storage.interfaces.CatalogueStore` and ``UsageCounter`` on one SQLite file.

    The connection opens on first use, so an instance can be built before a
    server forks its workers.
    """

    def __init__(self, database_url: str) -> None:
        self._path = sqlite_path(database_url)
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = connect(self._path)
        return self._connection

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        row = self._db.execute(_FIND_KEY, (key_hash,)).fetchone()
        if row is None:
            return None
        application = Application(
            id=row[3], source_id=row[4], name=row[5], shape=row[6], timezone=row[7]
        )
        return KeyRecord(id=row[0], key_hash=row[1], last_used_at=row[2], application=application)

    async def touch_key(self, key_id: int, when: int) -> None:
        self._db.execute(_TOUCH_KEY, (when, key_id))

    async def package(self, package_id: str) -> Package | None:
        row = self._db.execute(_PACKAGE, (package_id,)).fetchone()
        return None if row is None else _package(row)

    async def buyers(
        self, package_row_id: int, source_id: int, limit: int, offset: int
    ) -> tuple[int, list[Purchase]]:
        db = self._db
        # One read transaction, so the total and the slice agree with each other.
        db.execute("BEGIN")
        try:
            (total,) = db.execute(_BUYERS_COUNT, (package_row_id, source_id)).fetchone()
            rows = db.execute(_BUYERS_PAGE, (package_row_id, source_id, limit, offset)).fetchall()
        finally:
            db.execute("COMMIT")
        return total, [_purchase(row) for row in rows]

    async def usage(self, application_id: int, first: date, last: date) -> dict[date, int]:
        rows = self._db.execute(
            _USAGE, (application_id, first.isoformat(), last.isoformat())
        ).fetchall()
        return {date.fromisoformat(day): count for day, count in rows}

    async def increment(self, application_id: int, day: date) -> None:
        self._db.execute(_INCREMENT, (application_id, day.isoformat()))

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
