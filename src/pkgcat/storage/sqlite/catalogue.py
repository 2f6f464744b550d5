"""The catalogue reader and change feed on SQLite (:mod:`pkgcat.storage.interfaces`).

No caching here: :class:`pkgcat.storage.cache.CachedCatalogue` wraps this
reader. A read that must agree with itself (a buyers page and its total) runs
in one read transaction, which SQLite's WAL mode serves from one snapshot.
"""

from __future__ import annotations

import sqlite3

from pkgcat.domain import KeyRecord, Ownership, Package, Sale, SalesTotal
from pkgcat.storage import rows, seller_rows
from pkgcat.storage.interfaces import BuyerKey, BuyersHint, BuyersSlice
from pkgcat.storage.sqlite.connection import SqliteDatabase


def read_generation(db: sqlite3.Connection) -> int:
    """The catalogue generation in the database (in the caller's transaction, if any)."""
    row = db.execute(rows.GENERATION).fetchone()
    return -1 if row is None else int(row["value"])  # no counter row: trust no cache


class SqliteChanges:
    """:class:`~pkgcat.storage.interfaces.ChangeFeed` on SQLite: learnt in each commit of counts.

    SQLite cannot push a change to another process, and reading the
    generation once per request was one more statement on every request (with
    the GIL released and taken back around it). Instead, the usage counter
    reads it inside each group commit, which every counted request waits for
    (:meth:`observe`): a request's commit starts after the request did, so the
    generation it reads is at least the one of the last change committed before
    the request arrived. :meth:`current` is the latest value seen so far, which
    is older until the request's own commit; :meth:`latest` reads the database.
    """

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database
        self._seen: int | None = None

    def current(self) -> int:
        if self._seen is None:
            self._seen = read_generation(self._database.db)
        return self._seen

    def observe(self, generation: int) -> None:
        """Note the generation read by a commit of this process, the latest it knows of."""
        self._seen = generation

    async def latest(self) -> int:
        self._seen = read_generation(self._database.db)
        return self._seen

    async def close(self) -> None:
        self._database.close()


class SqliteCatalogue:
    """:class:`~pkgcat.storage.interfaces.CatalogueReader` on one SQLite file."""

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database

    @property
    def _db(self) -> sqlite3.Connection:
        return self._database.db

    async def generation(self) -> int:
        return read_generation(self._db)

    async def latest_generation(self) -> int:
        return await self.generation()

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        row = self._db.execute(rows.FIND_KEY, (key_hash,)).fetchone()
        return None if row is None else rows.key_record(row)

    async def package(self, package_id: str, *, fresh: bool = False) -> Package | None:  # noqa: ARG002 - always read
        row = self._db.execute(rows.PACKAGE, (package_id,)).fetchone()
        return None if row is None else rows.package(row)

    async def buyers(
        self,
        package_row_id: int,
        source_id: int,
        limit: int,
        offset: int,
        hint: BuyersHint | None = None,
    ) -> BuyersSlice:
        db = self._db
        # One read transaction: the generation, the total and the page all come
        # from the same snapshot, so the total and the page agree.
        db.execute("BEGIN")
        try:
            generation = read_generation(db)
            if hint is not None and hint.generation != generation:
                hint = None  # read in another snapshot: nothing of it can be trusted
            total = hint.total if hint is not None else None
            if total is None:
                total = int(
                    db.execute(rows.BUYERS_COUNT, (package_row_id, source_id)).fetchone()[0]
                )
            if offset >= total:
                return BuyersSlice(generation, total, [])
            start, after = 0, None
            if hint is not None and hint.after is not None and hint.position <= offset:
                start, after = hint.position, hint.after
            wanted = offset - start + limit
            streams = [
                db.execute(
                    rows.STREAMS[(where, after is not None)],
                    (ident, *rows.seek_parameters(after), wanted),
                )
                for where, ident in ((rows.OWN, package_row_id), (rows.SOURCE_WIDE, source_id))
            ]
            page = rows.merged_page(streams, offset - start, limit)
            return BuyersSlice(generation, total, [rows.purchase(row) for row in page])
        finally:
            db.execute("COMMIT")

    async def buyer_marks(
        self, package_row_id: int, source_id: int, every: int
    ) -> tuple[int, list[BuyerKey]]:
        db = self._db
        db.execute("BEGIN")
        try:
            generation = read_generation(db)
            streams = [
                db.execute(rows.KEY_STREAMS[where], (ident, rows.ALL))
                for where, ident in ((rows.OWN, package_row_id), (rows.SOURCE_WIDE, source_id))
            ]
            return generation, rows.marks(streams, every)
        finally:
            db.execute("COMMIT")

    async def buyers_after(
        self, package_row_id: int, source_id: int, limit: int, after: BuyerKey | None
    ) -> BuyersSlice:
        db = self._db
        db.execute("BEGIN")
        try:
            generation = read_generation(db)
            total = int(db.execute(rows.BUYERS_COUNT, (package_row_id, source_id)).fetchone()[0])
            streams = [
                db.execute(
                    rows.STREAMS[(where, after is not None)],
                    (ident, *rows.seek_parameters(after), limit),
                )
                for where, ident in ((rows.OWN, package_row_id), (rows.SOURCE_WIDE, source_id))
            ]
            page = rows.merged_page(streams, 0, limit)
            return BuyersSlice(generation, total, [rows.purchase(row) for row in page])
        finally:
            db.execute("COMMIT")

    async def source_packages(
        self,
        source_id: int,
        limit: int,
        after: str | None,
        *,
        paid: bool | None = None,
        online: bool | None = None,
    ) -> list[Package]:
        sql, parameters = seller_rows.source_packages(source_id, limit, after, paid, online)
        return [rows.package(row) for row in self._db.execute(sql, parameters)]

    async def ownership(
        self, source_id: int, package_row_id: int, by: str, value: str, model: str | None = None
    ) -> Ownership | None:
        sql, parameters = seller_rows.ownership(source_id, package_row_id, by, value, model)
        row = self._db.execute(sql, parameters).fetchone()
        return None if row is None else seller_rows.owned(row)

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
        sql, parameters = seller_rows.sales(
            source_id, first, end, limit, after, package_row_id, status
        )
        return [seller_rows.sale(row) for row in self._db.execute(sql, parameters)]

    async def sales_totals(
        self,
        source_id: int,
        first: int,
        end: int,
        *,
        package_row_id: int | None = None,
        status: str | None = None,
    ) -> list[SalesTotal]:
        sql, parameters = seller_rows.sales_totals(source_id, first, end, package_row_id, status)
        return seller_rows.totals(self._db.execute(sql, parameters))

    async def secret(self, name: str) -> str | None:
        row = self._db.execute(seller_rows.SECRET, (name,)).fetchone()
        return None if row is None else str(row["value"])

    async def close(self) -> None:
        self._database.close()
