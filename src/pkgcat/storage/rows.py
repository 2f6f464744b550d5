"""The request path's queries and their rows, by column name, for every backend.

The SQL here is portable (SQLite and PostgreSQL read it the same); parameters
are written ``?`` and :func:`numbered` turns them into PostgreSQL's ``$1,
$2...``. Rows are read by name (``sqlite3.Row`` and asyncpg's ``Record`` both
answer ``row["name"]``), never by position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from heapq import merge
from itertools import islice

import orjson

from pkgcat.domain import Application, KeyRecord, Package, Purchase, Source
from pkgcat.storage.interfaces import BuyerKey, Row

FIND_KEY = """
SELECT k.id AS key_id, k.key_hash, k.last_used_at, k.scopes, k.kind, k.package,
       a.id AS application_id, a.source_id, a.name, a.shape, a.timezone
FROM secret_keys AS k JOIN applications AS a ON a.id = k.application_id
WHERE k.key_hash = ? AND k.revoked_at IS NULL
"""

PACKAGE_SELECT = """
SELECT p.id, p.package, p.name, p.version, p.architecture, p.author, p.section,
       p.description, p.long_description, p.pre_depends, p.depends, p.conflicts,
       p.replaces, p.size, p.md5sum, p.sha256, p.compatible, p.total_download,
       p.total_votes, p.total_value_votes, p.online, p.price, p.currency, p.icon,
       p.screenshots, p.url, p.released_at, p.commercial,
       s.id AS source_id, COALESCE(NULLIF(s.label, ''), s.name) AS source_name,
       s.origin AS source_origin, s.url AS source_url
FROM packages AS p JOIN sources AS s ON s.id = p.source_id
"""
"""A package's columns (as :func:`package` reads them), for a WHERE clause to follow."""
PACKAGE = PACKAGE_SELECT + "WHERE p.package = ?\n"

GENERATION = "SELECT value FROM catalogue_generation WHERE id = 1"

# A package's buyers are two newest-first streams, each an index range:
# the package's own purchases and its source's whole-source purchases.
BUYERS_COUNT = """
SELECT (SELECT count(*) FROM purchases WHERE package_id = ?)
     + (SELECT count(*) FROM purchases WHERE source_id = ? AND allowed_for = 'source') AS total
"""
BUYER_COLUMNS = """nickname, status, total, commission, currency, purchased_at, txn_id,
       profile_url, allowed_for, payment_platform, fee"""
OWN = "package_id = ?"
SOURCE_WIDE = "source_id = ? AND allowed_for = 'source'"
# Resume after a known buyer (keyset seek): older, or as old with a later txn_id.
AFTER = "AND purchased_at <= ? AND NOT (purchased_at = ? AND txn_id <= ?)"
NEWEST_FIRST = "ORDER BY purchased_at DESC, txn_id ASC"


def _stream(where: str, after: bool, columns: str = BUYER_COLUMNS) -> str:
    """One newest-first stream of buyers; assembled from the constants above only."""
    seek = AFTER if after else ""
    return f"SELECT {columns} FROM purchases WHERE {where} {seek} {NEWEST_FIRST} LIMIT ?"  # noqa: S608


STREAMS = {
    (where, after): _stream(where, after) for where in (OWN, SOURCE_WIDE) for after in (False, True)
}
"""(stream, resumes after a buyer) to its query."""
KEY_STREAMS = {where: _stream(where, False, "purchased_at, txn_id") for where in (OWN, SOURCE_WIDE)}
"""Only the sort keys of a stream, for the marks of deep pages."""
ALL = 2**62
"""A LIMIT that every backend reads as "no limit"."""

USAGE = """
SELECT day, count FROM usage_days
WHERE application_id = ? AND day >= ? AND day <= ?
"""

# Parameters: day, count, key, application; returns the day's new count (no
# row when the count was dropped). Counts only a live key of that
# application: a key revoked or deleted (with its application) while its request
# was under way is gone, and its count with it (the request is refused, see
# CatalogueService.admit), instead of failing the foreign key and every other count of the batch.
INCREMENT = """
INSERT INTO usage_days (application_id, day, count)
SELECT application_id, ?, ? FROM secret_keys
WHERE id = ? AND application_id = ? AND revoked_at IS NULL
ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + excluded.count
RETURNING count
"""

TOUCH_KEY = "UPDATE secret_keys SET last_used_at = ? WHERE id = ?"

USAGE_OPERATIONS = """
SELECT day, operation, count FROM usage_operations
WHERE application_id = ? AND day >= ? AND day <= ? AND count > 0
"""

# Parameters: application, day, operation, count: a batch's requests of one operation, written
# with the usage_days counts they split (only those that landed there).
INCREMENT_OPERATION = """
INSERT INTO usage_operations (application_id, day, operation, count) VALUES (?, ?, ?, ?)
ON CONFLICT (application_id, day, operation)
DO UPDATE SET count = usage_operations.count + excluded.count
"""


# Taking back counts of requests answered 503 after they landed (UsageCounter.retract).
# Parameters: count, application, day (and operation). An operation's row left at 0 stays,
# and is not read (USAGE_OPERATIONS).
RETRACT = "UPDATE usage_days SET count = count - ? WHERE application_id = ? AND day = ?"
RETRACT_OPERATION = """
UPDATE usage_operations SET count = count - ?
WHERE application_id = ? AND day = ? AND operation = ?
"""


def retractions(taken: dict[tuple[int, str, str], int]) -> dict[str, list[tuple[object, ...]]]:
    """Each retraction statement's parameters for ``taken``: (application, day, operation) to count."""
    by_day: dict[tuple[int, str], int] = {}
    for (a, d, _), n in taken.items():
        by_day[a, d] = by_day.get((a, d), 0) + n
    return {
        RETRACT: [(n, a, d) for (a, d), n in by_day.items()],
        RETRACT_OPERATION: [(n, a, d, o) for (a, d, o), n in taken.items()],
    }


# Parameters: package, day, count: a batch's whole downloads of one package on one UTC day.
INCREMENT_DOWNLOADS = """
INSERT INTO download_days (package, day, count) VALUES (?, ?, ?)
ON CONFLICT (package, day) DO UPDATE SET count = download_days.count + excluded.count
"""

DOWNLOADS = """
SELECT day, count FROM download_days WHERE package = ? AND day >= ? AND day <= ?
"""

# Parameters: package, count: the same batch's downloads of one package, every day together.
INCREMENT_DOWNLOAD_TOTAL = """
INSERT INTO download_totals (package, count) VALUES (?, ?)
ON CONFLICT (package) DO UPDATE SET count = download_totals.count + excluded.count
"""

DOWNLOADS_TOTAL = "SELECT count FROM download_totals WHERE package = ?"


def downloads_by_package(downloads: dict[tuple[str, str], int]) -> list[tuple[str, int]]:
    """A batch's downloads by (package, day) as each package's sum: ``download_totals``' rows."""
    totals: dict[str, int] = {}
    for (package, _), n in downloads.items():
        totals[package] = totals.get(package, 0) + n
    return sorted(totals.items())


def operations_by_day(found: Iterable[Row]) -> dict[date, dict[str, int]]:
    """``USAGE_OPERATIONS``' rows as each day's counts by operation."""
    days: dict[date, dict[str, int]] = {}
    for row in found:
        days.setdefault(date.fromisoformat(row["day"]), {})[row["operation"]] = int(row["count"])
    return days


_PARAMETER = re.compile(r"\?")


def numbered(sql: str) -> str:
    """``?`` parameters as PostgreSQL's ``$1, $2, ...`` (the queries here hold no literal '?')."""
    counter = iter(range(1, 1000))
    return _PARAMETER.sub(lambda _: f"${next(counter)}", sql)


def seek_parameters(after: BuyerKey | None) -> tuple[object, ...]:
    return () if after is None else (after[0], after[0], after[1])


def buyer_order(row: Row) -> tuple[int, str]:
    """Newest first, then txn_id: the merge key of two buyer streams."""
    return (-row["purchased_at"], row["txn_id"])


def merged_page(streams: Iterable[Iterable[Row]], skip: int, take: int) -> Iterator[Row]:
    """``take`` buyers after the first ``skip`` of the newest-first merge of ``streams``."""
    return islice(merge(*streams, key=buyer_order), skip, skip + take)


def marks(streams: Iterable[Iterable[Row]], every: int) -> list[BuyerKey]:
    """The sort key of every ``every``-th buyer of the merged streams."""
    keys = merge(*streams, key=buyer_order)
    return [
        (row["purchased_at"], row["txn_id"])
        for position, row in enumerate(keys, start=1)
        if position % every == 0
    ]


def utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


_FREE = Decimal("0.00")


def _price(stored: str | None, commercial: bool) -> Decimal | None:
    """The operator's price; without one, free unless the repository marks the package paid."""
    if stored is not None:
        return Decimal(stored)
    return None if commercial else _FREE


def key_record(row: Row) -> KeyRecord:
    application = Application(
        id=row["application_id"],
        source_id=row["source_id"],
        name=row["name"],
        shape=row["shape"],
        timezone=row["timezone"],
    )
    return KeyRecord(
        id=row["key_id"],
        key_hash=row["key_hash"],
        last_used_at=row["last_used_at"],
        application=application,
        scopes=frozenset(row["scopes"].split()),
        kind=row["kind"],
        package=row["package"],
    )


def package(row: Row) -> Package:
    commercial = bool(row["commercial"])
    return Package(
        id=row["id"],
        package=row["package"],
        name=row["name"],
        version=row["version"],
        architecture=row["architecture"],
        author=row["author"],
        section=row["section"],
        description=row["description"],
        long_description=row["long_description"],
        pre_depends=row["pre_depends"],
        depends=row["depends"],
        conflicts=row["conflicts"],
        replaces=row["replaces"],
        size=row["size"],
        md5sum=row["md5sum"],
        sha256=row["sha256"],
        compatible=tuple(orjson.loads(row["compatible"])),
        total_download=row["total_download"],
        total_votes=row["total_votes"],
        total_value_votes=row["total_value_votes"],
        online=bool(row["online"]),
        price=_price(row["price"], commercial),
        currency=row["currency"],
        icon=row["icon"],
        screenshots=tuple(orjson.loads(row["screenshots"])),
        url=row["url"],
        released_at=utc(row["released_at"]),
        source=Source(
            id=row["source_id"],
            name=row["source_name"],
            origin=row["source_origin"],
            url=row["source_url"],
        ),
        commercial=commercial,
    )


def purchase(row: Row) -> Purchase:
    return Purchase(
        nickname=row["nickname"],
        status=row["status"],
        total=Decimal(row["total"]),
        commission=Decimal(row["commission"]),
        currency=row["currency"],
        purchased_at=utc(row["purchased_at"]),
        txn_id=row["txn_id"],
        profile_url=row["profile_url"],
        allowed_for=row["allowed_for"],
        payment_platform=row["payment_platform"],
        fee=Decimal(row["fee"]) if row["fee"] else Decimal(0),
    )
