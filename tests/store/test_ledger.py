"""The store's ledger on both databases: a completion told many times, a failed payment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from pkgcat.storage import store
from pkgcat.storage.engine import engine_for

NOW = 1_711_886_400


@pytest.fixture
def engine(database_url: str, catalogue: dict[str, str]) -> Iterator[Engine]:
    made = engine_for(database_url)
    yield made
    made.dispose()


def _buyer(engine: Engine, email: str) -> int:
    store.save_code(engine, email, "c" * 64, NOW + 600)
    buyer = store.sign_in(engine, email, "c" * 64, "t" * 64, "s" * 64, "udid1", "iPhone", NOW)
    assert buyer is not None
    return buyer


def _purchase(buyer: int, email: str, package_id: int | None) -> store.StorePurchase:
    return store.StorePurchase(
        source_id=1,
        package_id=package_id,
        buyer_id=buyer,
        email=email,
        udid="udid1",
        model="iPhone",
        total="9.00",
        currency="USD",
        platform="test",
        txn_id="unused",
        purchased_at=NOW,
    )


def _completed(engine: Engine, email: str) -> int:
    with engine.connect() as db:
        found = db.execute(
            text("SELECT count(*) FROM purchases WHERE nickname = :e AND status = 'Completed'"),
            {"e": email},
        ).scalar()
    return int(found or 0)


def test_a_completion_replayed_ten_times_changes_the_ledger_once(engine: Engine) -> None:
    buyer = _buyer(engine, "replay@example.test")
    store.start_payment(engine, "pay_1", _purchase(buyer, "replay@example.test", 1))
    applied = []
    for _ in range(10):
        with engine.begin() as db:
            applied.append(store.complete_payment(db, "pay_1", "txn_1", NOW + 5))
    assert applied == [True] + [False] * 9
    assert _completed(engine, "replay@example.test") == 1
    assert store.owned_packages(engine, buyer, "udid1") == ["com.alpha.paid"]


def test_a_failed_or_open_payment_owns_nothing_and_cannot_complete_later(engine: Engine) -> None:
    buyer = _buyer(engine, "failed@example.test")
    store.start_payment(engine, "pay_open", _purchase(buyer, "failed@example.test", 1))
    assert store.owned_packages(engine, buyer, "udid1") == []  # open: nothing owned yet
    store.fail_payment(engine, "pay_open")
    with engine.begin() as db:
        assert store.complete_payment(db, "pay_open", "txn_late", NOW + 5) is False
    assert _completed(engine, "failed@example.test") == 0
    assert store.owned_packages(engine, buyer, "udid1") == []


def test_a_whole_source_purchase_unlocks_every_package_of_the_source(engine: Engine) -> None:
    buyer = _buyer(engine, "source@example.test")
    store.start_payment(engine, "pay_src", _purchase(buyer, "source@example.test", None))
    with engine.begin() as db:
        assert store.complete_payment(db, "pay_src", "txn_src", NOW + 5)
    owned = store.owned_packages(engine, buyer, "udid1")
    assert owned == ["com.alpha.free", "com.alpha.offline", "com.alpha.other", "com.alpha.paid"]
    assert "com.beta.paid" not in owned


def test_a_source_with_store_payments_is_deleted_only_with_them(
    engine: Engine, database_url: str
) -> None:
    from typer.testing import CliRunner

    from pkgcat.cli import app as cli

    buyer = _buyer(engine, "gone@example.test")
    store.start_payment(engine, "pay_gone", _purchase(buyer, "gone@example.test", 1))
    env = {"PKGCAT_DATABASE_URL": database_url}
    refused = CliRunner().invoke(cli, ["source", "delete", "Alpha"], env=env)
    assert refused.exit_code == 1
    assert "1 store payment" in refused.output
    done = CliRunner().invoke(cli, ["source", "delete", "Alpha", "--cascade"], env=env)
    assert done.exit_code == 0, done.output
    with engine.connect() as db:
        assert db.execute(text("SELECT count(*) FROM store_payments")).scalar() == 0


def test_a_platform_completes_fails_and_refunds_only_what_is_its_own(engine: Engine) -> None:
    """A Stripe event naming a payment the test platform started changes nothing of it."""
    buyer = _buyer(engine, "own@example.test")
    store.start_payment(engine, "test_pay", _purchase(buyer, "own@example.test", 1))
    with engine.begin() as db:
        assert store.fail_open_payment(db, "test_pay", "stripe") is False
        assert (
            store.complete_payment(db, "test_pay", "txn_own", NOW + 5, platform="stripe") is False
        )
    assert store.owned_packages(engine, buyer, "udid1") == []
    with engine.begin() as db:
        assert store.complete_payment(db, "test_pay", "txn_own", NOW + 5, platform="test")
    with engine.begin() as db:
        assert store.record_refund(db, "stripe", "txn_own", "Refunded") is False
        assert store.record_refund(db, "test", "txn_own", "Refunded") is True
    assert store.owned_packages(engine, buyer, "udid1") == []
