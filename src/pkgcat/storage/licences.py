"""Whether a claimant holds a package, and why: the one question every licence check asks.

The seller's check (``package/check``, by buyer or device), the device checks of public
keys and DRM tokens (:mod:`pkgcat.licences`), the store (package info, purchases, download
URLs, the packages a buyer holds: :mod:`pkgcat.storage.store`) and Cydia's gate all read
:func:`statement` (or, for the store's list, :data:`HELD_BY_ACCOUNT`), so a package is held
the same way wherever it is asked:

- through a **purchase**: a completed one (refunds and chargebacks never count) of the
  package or of its whole source, by the buyer the claimant names, or, for a device, by any
  buyer who registered that device with the package's source (a registration that records
  no model matches any model);
- by a **device on the package's whitelist** (``package_whitelist``, migration 0019), when
  the claimant names a device;
- gifts, later: one more branch of :data:`BRANCHES` and one more field of
  :class:`~pkgcat.domain.Licence`, and every caller above holds them at once.

One statement whatever the answer: a ``UNION ALL`` of one branch per way, each a lookup in
an index, all of them run whatever the others find (no branch is skipped because another
found a row), and each answers exactly one row (its nulls when it finds nothing), so the
same rows come back whether the device bought the package, is on its whitelist or is
unknown: a check costs the same, and its time tells no more than its answer
(``make bench-licence``).

The SQL is portable with ``?`` parameters, as the request path's (:mod:`pkgcat.storage.rows`);
the async readers run it through an :class:`~pkgcat.storage.interfaces.Executor`, the store's
threads through SQLAlchemy (:func:`held`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, RowMapping

from pkgcat.domain import NOT_OWNED, Claimant, Licence, Ownership, WhitelistEntry
from pkgcat.storage import rows
from pkgcat.storage.interfaces import Row

Statement = tuple[str, tuple[object, ...]]

_OWNING = "status = 'Completed' AND (package_id = ? OR allowed_for = 'source')"
"""A purchase that owns the package (its row id the parameter): completed, of it or of its
whole source."""

_PURCHASE = f"""
SELECT 'purchase' AS via, bought.purchased_at AS since, bought.txn_id, bought.allowed_for
FROM (SELECT 1 AS one) AS always LEFT JOIN (
  SELECT purchased_at, txn_id, allowed_for FROM purchases
  WHERE source_id = ? AND {_OWNING} AND {{who}}
  ORDER BY +purchased_at ASC, txn_id ASC LIMIT 1
) AS bought ON 1 = 1"""  # noqa: S608 - assembled from this module's constants only
"""The earliest owning purchase of the claimant's buyer(s) (parameters: source, package), or a
row of nulls: every branch answers one row whatever it finds.

``+purchased_at``: no index can give that order, so SQLite's planner, which has no
statistics to go by, finds the buyer's few purchases through the (source_id, nickname) or
(source_id, account) index and sorts them, instead of walking every purchase of the source
in date order through the sales ledger's index until one is the buyer's (10 ms a check at
10,000 purchases, measured, where the lookup takes tens of microseconds). PostgreSQL plans
it from its statistics either way."""

_BUYERS = {
    "nickname": "nickname = ?",
    "account": "account = ?",
    "device": "nickname IN (SELECT nickname FROM buyer_devices WHERE source_id = ? AND udid = ?)",
    "device+model": (
        "nickname IN (SELECT nickname FROM buyer_devices WHERE source_id = ? AND udid = ?"
        " AND (device_model IS NULL OR device_model = ?))"
    ),
}
"""Whose purchases count, by what the claimant names."""

_WHITELIST = """
SELECT 'whitelist', listed.added_at, NULL, NULL
FROM (SELECT 1 AS one) AS always LEFT JOIN package_whitelist AS listed
  ON listed.package_id = ? AND listed.udid = ?"""
"""The device on the package's whitelist (parameters: package, udid), or a row of nulls."""

BRANCHES = ("purchase", "whitelist")
"""Every way of holding a package, as the statement's ``via`` names them (gifts: later)."""

_STATEMENTS = {
    (buyers, device): _PURCHASE.format(who=clause) + ("\nUNION ALL" + _WHITELIST if device else "")
    for buyers, clause in _BUYERS.items()
    for device in (False, True)
}


def _buyers(claimant: Claimant, source_id: int) -> tuple[str, tuple[object, ...]]:
    if claimant.nickname is not None:
        return "nickname", (claimant.nickname,)
    if claimant.account is not None:
        return "account", (claimant.account,)
    if claimant.udid is None:
        raise ValueError("a claimant names a buyer or a device")
    if claimant.model is None:
        return "device", (source_id, claimant.udid)
    return "device+model", (source_id, claimant.udid, claimant.model)


def statement(source_id: int, package_row_id: int, claimant: Claimant) -> Statement:
    """The one statement that says whether ``claimant`` holds the package, with every reason.

    Its rows (read by :func:`licence`): one per way of holding the package, nulls where
    that way holds nothing.
    """
    buyers, who = _buyers(claimant, source_id)
    parameters: tuple[object, ...] = (source_id, package_row_id, *who)
    if claimant.udid is not None:
        parameters += (package_row_id, claimant.udid)
    return _STATEMENTS[(buyers, claimant.udid is not None)], parameters


_NOTHING = (None, None, None)


def licence(found: Iterable[Row]) -> Licence:
    """The :func:`statement`'s rows as a :class:`~pkgcat.domain.Licence`.

    Every row is read the same way whatever it holds, a purchase and a date made of nulls
    too, then kept or not: reading a bought device's answer costs what an unknown one's does
    (``make bench-licence``)."""
    held = {row["via"]: (row["since"], row["txn_id"], row["allowed_for"]) for row in found}
    (bought, txn_id, allowed_for), listed = held["purchase"], held.get("whitelist", _NOTHING)[0]
    purchase = Ownership(rows.utc(bought or 0), txn_id or "", allowed_for or "package")
    whitelisted = rows.utc(listed or 0)
    if bought is None and listed is None:
        return NOT_OWNED
    return Licence(None if bought is None else purchase, None if listed is None else whitelisted)


HELD_BY_ACCOUNT = f"""
SELECT p.package FROM packages AS p
WHERE EXISTS (
  SELECT 1 FROM purchases
  WHERE source_id = p.source_id AND {_OWNING.replace("?", "p.id")} AND account = ?
) OR EXISTS (SELECT 1 FROM package_whitelist AS w WHERE w.package_id = p.id AND w.udid = ?)
ORDER BY p.package
"""  # noqa: S608 - assembled from this module's constants only
"""Every package a store buyer on a device holds (parameters: account, udid): the store's
``user_info``. The same rule as :func:`statement` for each package, written as one read."""

_PARAMETER = re.compile(r"\?")


def _named(sql: str, parameters: tuple[object, ...]) -> tuple[Any, dict[str, object]]:
    """A ``?`` statement as SQLAlchemy runs it: named parameters ``p0, p1...``."""
    counter = iter(range(len(parameters)))
    named = _PARAMETER.sub(lambda _: f":p{next(counter)}", sql)
    return text(named), {f"p{n}": value for n, value in enumerate(parameters)}


def run(db: Connection, sql: str, parameters: tuple[object, ...]) -> list[RowMapping]:
    """A ``?`` statement's rows, by column name, on a SQLAlchemy connection."""
    query, values = _named(sql, parameters)
    return list(db.execute(query, values).mappings())


def held(db: Connection, source_id: int, package_row_id: int, claimant: Claimant) -> Licence:
    """:func:`statement` on a SQLAlchemy connection (the store's and the gate's threads)."""
    return licence(run(db, *statement(source_id, package_row_id, claimant)))


# The whitelist's pages ----------------------------------------------------------------------

WHITELIST_COUNT = "SELECT count(*) AS total FROM package_whitelist WHERE package_id = ?"
_WHITELIST_PAGE = "SELECT udid, description, added_at FROM package_whitelist WHERE package_id = ?"


def whitelist_page(package_row_id: int, limit: int, offset: int, collate: str = "") -> Statement:
    """One page of a package's whitelist by udid (byte order on every database)."""
    order = f" ORDER BY udid{collate} LIMIT ? OFFSET ?"  # the executor's collation, a constant
    return _WHITELIST_PAGE + order, (package_row_id, limit, offset)


def entry(row: Row) -> WhitelistEntry:
    return WhitelistEntry(row["udid"], row["description"], rows.utc(row["added_at"]))
