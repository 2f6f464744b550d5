"""Payouts: made once per source, currency and payout date, sent by the host that claims them.

Making a payout (:func:`make`) is one transaction: the payout's row (unique per source,
currency, test and period, so of two hosts making it at once one fails and writes
nothing), the ledger entries it pays claimed in ``payout_items`` (an entry's key there:
paid at most once), and its own debit of the available balance. Sending it is a lease,
as webhooks' deliverers take endpoints: :func:`claim` takes payouts due whose lease is
free or ended (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite one ``BEGIN
IMMEDIATE`` writer at a time), and each step after it writes only while the lease is the
caller's. A payout that fails gives its amount back to the available balance once, with
the reason (an entry unique per payout), whoever tells of the failure.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    String,
    and_,
    cast,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.exc import IntegrityError

from pkgcat.events import MoneyEvent, PayoutFailed, PayoutPaid
from pkgcat.money.amounts import text
from pkgcat.storage import ledger
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.writes.outbox import emit_heard

LIVE = ("pending", "in_transit")


@dataclass(frozen=True, slots=True)
class PayoutRecord:
    id: str
    source_id: int
    currency: str
    test: bool
    period: str
    amount: int
    status: str
    account_id: str
    transfer_id: str | None
    platform_payout_id: str | None
    reversal_id: str | None
    failure_code: str | None
    failure_message: str | None
    attempts: int
    created_at: int
    settled_at: int | None


def _record(row: Any) -> PayoutRecord:
    m = row._mapping
    return PayoutRecord(
        m["id"], m["source_id"], m["currency"], bool(m["test"]), m["period"], int(m["amount"]),
        m["status"], m["account_id"], m["transfer_id"], m["platform_payout_id"],
        m["reversal_id"], m["failure_code"], m["failure_message"], m["attempts"],
        m["created_at"], m["settled_at"],
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Unpaid:
    """What a source has available and not yet paid, in one currency."""

    source_id: int
    currency: str
    test: bool
    amount: int


def _unclaimed() -> Any:
    e, i = t.ledger_entries, t.payout_items
    return and_(e.c.available != 0, ~exists().where(i.c.entry_seq == e.c.seq))


def unpaid(engine: Engine) -> list[Unpaid]:
    """Every source's available balance not yet in a payout, per currency, when above zero."""
    e = t.ledger_entries
    total = func.sum(e.c.available)
    with engine.connect() as db:
        rows = db.execute(
            select(e.c.source_id, e.c.currency, e.c.test, total)
            .where(_unclaimed())
            .group_by(e.c.source_id, e.c.currency, e.c.test)
            .having(total > 0)
        )
        return [Unpaid(r[0], r[1], bool(r[2]), int(r[3])) for r in rows]


def made_for(engine: Engine, source_id: int, currency: str, test: bool, period: str) -> bool:
    p = t.payouts
    with engine.connect() as db:
        query = select(p.c.id).where(
            p.c.source_id == source_id, p.c.currency == currency, p.c.test == test,
            p.c.period == period,
        )  # fmt: skip
        return db.execute(query).first() is not None


class _TooSmall(Exception):
    """Rolls back a payout whose claimed entries came to less than the minimum."""


def make(
    engine: Engine,
    *,
    source_id: int,
    currency: str,
    test: bool,
    period: str,
    minimum: int,
    account_id: str,
    now: int,
) -> PayoutRecord | None:
    """The payout of the source's unpaid available balance in ``currency`` for ``period``:
    None when one was made for that period already (here or by another host), or the
    balance is below ``minimum``. Nothing is written then."""
    p, e, i = t.payouts, t.ledger_entries, t.payout_items
    payout_id = f"po_{secrets.token_hex(12)}"
    try:
        with write_transaction(engine) as db:
            db.execute(
                insert(p).values(
                    id=payout_id, source_id=source_id, currency=currency, test=test,
                    period=period, amount=0, status="pending", account_id=account_id,
                    created_at=now, updated_at=now,
                )
            )  # fmt: skip
            mine = and_(e.c.source_id == source_id, e.c.currency == currency, e.c.test == test)
            db.execute(
                insert(i).from_select(
                    ["entry_seq", "payout_id"],
                    select(e.c.seq, cast(literal(payout_id), String(40))).where(mine, _unclaimed()),
                )
            )
            amount = int(
                db.execute(
                    select(func.coalesce(func.sum(e.c.available), 0))
                    .select_from(i.join(e, e.c.seq == i.c.entry_seq))
                    .where(i.c.payout_id == payout_id)
                ).scalar_one()
            )
            if amount < minimum:
                raise _TooSmall
            db.execute(update(p).where(p.c.id == payout_id).values(amount=amount))
            seq = ledger.append(
                db, source_id=source_id, currency=currency, test=test, kind="payout",
                reference=payout_id, payout_id=payout_id, pending=0, available=-amount,
                created_at=now,
            )  # fmt: skip
            db.execute(insert(i).values(entry_seq=seq, payout_id=payout_id))
            return _record(db.execute(select(p).where(p.c.id == payout_id)).one())
    except _TooSmall:
        return None
    except IntegrityError:
        return None  # another host made this period's payout, or claimed the entries first


def claim(engine: Engine, owner: str, *, now: int, lease: int, limit: int) -> list[PayoutRecord]:
    """Lease pending payouts that no live lease holds, to send them."""
    p = t.payouts
    due = and_(p.c.status == "pending", or_(p.c.lease_until.is_(None), p.c.lease_until < now))
    with engine.connect() as db:  # a read first: an idle scheduler takes no lock
        if db.execute(select(p.c.id).where(due).limit(1)).first() is None:
            return []
    with write_transaction(engine) as db:
        query = select(p.c.id).where(due).order_by(p.c.created_at).limit(limit)
        if db.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        ids = list(db.execute(query).scalars())
        if not ids:
            return []
        db.execute(
            update(p)
            .where(p.c.id.in_(ids))
            .values(lease_owner=owner, lease_until=now + lease, attempts=p.c.attempts + 1)
        )
        return [_record(row) for row in db.execute(select(p).where(p.c.id.in_(ids)))]


def _held(db: Connection, payout_id: str, owner: str, values: dict[str, Any]) -> bool:
    p = t.payouts
    done = db.execute(update(p).where(p.c.id == payout_id, p.c.lease_owner == owner).values(values))
    return bool(done.rowcount)


def transferred(engine: Engine, payout_id: str, owner: str, transfer_id: str, now: int) -> bool:
    """The platform moved the money to the seller's account (the payout not yet sent on)."""
    with engine.begin() as db:
        return _held(db, payout_id, owner, {"transfer_id": transfer_id, "updated_at": now})


def sent(
    engine: Engine,
    payout_id: str,
    owner: str,
    *,
    platform_payout_id: str,
    paid: bool,
    now: int,
) -> bool:
    """The payout is on its way to the seller's bank (``in_transit``), or there already
    (``paid``: test mode); the lease ends. False when the lease was lost."""
    values: dict[str, Any] = {
        "platform_payout_id": platform_payout_id,
        "status": "paid" if paid else "in_transit",
        "lease_owner": None,
        "lease_until": None,
        "updated_at": now,
    }
    if paid:
        values["settled_at"] = now
    with engine.begin() as db:
        done = _held(db, payout_id, owner, values)
        if done and paid:
            _tell(db, PayoutPaid, payout_id, now)
        return done


def let_go(engine: Engine, payout_id: str, owner: str, reason: str, now: int) -> None:
    """The platform could not be asked this time: the lease ends, the payout is tried again
    at the next run (with the same idempotency keys)."""
    with engine.begin() as db:
        _held(db, payout_id, owner, {
            "lease_owner": None, "lease_until": None, "failure_message": reason[:500],
            "updated_at": now,
        })  # fmt: skip


def fail(db: Connection, payout_id: str, *, code: str | None, message: str, now: int) -> bool:
    """The payout failed: its amount back in the available balance, with why; once, whoever
    tells it (the sender, the platform's event). False when it had failed already."""
    p = t.payouts
    row = db.execute(select(p).where(p.c.id == payout_id)).first()
    # A payout may fail after it was paid (a bank returns it days later): that too.
    if row is None or row.status == "failed":
        return False
    db.execute(
        update(p)
        .where(p.c.id == payout_id)
        .values(status="failed", failure_code=code, failure_message=message[:500],
                lease_owner=None, lease_until=None, settled_at=now, updated_at=now)
    )  # fmt: skip
    seq = ledger.append_once(
        db, source_id=row.source_id, currency=row.currency, test=row.test,
        kind="payout_failed", reference=payout_id, payout_id=payout_id, pending=0,
        available=int(row.amount), reason=message[:500], created_at=now,
    )  # fmt: skip
    if seq is not None:
        _tell(db, PayoutFailed, payout_id, now)
    return seq is not None


def _tell(db: Connection, kind: type[MoneyEvent], payout_id: str, now: int) -> None:
    """The payout's event (``payout.paid``, ``payout.failed``), as it now is, in the caller's
    transaction: sent once, as the change it tells of is made once."""
    row = db.execute(select(t.payouts).where(t.payouts.c.id == payout_id)).one()
    details = {
        "id": row.id, "currency": row.currency, "test": bool(row.test), "period": row.period,
        "amount": text(int(row.amount), row.currency), "status": row.status,
        "failure_code": row.failure_code, "failure_message": row.failure_message,
    }  # fmt: skip
    emit_heard(db, [kind(row.source_id, details)], now=now)


def by_platform_id(db: Connection, platform_payout_id: str) -> PayoutRecord | None:
    p = t.payouts
    row = db.execute(select(p).where(p.c.platform_payout_id == platform_payout_id)).first()
    return None if row is None else _record(row)


def by_id(db: Connection, payout_id: str) -> PayoutRecord | None:
    row = db.execute(select(t.payouts).where(t.payouts.c.id == payout_id)).first()
    return None if row is None else _record(row)


def by_transfer(db: Connection, transfer_id: str) -> PayoutRecord | None:
    p = t.payouts
    row = db.execute(select(p).where(p.c.transfer_id == transfer_id)).first()
    return None if row is None else _record(row)


def paid(db: Connection, payout_id: str, now: int) -> bool:
    """The seller's bank has the payout (Stripe's ``payout.paid``)."""
    p = t.payouts
    done = db.execute(
        update(p)
        .where(p.c.id == payout_id, p.c.status == "in_transit")
        .values(status="paid", settled_at=now, updated_at=now)
    )
    if done.rowcount:
        _tell(db, PayoutPaid, payout_id, now)
    return bool(done.rowcount)


def to_reverse(engine: Engine, *, limit: int = 50) -> list[PayoutRecord]:
    """Failed payouts whose transfer is still in the seller's platform account."""
    p = t.payouts
    with engine.connect() as db:
        rows = db.execute(
            select(p)
            .where(p.c.status == "failed", p.c.transfer_id.is_not(None),
                   p.c.reversal_id.is_(None))
            .limit(limit)
        )  # fmt: skip
        return [_record(row) for row in rows]


def reversed_(engine: Engine, payout_id: str, reversal_id: str, now: int) -> None:
    p = t.payouts
    with engine.begin() as db:
        db.execute(
            update(p)
            .where(p.c.id == payout_id, p.c.reversal_id.is_(None))
            .values(reversal_id=reversal_id, updated_at=now)
        )


def page(
    engine: Engine, source_id: int, *, after: tuple[int, str] | None, limit: int
) -> tuple[list[PayoutRecord], dict[str, list[ledger.EntryRecord]]]:
    """The source's payouts, newest first, after the position ``after`` (created_at, id),
    and the ledger entries each paid."""
    p, e, i = t.payouts, t.ledger_entries, t.payout_items
    query = select(p).where(p.c.source_id == source_id)
    if after is not None:
        query = query.where(tuple_(p.c.created_at, p.c.id) < tuple_(*after))
    with engine.connect() as db:
        rows = [
            _record(r)
            for r in db.execute(query.order_by(p.c.created_at.desc(), p.c.id.desc()).limit(limit))
        ]
        paid_by: dict[str, list[ledger.EntryRecord]] = {r.id: [] for r in rows}
        if rows:
            items = db.execute(
                select(e, i.c.payout_id.label("paid_by"))
                .select_from(i.join(e, e.c.seq == i.c.entry_seq))
                .where(i.c.payout_id.in_(list(paid_by)))
                .order_by(e.c.seq)
            )
            for item in items:
                paid_by[item.paid_by].append(ledger.entry_record(item))
    return rows, paid_by


def of_source(engine: Engine, source_id: int, statuses: Sequence[str] = LIVE) -> list[PayoutRecord]:
    p = t.payouts
    with engine.connect() as db:
        rows = db.execute(
            select(p).where(p.c.source_id == source_id, p.c.status.in_(list(statuses)))
        )
        return [_record(row) for row in rows]
