"""The seller reads of the catalogue, on every backend, through the worker's cached reader."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from pkgcat.domain import SalesTotal
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.backends import Storage
from tests import factories as f
from tests.conftest import Clock
from tests.contract.test_storage import caught_up, run


def test_the_cursor_key_is_one_per_database(database_url: str, catalogue: dict[str, str]) -> None:
    async def work(storage: Storage) -> str | None:
        return await storage.catalogue.secret("cursor_key")

    first, second = run(database_url, work), run(database_url, work)
    assert first is not None
    assert first == second
    assert len(bytes.fromhex(first)) == 32


def test_totals_add_amounts_exactly_whatever_the_number_of_rows(
    admin: CatalogueAdmin, database_url: str, catalogue: dict[str, str], clock: Clock
) -> None:
    admin.load(
        purchases=[
            f.purchase(1, 4, clock.now - timedelta(minutes=n), total="0.10", commission="0.01")
            for n in range(1, 1001)
        ]
        + [f.purchase(1, 4, clock.now - timedelta(minutes=2000), status="Refunded", total="0.33")]
    )
    first, end = int((clock.now - timedelta(days=10)).timestamp()), int(clock.now.timestamp()) + 1

    async def work(storage: Storage) -> tuple[list[SalesTotal], list[SalesTotal]]:
        await caught_up(storage)
        totals = await storage.catalogue.sales_totals(1, first, end, package_row_id=4)
        again = await storage.catalogue.sales_totals(1, first, end, package_row_id=4)
        return totals, again

    totals, again = run(database_url, work)
    assert totals == again
    (usd,) = totals
    assert usd.sales == 1001  # the thousand and O-OTHER of the catalogue
    assert usd.gross == Decimal("100.00") + Decimal("1.99")
    assert usd.commission == Decimal("10.00") + Decimal("0.30")
    assert (usd.refunds, usd.refunded) == (1, Decimal("0.33"))


def test_sales_pages_resume_right_after_their_position(
    admin: CatalogueAdmin, database_url: str, catalogue: dict[str, str], clock: Clock
) -> None:
    when = clock.now - timedelta(hours=1)
    admin.load(purchases=[f.purchase(1, 1, when, txn_id=t) for t in ("T-B", "T-A", "T-C")])
    first, end = int((clock.now - timedelta(days=10)).timestamp()), int(clock.now.timestamp())

    async def work(storage: Storage) -> list[list[str]]:
        await caught_up(storage)
        pages: list[list[str]] = []
        after = None
        while True:
            found = await storage.catalogue.sales(1, first, end, 2, after)
            if not found:
                return pages
            pages.append([s.purchase.txn_id for s in found])
            last = found[-1].purchase
            after = (int(last.purchased_at.timestamp()), last.txn_id)

    assert run(database_url, work) == [
        ["T-A", "T-B"],
        ["T-C", "P-NEW"],
        ["S-MID", "P-OLD"],
        ["O-OTHER"],
    ]
