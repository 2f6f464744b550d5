"""The seller operations' queries (source packages, ownership checks, sales), for every backend.

As in :mod:`pkgcat.storage.rows`: portable SQL with ``?`` parameters, rows
read by column name. Each function returns the statements with their
parameters, so the SQLite and PostgreSQL readers run the very same reads;
every query text comes from the constants here, never from input.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal

from pkgcat.domain import Ownership, Sale, SalesTotal
from pkgcat.storage import rows
from pkgcat.storage.interfaces import BuyerKey

Statement = tuple[str, tuple[object, ...]]
Collation = Literal["", ' COLLATE "C"']
"""How identifiers compare: SQLite compares bytes already; PostgreSQL is told to."""

_FREE = "CASE WHEN p.price IS NULL THEN NOT p.commercial ELSE CAST(p.price AS NUMERIC) = 0 END"
"""A free package as :attr:`pkgcat.domain.Package.is_free` says: a known price of zero,
or no price and not marked commercial by its repository."""


@lru_cache(maxsize=64)
def _packages_sql(after: bool, paid: bool | None, online: bool | None, collate: Collation) -> str:
    where = ["p.source_id = ?"]
    if after:
        where.append(f"p.package{collate} > ?")
    if paid is not None:
        where.append(f"NOT ({_FREE})" if paid else f"({_FREE})")
    if online is not None:
        where.append("p.online" if online else "NOT p.online")
    return f"{rows.PACKAGE_SELECT}WHERE {' AND '.join(where)} ORDER BY p.package{collate} LIMIT ?"


def source_packages(
    source_id: int,
    limit: int,
    after: str | None,
    paid: bool | None,
    online: bool | None,
    collate: Collation = "",
) -> Statement:
    """A source's packages by identifier, after ``after``; read with :func:`rows.package`."""
    sql = _packages_sql(after is not None, paid, online, collate)
    parameters: tuple[object, ...] = (source_id,) if after is None else (source_id, after)
    return sql, (*parameters, limit)


BUYER_KEYS = ("nickname", "account", "udid")
"""What a buyer of an ownership check is known by."""
_OWNED = """
SELECT purchased_at, txn_id, allowed_for FROM purchases
WHERE source_id = ? AND status = 'Completed' AND (package_id = ? OR allowed_for = 'source')
  AND {who}
ORDER BY purchased_at ASC, txn_id ASC LIMIT 1
"""
_WHO = {
    "nickname": "nickname = ?",
    "account": "account = ?",
    "udid": "nickname IN (SELECT nickname FROM buyer_devices WHERE source_id = ? AND udid = ?)",
    "udid+model": (
        "nickname IN (SELECT nickname FROM buyer_devices"
        " WHERE source_id = ? AND udid = ? AND device_model = ?)"
    ),
}
OWNED = {who: _OWNED.format(who=clause) for who, clause in _WHO.items()}


def ownership(
    source_id: int, package_row_id: int, by: str, value: str, model: str | None
) -> Statement:
    """The earliest completed purchase by which a buyer owns a package (one indexed read)."""
    if by != "udid":
        return OWNED[by], (
            source_id,
            package_row_id,
            value,
        )  # KeyError unless BUYER_KEYS
    if model is None:
        return OWNED["udid"], (source_id, package_row_id, source_id, value)
    return OWNED["udid+model"], (source_id, package_row_id, source_id, value, model)


def owned(row: rows.Row) -> Ownership:
    return Ownership(rows.utc(row["purchased_at"]), row["txn_id"], row["allowed_for"])


_PACKAGE_OF = "(SELECT package FROM packages WHERE packages.id = purchases.package_id)"
_SALE_COLUMNS = f"{rows.BUYER_COLUMNS}, {_PACKAGE_OF} AS package"
_PACKAGE_SCOPE = "package_id = ?"
_SCOPE = "source_id = ?"


@lru_cache(maxsize=32)
def _sales_sql(where: str, status: bool, after: bool) -> str:
    clauses = [where, "purchased_at >= ? AND purchased_at < ?"]
    if status:
        clauses.append("status = ?")
    seek = rows.AFTER if after else ""
    return (
        f"SELECT {_SALE_COLUMNS} FROM purchases WHERE {' AND '.join(clauses)} {seek} "  # noqa: S608 - constants only
        f"{rows.NEWEST_FIRST} LIMIT ?"
    )


def sales(
    source_id: int,
    first: int,
    end: int,
    limit: int,
    after: BuyerKey | None,
    package_row_id: int | None,
    status: str | None,
) -> Statement:
    """Sales in [first, end) newest first, after ``after``: one index range.

    The whole ledger reads migration 0005's (source_id, purchased_at DESC, txn_id)
    index; a package's own purchases read the buyers' package index.
    """
    tail = (first, end, *(() if status is None else (status,)), *rows.seek_parameters(after))
    where, ident = (
        (_SCOPE, source_id) if package_row_id is None else (_PACKAGE_SCOPE, package_row_id)
    )
    return _sales_sql(where, status is not None, after is not None), (ident, *tail, limit)


def sale(row: rows.Row) -> Sale:
    return Sale(rows.purchase(row), row["package"])


_TOTALS = """
SELECT currency, status, total, commission, count(*) AS n FROM purchases
WHERE {where} AND purchased_at >= ? AND purchased_at < ?{status}
GROUP BY currency, status, total, commission
"""
TOTALS = {
    (package, status): _TOTALS.format(
        where="package_id = ?" if package else "source_id = ?",
        status=" AND status = ?" if status else "",
    )
    for package in (False, True)
    for status in (False, True)
}


def sales_totals(
    source_id: int, first: int, end: int, package_row_id: int | None, status: str | None
) -> Statement:
    """Amounts grouped by currency, status and value: few groups, summed exactly in Python."""
    sql = TOTALS[(package_row_id is not None, status is not None)]
    ident = source_id if package_row_id is None else package_row_id
    return sql, (ident, first, end, *(() if status is None else (status,)))


SECRET = "SELECT value FROM api_secrets WHERE name = ?"  # noqa: S105 - a query, not a secret

REFUNDS = frozenset({"Refunded", "Chargeback"})


@dataclass
class _Sums:
    sales: int = 0
    gross: Decimal = Decimal(0)
    commission: Decimal = Decimal(0)
    refunds: int = 0
    refunded: Decimal = Decimal(0)


def totals(groups: Iterable[rows.Row]) -> list[SalesTotal]:
    """One total per currency, sorted by currency, from the grouped amounts."""
    sums: dict[str, _Sums] = {}
    for row in groups:
        entry = sums.setdefault(row["currency"], _Sums())
        count, total = int(row["n"]), Decimal(row["total"])
        if row["status"] == "Completed":
            entry.sales += count
            entry.gross += total * count
            entry.commission += Decimal(row["commission"]) * count
        elif row["status"] in REFUNDS:
            entry.refunds += count
            entry.refunded += total * count
    return [
        SalesTotal(c, e.sales, e.gross, e.commission, e.refunds, e.refunded)
        for c, e in sorted(sums.items())
    ]
