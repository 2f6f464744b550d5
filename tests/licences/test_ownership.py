"""One question, asked the same everywhere: does this device (or buyer) hold this package?

Bought (completed, of the package or its whole source, by a buyer who registered the
device with the package's source) or on the package's whitelist; in one statement whatever
the answer. The seller's check, the store and Cydia's gate all ask it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import timedelta

from sqlalchemy import Engine, select

from pkgcat.domain import Claimant, Licence, Ownership
from pkgcat.storage import licences, store
from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for
from pkgcat.storage.interfaces import Executor, Row
from pkgcat.storage.postgres.catalogue import PostgresExecutor
from pkgcat.storage.postgres.connection import PostgresDatabase
from pkgcat.storage.reads import Catalogue
from pkgcat.storage.sqlite.catalogue import SqliteExecutor
from pkgcat.storage.sqlite.connection import SqliteDatabase
from tests import factories as f
from tests.licences.conftest import (
    BOTH,
    BOUGHT,
    ELSEWHERE,
    MODEL,
    REFUNDED,
    SPARE,
    UNKNOWN,
    WHITELISTED,
    WHITELISTED_AT,
    Services,
    Worker,
)

PAID, OTHER, BETA = 1, 4, 5
"""Package rows of the shared catalogue: com.alpha.paid, com.alpha.other (Alpha's), com.beta.paid."""
ADA = Ownership(f.T0 + timedelta(days=2), "ADA-1", "package")
BOB = Ownership(f.T0 + timedelta(days=1), "BOB-S", "source")


class Recording:
    """A real backend's executor that also notes each statement it is given."""

    def __init__(self, executor: Executor) -> None:
        self._executor = executor
        self.collate = executor.collate
        self.statements: list[str] = []

    async def row(self, sql: str, parameters: tuple[object, ...] = ()) -> Row | None:
        self.statements.append(sql)
        return await self._executor.row(sql, parameters)

    async def rows(self, sql: str, parameters: tuple[object, ...] = ()) -> Sequence[Row]:
        self.statements.append(sql)
        return await self._executor.rows(sql, parameters)

    def snapshot(self) -> AbstractAsyncContextManager[Executor]:
        return self._executor.snapshot()

    async def close(self) -> None:
        await self._executor.close()


def executor_for(database_url: str) -> Executor:
    if database_url.startswith("sqlite"):
        return SqliteExecutor(SqliteDatabase(database_url))
    return PostgresExecutor(PostgresDatabase(database_url, pool_size=2))


def test_a_device_holds_a_package_it_bought_or_is_whitelisted_for(
    database_url: str, devices: None, worker: Worker
) -> None:
    async def work(services: Services) -> dict[str, Licence]:
        held = services.storage.catalogue.licence
        return {
            udid: await held(1, PAID, Claimant.device(udid))
            for udid in (BOUGHT, SPARE, WHITELISTED, BOTH, REFUNDED, UNKNOWN, ELSEWHERE)
        }

    found = worker(work)
    assert found[BOUGHT] == Licence(purchase=ADA)
    assert found[SPARE] == Licence(purchase=ADA)  # every device its buyer registered here
    assert found[WHITELISTED] == Licence(whitelisted_at=WHITELISTED_AT)
    assert found[BOTH] == Licence(purchase=BOB, whitelisted_at=WHITELISTED_AT)
    assert found[BOTH].since == BOB.purchased_at  # the earlier of the two
    for udid in (REFUNDED, UNKNOWN, ELSEWHERE):  # charged back; nothing; another source's
        assert not found[udid].owned, udid
        assert found[udid].since is None


def test_a_whitelist_holds_for_its_own_package_only(
    database_url: str, devices: None, worker: Worker
) -> None:
    async def work(services: Services) -> list[bool]:
        held = services.storage.catalogue.licence
        return [
            (await held(1, OTHER, Claimant.device(WHITELISTED))).owned,
            (await held(2, BETA, Claimant.device(ELSEWHERE))).owned,
            (await held(2, BETA, Claimant.device(WHITELISTED))).owned,
        ]

    assert worker(work) == [False, True, False]


def test_a_model_must_be_the_registered_one_unless_none_was_registered(
    database_url: str, devices: None, worker: Worker
) -> None:
    async def work(services: Services) -> list[bool]:
        held = services.storage.catalogue.licence
        return [
            (await held(1, PAID, Claimant.device(BOUGHT, MODEL))).owned,
            (await held(1, PAID, Claimant.device(BOUGHT, "iPad8,1"))).owned,
            # Ada's spare device was registered with no model: any model is it.
            (await held(1, PAID, Claimant.device(SPARE, "iPad8,1"))).owned,
            # The whitelist names devices, not models.
            (await held(1, PAID, Claimant.device(WHITELISTED, "iPad8,1"))).owned,
        ]

    assert worker(work) == [True, False, True, True]


def test_buyers_are_asked_by_nickname_or_account_without_the_whitelist(
    database_url: str, devices: None, worker: Worker
) -> None:
    async def work(services: Services) -> list[Licence]:
        held = services.storage.catalogue.licence
        return [
            await held(1, PAID, Claimant(nickname="ada")),
            await held(1, PAID, Claimant(account="acc-ada")),
            await held(1, PAID, Claimant(nickname="eve")),
        ]

    assert worker(work) == [Licence(purchase=ADA), Licence(purchase=ADA), Licence()]


def test_every_answer_is_one_statement_and_the_same_one(database_url: str, devices: None) -> None:
    """No early exit that differs: a bought, a whitelisted and an unknown device's checks run
    the same single statement, every branch of it, whatever it finds."""
    import asyncio

    recording = Recording(executor_for(database_url))
    catalogue = Catalogue(recording)

    async def work() -> list[bool]:
        try:
            answers = []
            for udid in (BOUGHT, WHITELISTED, UNKNOWN):
                answers.append((await catalogue.licence(1, PAID, Claimant.device(udid))).owned)
            return answers
        finally:
            await catalogue.close()

    assert asyncio.run(work()) == [True, True, False]
    assert len(recording.statements) == 3
    assert len(set(recording.statements)) == 1
    assert recording.statements[0].count("UNION ALL") == len(licences.BRANCHES) - 1


def test_the_stores_list_agrees_with_the_check_for_every_package(
    database_url: str, devices: None
) -> None:
    """The store's ``user_info`` is one read of every package a buyer on a device holds: it
    holds exactly those the single check says it holds."""
    engine = engine_for(database_url)
    try:
        # A store buyer: ada's account is store-buyer-7's here, on the whitelisted device.
        with engine.begin() as db:
            db.execute(
                t.purchases.update()
                .where(t.purchases.c.nickname == "ada")
                .values(account=store.account_of(7))
            )
        listed = store.owned_packages(engine, 7, WHITELISTED)
        with engine.connect() as db:
            rows = db.execute(select(t.packages.c.id, t.packages.c.source_id, t.packages.c.package))
            checked = sorted(
                package
                for package_row_id, source_id, package in rows
                if licences.held(
                    db,
                    source_id,
                    package_row_id,
                    Claimant(account=store.account_of(7), udid=WHITELISTED),
                ).owned
            )
    finally:
        engine.dispose()
    assert listed == checked == ["com.alpha.paid"]


def _for_sale(engine: Engine, package: str) -> store.ForSale:
    found = store.for_sale(engine, package)
    assert found is not None
    return found


def test_the_store_and_cydias_gate_count_the_whitelist(database_url: str, devices: None) -> None:
    engine = engine_for(database_url)
    try:
        paid, other = _for_sale(engine, "com.alpha.paid"), _for_sale(engine, "com.alpha.other")
        # A store buyer who bought nothing: held on the whitelisted device only.
        assert store.owns(engine, 99, WHITELISTED, paid)
        assert not store.owns(engine, 99, UNKNOWN, paid)
        assert not store.owns(engine, 99, WHITELISTED, other)
        assert store.owned_packages(engine, 99, WHITELISTED) == ["com.alpha.paid"]
        assert store.owned_packages(engine, 99, UNKNOWN) == []
        # Cydia's gate: the device's headers, whitelisted or bought; a wrong model fails.
        assert store.device_owns(engine, WHITELISTED, "iPad8,1", "com.alpha.paid")
        assert store.device_owns(engine, BOUGHT, MODEL, "com.alpha.paid")
        assert store.device_owns(engine, SPARE, MODEL, "com.alpha.paid")
        assert not store.device_owns(engine, BOUGHT, "iPad8,1", "com.alpha.paid")
        assert not store.device_owns(engine, REFUNDED, MODEL, "com.alpha.paid")
        assert not store.device_owns(engine, UNKNOWN, MODEL, "com.alpha.paid")
        assert not store.device_owns(engine, WHITELISTED, MODEL, "com.nobody")
    finally:
        engine.dispose()


def test_sqlite_finds_the_buyers_purchases_by_index_not_by_walking_the_source(
    sqlite_url: str, devices: None
) -> None:
    """SQLite keeps no statistics: a check must not let it walk a source's every purchase in
    date order (through the sales ledger's index) to find the first of one buyer's."""
    import sqlite3

    path = sqlite_url.removeprefix("sqlite:///")
    connection = sqlite3.connect(path)
    try:
        for claimant, index in (
            (Claimant(nickname="ada"), "ix_purchases_source_nickname"),
            (Claimant(account="acc-ada"), "ix_purchases_source_account"),
            (Claimant.device(BOUGHT), "ix_purchases_source_nickname"),
            (Claimant.device(BOUGHT, MODEL), "ix_purchases_source_nickname"),
        ):
            sql, parameters = licences.statement(1, PAID, claimant)
            plan = [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", parameters)]
            purchases = [step for step in plan if " purchases " in f" {step} "]
            assert purchases == [f"SEARCH purchases USING INDEX {index} ({_keys(index)})"], plan
    finally:
        connection.close()


def _keys(index: str) -> str:
    return f"source_id=? AND {index.rsplit('_', 1)[1]}=?"
