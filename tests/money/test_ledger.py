"""The sellers' ledger on both databases: commissions and fees, the hold, refunds, payouts.

The invariants of docs/money.md: every balance is the sum of its entries; a sale is
released once and an entry paid once, whatever runs at once; a refund after a payout
leaves a negative balance that later sales repay; gross - commission - fee is what the
seller is credited, to the minor unit.
"""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from sqlalchemy import Engine, text

from pkgcat.errors import InvalidArgument
from pkgcat.storage import ledger, store
from pkgcat.storage.engine import engine_for
from tests.money.conftest import DAY, Sell, Time, money_of, purchase, scheduler_of


def _sums(engine: Engine, source_id: int) -> dict[tuple[str, bool], tuple[int, int]]:
    """Each balance as the entries add up, summed here one by one (not by the ledger's SQL)."""
    found: dict[tuple[str, bool], tuple[int, int]] = {}
    for e in ledger.entries(engine, source_id):
        pending, available = found.get((e.currency, e.test), (0, 0))
        found[(e.currency, e.test)] = (pending + e.pending, available + e.available)
    return found


def _race(engines: list[Engine], clock: Time) -> int:
    """One scheduler run per engine (a host each), all started at once; how many ended."""
    start = threading.Barrier(len(engines))
    runs: list[object] = []

    def host(each: Engine) -> None:
        scheduler = scheduler_of(each, clock)
        start.wait()
        runs.append(scheduler.run_once())

    threads = [threading.Thread(target=host, args=(each,)) for each in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(runs)


def _holds(engine: Engine) -> bool:
    with engine.connect() as db:
        return bool(db.execute(text("SELECT count(*) FROM ledger_holds")).scalar())


def test_a_sale_is_recorded_with_its_commission_and_fee_and_credits_the_net_to_the_cent(
    engine: Engine, sell: Sell, time_: Time
) -> None:
    """Was commission "0.00" on every store sale, and no ledger at all."""
    money = money_of(engine, time_, commission_percent=Decimal(15))
    usd = sell("9.00", terms=store.SaleTerms(Decimal(15), hold_seconds=30 * DAY, fee=56))
    assert purchase(engine, usd) | {"status": None} == {
        "status": None, "total": "9.00", "commission": "1.35", "fee": "0.56",
    }  # fmt: skip
    money.set_commission(2, "12.5")  # Beta's own rate, over the deployment's
    yen = sell("500", "JPY", source_id=2, package_id=5,
               terms=store.SaleTerms(Decimal(15), hold_seconds=30 * DAY))  # fmt: skip
    dinar = sell("1.234", "KWD", source_id=2, package_id=5,
                 terms=store.SaleTerms(Decimal(15), hold_seconds=30 * DAY))  # fmt: skip
    assert purchase(engine, yen)["commission"] == "63"  # 62.5 rounded half up, in whole yen
    assert purchase(engine, dinar)["commission"] == "0.154"  # KWD has three decimals
    assert purchase(engine, yen)["fee"] is None  # test mode reports no fee

    [alpha] = money.balance(1)
    assert (alpha.currency, alpha.test, alpha.pending, alpha.available) == (
        "USD", True, Decimal("7.09"), Decimal("0.00"),  # 9.00 - 1.35 - 0.56
    )  # fmt: skip
    beta = {b.currency: b.pending for b in money.balance(2)}
    assert beta == {"JPY": Decimal("437"), "KWD": Decimal("1.080")}
    for source in (1, 2):
        balances = {(b.currency, b.test): b for b in money.balance(source)}
        for (currency, test), (pending, available) in _sums(engine, source).items():
            found = balances[(currency, test)]
            assert found.pending.scaleb(len(str(found.pending).partition(".")[2])) == pending
            assert found.available.scaleb(len(str(found.available).partition(".")[2])) == available


def test_imported_purchases_keep_their_commission_and_enter_no_ledger(engine: Engine) -> None:
    with engine.connect() as db:
        kept = db.execute(text("SELECT commission, fee FROM purchases WHERE txn_id = 'P-OLD'"))
        assert kept.one() == ("0.30", None)
    assert ledger.entries(engine, 1) == []
    assert ledger.entries(engine, 2) == []


def test_two_hosts_running_at_once_release_each_sale_once_and_pay_it_once(
    engine: Engine, database_url: str, sell: Sell, time_: Time
) -> None:
    money = money_of(engine, time_)
    money.connect(1, "https://seller.example.test/done", "https://seller.example.test/again")
    txns = [sell("1.00") for _ in range(12)]
    engines = [engine_for(database_url) for _ in range(2)]
    try:
        for _round in range(3):  # the same period: nothing more after the first
            assert _race(engines, time_) == 2
    finally:
        for each in engines:
            each.dispose()
    entries = ledger.entries(engine, 1)
    assert sorted(e.reference for e in entries if e.kind == "release") == sorted(txns)
    [payout] = money.payouts(1).payouts
    assert (payout.amount, payout.status, payout.test) == (Decimal("12.00"), "paid", True)
    assert len(payout.entries) == 13  # the twelve releases, and its own debit
    [balance] = money.balance(1)
    assert (balance.pending, balance.available) == (Decimal("0.00"), Decimal("0.00"))
    assert _sums(engine, 1) == {("USD", True): (0, 0)}
    assert not _holds(engine)


def test_a_refund_after_a_payout_leaves_a_negative_balance_that_later_sales_repay(
    engine: Engine, sell: Sell, time_: Time
) -> None:
    money = money_of(engine, time_)
    money.connect(1, "https://seller.example.test/done", "https://seller.example.test/again")
    first = sell("9.00")
    scheduler_of(engine, time_).run_once()
    [paid] = money.payouts(1).payouts
    assert paid.amount == Decimal("9.00")

    time_.now += DAY  # the next payout date
    refund = money.refund(1, first, key="seller-refund-1")
    assert (refund.amount, refund.status, refund.test) == (Decimal("9.00"), "succeeded", True)
    assert purchase(engine, first)["status"] == "Refunded"
    with engine.connect() as db:
        owners = db.execute(text("SELECT count(*) FROM purchases WHERE txn_id = :t AND "
                                 "status = 'Completed'"), {"t": first}).scalar()  # fmt: skip
    assert owners == 0
    [balance] = money.balance(1)
    assert balance.available == Decimal("-9.00")
    assert "below the minimum" in str(balance.next_payout.blocked)
    assert scheduler_of(engine, time_).run_once().made == 0  # nothing to pay out of a debt

    time_.now += DAY
    sell("4.00"), sell("6.00")
    scheduler_of(engine, time_).run_once()
    newest = money.payouts(1).payouts[0]
    assert newest.amount == Decimal("1.00")  # 4.00 + 6.00 - 9.00
    kinds = sorted((e.kind, e.available) for e in newest.entries)
    assert kinds == [("payout", Decimal("-1.00")), ("refund", Decimal("-9.00")),
                     ("release", Decimal("4.00")), ("release", Decimal("6.00"))]  # fmt: skip
    [balance] = money.balance(1)
    assert (balance.pending, balance.available) == (Decimal("0.00"), Decimal("0.00"))
    assert _sums(engine, 1) == {("USD", True): (0, 0)}


def test_a_refund_is_made_once_per_key_in_part_or_whole_never_past_the_sale(
    engine: Engine, sell: Sell, time_: Time
) -> None:
    money = money_of(engine, time_, commission_percent=Decimal(10))
    txn = sell("9.00", terms=store.SaleTerms(Decimal(10), hold_seconds=30 * DAY))
    part = [money.refund(1, txn, "4.00", key="k1") for _ in range(3)]
    assert {p.id for p in part} == {part[0].id}
    assert purchase(engine, txn)["status"] == "Completed"  # a part refunded: still owned
    with pytest.raises(InvalidArgument, match=r"between 0 and 5\.00 USD"):
        money.refund(1, txn, "5.01", key="k2")
    with pytest.raises(InvalidArgument, match="more decimals"):
        money.refund(1, txn, "1.001", key="k3")
    with pytest.raises(InvalidArgument, match="another refund"):
        money.refund(1, txn, "1.00", key="k1")
    with pytest.raises(InvalidArgument, match="no store purchase"):
        money.refund(2, txn, key="k4")  # another source's sale
    rest = money.refund(1, txn, key="k5")
    assert rest.amount == Decimal("5.00")
    assert purchase(engine, txn)["status"] == "Refunded"
    with pytest.raises(InvalidArgument, match="Refunded"):
        money.refund(1, txn, key="k6")
    # The seller gives back the refunds less the commission's share: 9.00 - 0.90, held still.
    debits = [e.pending for e in ledger.entries(engine, 1) if e.kind == "refund"]
    assert sorted(debits) == [-450, -360]  # 5.00 - 0.50 and 4.00 - 0.40
    [balance] = money.balance(1)
    assert balance.pending == Decimal("0.00")


def test_an_adjustment_needs_a_reason_and_moves_the_available_balance(
    engine: Engine, time_: Time
) -> None:
    money = money_of(engine, time_)
    with pytest.raises(InvalidArgument, match="reason"):
        money.adjust(1, "USD", "5.00", "  ")
    entry = money.adjust(1, "usd", "-2.50", "a chargeback fee the platform charged", test=True)
    assert (entry.kind, entry.available, entry.reason) == (
        "adjustment", Decimal("-2.50"), "a chargeback fee the platform charged",
    )  # fmt: skip
    again = money.adjust(1, "USD", "-2.50", "the same, sent twice", test=True, key="adj-1")
    assert money.adjust(1, "USD", "-2.50", "the same, sent twice", test=True, key="adj-1") == again
    [balance] = money.balance(1)
    assert balance.available == Decimal("-5.00")


def test_a_source_with_money_is_deleted_with_its_ledger_only_by_a_cascade(
    engine: Engine, database_url: str, sell: Sell, time_: Time
) -> None:
    """The ledger's foreign keys refused the cascade's delete of the source (PostgreSQL)."""
    from typer.testing import CliRunner

    from pkgcat.cli import app as cli

    money = money_of(engine, time_)
    money.connect(1, "https://seller.example.test/ok", "https://seller.example.test/again")
    money.set_commission(1, "10")
    sell("9.00")
    scheduler_of(engine, time_).run_once()
    env = {"PKGCAT_DATABASE_URL": database_url}
    refused = CliRunner().invoke(cli, ["source", "delete", "Alpha"], env=env)
    assert refused.exit_code == 1
    done = CliRunner().invoke(cli, ["source", "delete", "Alpha", "--cascade"], env=env)
    assert done.exit_code == 0, done.output
    with engine.connect() as db:
        for table in ("ledger_entries", "payouts", "payout_items", "source_money"):
            query = text(f"SELECT count(*) FROM {table}")  # noqa: S608 - the names above
            assert db.execute(query).scalar() == 0, table
