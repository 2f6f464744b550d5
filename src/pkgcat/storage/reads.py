"""The catalogue's reads, each declared once for every database: :class:`Catalogue`.

A read is its statement (portable SQL with ``?`` parameters, from the constants here
and in :mod:`pkgcat.storage.rows`, never from input), the rows it reads by column name,
and the method that runs it on an :class:`~pkgcat.storage.interfaces.Executor`: SQLite
and PostgreSQL differ only in the executor (:mod:`pkgcat.storage.sqlite.catalogue`,
:mod:`pkgcat.storage.postgres.catalogue`). :class:`pkgcat.storage.cache.CachedCatalogue`
is a :class:`Catalogue` that keeps what the catalogue generation covers.

Adding a read: its statement and row reader here, and its method on :class:`Catalogue`;
rows that no record of :mod:`pkgcat.domain` fits are read into a ``NamedTuple`` declared
beside their reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import lru_cache

from pkgcat.domain import Claimant, KeyRecord, Licence, Package, Sale, SalesTotal, WhitelistEntry
from pkgcat.storage import licences, rows
from pkgcat.storage.interfaces import BuyerKey, BuyersHint, BuyersSlice, Executor, Row

Statement = tuple[str, tuple[object, ...]]

_FREE = "CASE WHEN p.price IS NULL THEN NOT p.commercial ELSE CAST(p.price AS NUMERIC) = 0 END"
"""A free package as :attr:`pkgcat.domain.Package.is_free` says: a known price of zero,
or no price and not marked commercial by its repository."""


@lru_cache(maxsize=64)
def _packages_sql(after: bool, paid: bool | None, online: bool | None, collate: str) -> str:
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
    collate: str = "",
) -> Statement:
    """A source's packages by identifier, after ``after``; read with :func:`rows.package`."""
    sql = _packages_sql(after is not None, paid, online, collate)
    parameters: tuple[object, ...] = (source_id,) if after is None else (source_id, after)
    return sql, (*parameters, limit)


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


def sale(row: Row) -> Sale:
    return Sale(rows.purchase(row), row["package"])


_TOTALS = """
SELECT currency, status, total, commission, fee, count(*) AS n FROM purchases
WHERE {where} AND purchased_at >= ? AND purchased_at < ?{status}
GROUP BY currency, status, total, commission, fee
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
    fee: Decimal = Decimal(0)
    refunds: int = 0
    refunded: Decimal = Decimal(0)


def totals(groups: Iterable[Row]) -> list[SalesTotal]:
    """One total per currency, sorted by currency, from the grouped amounts."""
    sums: dict[str, _Sums] = {}
    for row in groups:
        entry = sums.setdefault(row["currency"], _Sums())
        count, total = int(row["n"]), Decimal(row["total"])
        if row["status"] == "Completed":
            entry.sales += count
            entry.gross += total * count
            entry.commission += Decimal(row["commission"]) * count
            entry.fee += Decimal(row["fee"] or 0) * count
        elif row["status"] in REFUNDS:
            entry.refunds += count
            entry.refunded += total * count
    return [
        SalesTotal(c, e.sales, e.gross, e.commission, e.refunds, e.refunded, e.fee)
        for c, e in sorted(sums.items())
    ]


async def _generation(run: Executor) -> int:
    """The catalogue generation in the database (in ``run``'s snapshot, if it is one)."""
    row = await run.row(rows.GENERATION)
    return -1 if row is None else int(row["value"])  # no counter row: trust no cache


_BUYER_STREAMS = (rows.OWN, rows.SOURCE_WIDE)


class Catalogue:
    """Every read of the catalogue the operations make, on one database's executor."""

    def __init__(self, executor: Executor) -> None:
        self._run = executor

    async def generation(self) -> int:
        """The catalogue generation, read first by every request.

        What depends only on the catalogue may be cached for as long as it stays the
        same: the cache layer answers from its change feed instead, without a read."""
        return await _generation(self._run)

    async def latest_generation(self) -> int:
        """The generation as the database holds it now."""
        return await _generation(self._run)

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        """The live (not revoked) key with this hash, with its application."""
        row = await self._run.row(rows.FIND_KEY, (key_hash,))
        return None if row is None else rows.key_record(row)

    async def package(self, package_id: str, *, fresh: bool = False) -> Package | None:  # noqa: ARG002 - always read
        """The package with this identifier, online or not.

        ``fresh``: as the database holds it now, never from a cache (after a write of this
        worker, before the change has come back through the change feed)."""
        row = await self._run.row(rows.PACKAGE, (package_id,))
        return None if row is None else rows.package(row)

    async def buyers(
        self,
        package_row_id: int,
        source_id: int,
        limit: int,
        offset: int,
        hint: BuyersHint | None = None,
    ) -> BuyersSlice:
        """The total number of buyers of a package and one slice of them, from one snapshot.

        Buyers are the package's own purchases and the purchases of its whole
        source, newest first, ties broken by ``txn_id``. A ``hint`` whose
        generation is still the snapshot's spares the count, and lets the
        reader start at a known buyer instead of skipping ``offset`` of them.
        """
        async with self._run.snapshot() as run:
            # The generation, the total and the page all come from the same snapshot,
            # so the total and the page agree.
            generation = await _generation(run)
            if hint is not None and hint.generation != generation:
                hint = None  # read in another snapshot: nothing of it can be trusted
            total = hint.total if hint is not None else None
            if total is None:
                total = await _buyers_count(run, package_row_id, source_id)
            if offset >= total:
                return BuyersSlice(generation, total, [])
            start, after = 0, None
            if hint is not None and hint.after is not None and hint.position <= offset:
                start, after = hint.position, hint.after
            streams = await _streams(run, package_row_id, source_id, after, offset - start + limit)
        page = rows.merged_page(streams, offset - start, limit)
        return BuyersSlice(generation, total, [rows.purchase(row) for row in page])

    async def buyer_marks(
        self, package_row_id: int, source_id: int, every: int
    ) -> tuple[int, list[BuyerKey]]:
        """The generation read and the key of every ``every``-th buyer (1-based), in one snapshot."""
        async with self._run.snapshot() as run:
            generation = await _generation(run)
            streams = [
                await run.rows(rows.KEY_STREAMS[where], (ident, rows.ALL))
                for where, ident in zip(_BUYER_STREAMS, (package_row_id, source_id), strict=True)
            ]
        return generation, rows.marks(streams, every)

    async def buyers_after(
        self, package_row_id: int, source_id: int, limit: int, after: BuyerKey | None
    ) -> BuyersSlice:
        """The total number of buyers and the ``limit`` buyers right after ``after`` (keyset).

        ``None`` starts at the newest. One snapshot, as :meth:`buyers`.
        """
        async with self._run.snapshot() as run:
            generation = await _generation(run)
            total = await _buyers_count(run, package_row_id, source_id)
            streams = await _streams(run, package_row_id, source_id, after, limit)
        page = rows.merged_page(streams, 0, limit)
        return BuyersSlice(generation, total, [rows.purchase(row) for row in page])

    async def source_packages(
        self,
        source_id: int,
        limit: int,
        after: str | None,
        *,
        paid: bool | None = None,
        online: bool | None = None,
    ) -> list[Package]:
        """A source's packages (online or not) by identifier, the first ``limit`` after ``after``.

        ``paid`` and ``online`` keep only the packages that are (``True``) or are not so.
        Identifiers compare byte by byte on every database, whatever its collation.
        """
        sql, parameters = source_packages(source_id, limit, after, paid, online, self._run.collate)
        return [rows.package(row) for row in await self._run.rows(sql, parameters)]

    async def licence(self, source_id: int, package_row_id: int, claimant: Claimant) -> Licence:
        """Whether ``claimant`` holds the package, with every reason: one statement, whatever
        the answer (:mod:`pkgcat.storage.licences`)."""
        return licences.licence(
            await self._run.rows(*licences.statement(source_id, package_row_id, claimant))
        )

    async def whitelist(
        self, package_row_id: int, limit: int, offset: int
    ) -> tuple[int, list[WhitelistEntry]]:
        """How many devices are on a package's whitelist, and one page of them by udid, from
        one snapshot (so the two agree)."""
        async with self._run.snapshot() as run:
            counted = await run.row(licences.WHITELIST_COUNT, (package_row_id,))
            assert counted is not None  # an aggregate: always one row
            total = int(counted["total"])
            if offset >= total:
                return total, []
            page = licences.whitelist_page(package_row_id, limit, offset, self._run.collate)
            found = await run.rows(*page)
        return total, [licences.entry(row) for row in found]

    async def sales(
        self,
        source_id: int,
        first: int,
        end: int,
        limit: int,
        after: BuyerKey | None,
        *,
        package_row_id: int | None = None,
        status: str | None = None,
    ) -> list[Sale]:
        """Purchases of the source with ``first <= purchased_at < end``, newest first, after ``after``.

        With ``package_row_id``, only that package's own purchases (allowed_for=package).
        """
        statement = sales(source_id, first, end, limit, after, package_row_id, status)
        return [sale(row) for row in await self._run.rows(*statement)]

    async def sales_totals(
        self,
        source_id: int,
        first: int,
        end: int,
        *,
        package_row_id: int | None = None,
        status: str | None = None,
    ) -> list[SalesTotal]:
        """Totals per currency (sorted) over the same purchases as :meth:`sales`, all of them."""
        statement = sales_totals(source_id, first, end, package_row_id, status)
        return totals(await self._run.rows(*statement))

    async def usage(self, application_id: int, first: date, last: date) -> dict[date, int]:
        """Counted requests per day between ``first`` and ``last`` inclusive (days with none
        absent): every count any process's counter has returned from ``record``."""
        found = await self._run.rows(rows.USAGE, (application_id, *_days(first, last)))
        return {date.fromisoformat(row["day"]): int(row["count"]) for row in found}

    async def usage_operations(
        self, application_id: int, first: date, last: date
    ) -> dict[date, dict[str, int]]:
        """Counted requests per day and operation between ``first`` and ``last`` inclusive.

        Days and operations with none are absent.
        """
        statement = (rows.USAGE_OPERATIONS, (application_id, *_days(first, last)))
        return rows.operations_by_day(await self._run.rows(*statement))

    async def downloads(self, package: str, first: date, last: date) -> dict[date, int]:
        """Counted downloads of ``package`` per day between ``first`` and ``last`` inclusive
        (days with none absent), including every count any process has committed."""
        found = await self._run.rows(rows.DOWNLOADS, (package, *_days(first, last)))
        return {date.fromisoformat(row["day"]): int(row["count"]) for row in found}

    async def secret(self, name: str) -> str | None:
        """A per-database secret (migration 0005's ``api_secrets``), or ``None`` if absent."""
        row = await self._run.row(SECRET, (name,))
        return None if row is None else str(row["value"])

    async def close(self) -> None:
        await self._run.close()


def _days(first: date, last: date) -> tuple[str, str]:
    return first.isoformat(), last.isoformat()


async def _buyers_count(run: Executor, package_row_id: int, source_id: int) -> int:
    row = await run.row(rows.BUYERS_COUNT, (package_row_id, source_id))
    assert row is not None  # an aggregate: always one row
    return int(row["total"])


async def _streams(
    run: Executor, package_row_id: int, source_id: int, after: BuyerKey | None, wanted: int
) -> list[Sequence[Row]]:
    """The package's own buyers and its source's whole-source buyers, ``wanted`` of each."""
    return [
        await run.rows(
            rows.STREAMS[(where, after is not None)],
            (ident, *rows.seek_parameters(after), wanted),
        )
        for where, ident in zip(_BUYER_STREAMS, (package_row_id, source_id), strict=True)
    ]
