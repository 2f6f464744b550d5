"""What a source's money is subject to: its commission, payout threshold and payout account.

One row of ``source_money`` per source that has any of them (made on first need); a
threshold per currency in ``payout_thresholds``. Synchronous SQLAlchemy Core, the same
statements on both databases.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import Connection, Engine, delete, insert, select, update

from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction


@dataclass(frozen=True, slots=True)
class Account:
    """A source's account on the payout platform, as the platform last described it."""

    source_id: int
    account_id: str
    test: bool
    payouts_enabled: bool
    details_submitted: bool
    disabled_reason: str | None


def source_id(engine: Engine, name: str) -> int | None:
    with engine.connect() as db:
        found = db.execute(select(t.sources.c.id).where(t.sources.c.name == name)).scalar()
    return None if found is None else int(found)


def cursor_key(engine: Engine) -> str:
    """The deployment's key of list cursors (made by the migrations), as hex."""
    with engine.connect() as db:
        found = db.execute(
            select(t.api_secrets.c.value).where(t.api_secrets.c.name == "cursor_key")
        ).scalar_one()
    return str(found)


def _ensure(db: Connection, source: int, now: int) -> None:
    m = t.source_money
    if db.execute(select(m.c.source_id).where(m.c.source_id == source)).first() is None:
        db.execute(insert(m).values(source_id=source, updated_at=now))


def commission_percent(db: Connection, source: int) -> Decimal | None:
    """The source's own commission rate, or None (the deployment's applies)."""
    m = t.source_money
    found = db.execute(select(m.c.commission_percent).where(m.c.source_id == source)).scalar()
    return None if found is None else Decimal(found)


def set_commission(engine: Engine, source: int, percent: Decimal | None, now: int) -> None:
    """The source's commission rate from now on (sales already made keep theirs)."""
    m = t.source_money
    with write_transaction(engine) as db:
        _ensure(db, source, now)
        db.execute(
            update(m)
            .where(m.c.source_id == source)
            .values(
                commission_percent=None if percent is None else format(percent, "f"),
                updated_at=now,
            )
        )


def thresholds(db: Connection, source: int) -> dict[str, int]:
    p = t.payout_thresholds
    rows = db.execute(select(p.c.currency, p.c.amount).where(p.c.source_id == source))
    return {row.currency: int(row.amount) for row in rows}


def set_threshold(engine: Engine, source: int, currency: str, amount: int | None) -> None:
    """The source's least payout in ``currency`` (minor units); None removes it."""
    p = t.payout_thresholds
    with write_transaction(engine) as db:
        db.execute(delete(p).where(p.c.source_id == source, p.c.currency == currency))
        if amount is not None:
            db.execute(insert(p).values(source_id=source, currency=currency, amount=amount))


def _account(row: object) -> Account | None:
    m = row._mapping  # type: ignore[attr-defined]  # a Row's mapping, of any query
    if m["account_id"] is None:
        return None
    return Account(
        m["source_id"],
        m["account_id"],
        bool(m["account_test"]),
        bool(m["payouts_enabled"]),
        bool(m["details_submitted"]),
        m["disabled_reason"],
    )


def account(db: Connection, source: int) -> Account | None:
    row = db.execute(select(t.source_money).where(t.source_money.c.source_id == source)).first()
    return None if row is None else _account(row)


def account_of(engine: Engine, source: int) -> Account | None:
    with engine.connect() as db:
        return account(db, source)


def accounts(db: Connection) -> dict[int, Account]:
    rows = db.execute(select(t.source_money).where(t.source_money.c.account_id.is_not(None)))
    found = (_account(row) for row in rows)
    return {a.source_id: a for a in found if a is not None}


def save_account(
    engine: Engine, source: int, account_id: str, *, test: bool, ready: bool, now: int
) -> None:
    """The source's account from now on (a new one replaces the old: payouts not yet sent
    still go to the account they were made for)."""
    m = t.source_money
    with write_transaction(engine) as db:
        _ensure(db, source, now)
        db.execute(
            update(m)
            .where(m.c.source_id == source)
            .values(
                account_id=account_id,
                account_test=test,
                payouts_enabled=ready,
                details_submitted=ready,
                disabled_reason=None,
                updated_at=now,
            )
        )


def account_updated(
    db: Connection,
    account_id: str,
    *,
    payouts_enabled: bool,
    details_submitted: bool,
    disabled_reason: str | None,
    now: int,
) -> bool:
    """What the platform says of an account now (Stripe's ``account.updated``); False when
    no source has that account."""
    m = t.source_money
    done = db.execute(
        update(m)
        .where(m.c.account_id == account_id)
        .values(
            payouts_enabled=payouts_enabled,
            details_submitted=details_submitted,
            disabled_reason=disabled_reason,
            updated_at=now,
        )
    )
    return bool(done.rowcount)
