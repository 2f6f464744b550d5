"""The sellers' ledger: append-only entries, the holds of pending sales, and the balances.

Every entry adds to one source's balances in one currency (test money kept apart): its
``pending`` and ``available`` columns, in minor units. No statement updates or deletes an
entry (a source deleted with ``--cascade`` takes its entries with it), and every balance
is a sum of entries. Each entry is unique per kind and reference, so a sale, a release or
a refund is written once, however many workers or hosts try at once: the loser's insert
fails its unique constraint and its transaction writes nothing.

A sale is credited pending (gross less commission), its platform fee debited pending, and
a hold row says when it is released. The release deletes the hold and moves what the
sale's entries left pending to available, in one transaction; a refund or chargeback
takes from the balance the sale is in at that moment, so each transaction that touches a
sale locks its hold first (``FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE``
serialises writers already).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from pkgcat.events import BalanceAvailable
from pkgcat.money.amounts import share, text, to_minor
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.writes.outbox import emit_heard

Entry = dict[str, object]


@dataclass(frozen=True, slots=True)
class Balance:
    """A source's balances in one currency, in minor units, as the ledger sums them."""

    currency: str
    test: bool
    pending: int
    available: int


@dataclass(frozen=True, slots=True)
class EntryRecord:
    seq: int
    kind: str
    reference: str
    currency: str
    test: bool
    pending: int
    available: int
    txn_id: str | None
    payout_id: str | None
    reason: str | None
    created_at: int


def entry_record(row: object) -> EntryRecord:
    m = row._mapping  # type: ignore[attr-defined]  # a Row's mapping, of any query
    return EntryRecord(
        m["seq"],
        m["kind"],
        m["reference"],
        m["currency"],
        bool(m["test"]),
        int(m["pending"]),
        int(m["available"]),
        m["txn_id"],
        m["payout_id"],
        m["reason"],
        m["created_at"],
    )


def append(db: Connection, **entry: object) -> int:
    """Write one entry on the caller's transaction; its seq."""
    done = db.execute(insert(t.ledger_entries).values(**entry).returning(t.ledger_entries.c.seq))
    return int(done.scalar_one())


def append_once(db: Connection, **entry: object) -> int | None:
    """Write an entry unless one of its kind and reference exists; its seq, or None.

    In a savepoint, so that the refused insert leaves the caller's transaction usable
    (PostgreSQL aborts a transaction at a failed statement).
    """
    e = t.ledger_entries
    if (
        db.execute(
            select(e.c.seq).where(e.c.kind == entry["kind"], e.c.reference == entry["reference"])
        ).first()
        is not None
    ):
        return None
    try:
        with db.begin_nested():
            return append(db, **entry)
    except IntegrityError:
        return None  # written meanwhile by another transaction


def credit_sale(
    db: Connection,
    *,
    source_id: int,
    txn_id: str,
    currency: str,
    test: bool,
    gross: int,
    commission: int,
    fee: int | None,
    release_at: int,
    fee_pending: bool,
    now: int,
) -> None:
    """A store sale: gross less commission credited pending, the platform's fee debited
    pending, held until ``release_at`` (and until the fee is known, when it is pending)."""
    common = {"source_id": source_id, "currency": currency, "test": test, "txn_id": txn_id}
    append(db, **common, kind="sale", reference=txn_id, pending=gross - commission,
           available=0, created_at=now)  # fmt: skip
    if fee:
        append(db, **common, kind="fee", reference=txn_id, pending=-fee, available=0,
               created_at=now)  # fmt: skip
    db.execute(
        insert(t.ledger_holds).values(
            txn_id=txn_id,
            source_id=source_id,
            currency=currency,
            test=test,
            release_at=release_at,
            fee_pending=fee_pending,
        )
    )


def held(db: Connection, txn_id: str) -> bool:
    """Whether the sale is still pending, its hold locked until the caller's commit."""
    h = t.ledger_holds
    query = select(h.c.txn_id).where(h.c.txn_id == txn_id)
    if db.dialect.name == "postgresql":
        query = query.with_for_update()
    return db.execute(query).first() is not None


def left_pending(db: Connection, txn_id: str) -> int:
    e = t.ledger_entries
    found = db.execute(select(func.sum(e.c.pending)).where(e.c.txn_id == txn_id)).scalar()
    return int(found or 0)


def release(db: Connection, txn_id: str, now: int) -> bool:
    """Release one sale: its hold deleted, what it left pending made available. False (and
    nothing written) when it is no longer held: released already, by this host or another."""
    h = t.ledger_holds
    row = db.execute(select(h).where(h.c.txn_id == txn_id)).first()
    if row is None:
        return False
    if db.execute(h.delete().where(h.c.txn_id == txn_id)).rowcount != 1:
        return False
    amount = left_pending(db, txn_id)
    seq = append_once(
        db,
        source_id=row.source_id,
        currency=row.currency,
        test=row.test,
        kind="release",
        reference=txn_id,
        txn_id=txn_id,
        pending=-amount,
        available=amount,
        created_at=now,
    )
    if seq is None:
        return False
    details = {"currency": row.currency, "test": bool(row.test),
               "amount": text(amount, row.currency), "txn_id": txn_id}  # fmt: skip
    emit_heard(db, [BalanceAvailable(row.source_id, details)], now=now)
    return True


def release_due(engine: Engine, now: int, *, batch: int = 200) -> int:
    """Release every sale whose hold has ended and whose fee is known; how many.

    Several hosts may run this at once: on PostgreSQL each takes the holds no other has
    locked (``FOR UPDATE SKIP LOCKED``), on SQLite one writer runs at a time; either way
    a hold is deleted once, and the release entry's unique key backs that.
    """
    h = t.ledger_holds
    due = (
        select(h.c.txn_id)
        .where(h.c.release_at <= now, h.c.fee_pending.is_(False))
        .order_by(h.c.release_at)
        .limit(batch)
    )
    released = 0
    while True:
        with engine.connect() as db:  # a read first: an idle scheduler takes no lock
            if db.execute(due.limit(1)).first() is None:
                return released
        with write_transaction(engine) as db:
            query = (
                due.with_for_update(skip_locked=True) if db.dialect.name == "postgresql" else due
            )
            txns = list(db.execute(query).scalars())
            released += sum(release(db, txn, now) for txn in txns)
        if len(txns) < batch:
            return released


def fees_wanted(engine: Engine, *, limit: int = 100) -> list[tuple[str, str]]:
    """Held sales (txn_id, currency) whose platform has not told its fee yet (asked again
    before release)."""
    h = t.ledger_holds
    with engine.connect() as db:
        query = select(h.c.txn_id, h.c.currency).where(h.c.fee_pending.is_(True)).limit(limit)
        return [(row[0], row[1]) for row in db.execute(query)]


def record_fee(db: Connection, txn_id: str, fee: int, now: int) -> bool:
    """The platform's fee of a held sale, told late: on the purchase and in the ledger, and
    the sale free to be released. False when it was recorded before."""
    h, u = t.ledger_holds, t.purchases
    done = db.execute(
        update(h).where(h.c.txn_id == txn_id, h.c.fee_pending.is_(True)).values(fee_pending=False)
    )
    if done.rowcount != 1:
        return False
    sale = db.execute(select(u.c.source_id, u.c.currency, u.c.payment_platform).where(
        u.c.txn_id == txn_id)).one()  # fmt: skip
    db.execute(update(u).where(u.c.txn_id == txn_id).values(fee=text(fee, sale.currency)))
    if fee:
        append_once(
            db,
            source_id=sale.source_id,
            currency=sale.currency,
            test=sale.payment_platform == "test",
            kind="fee",
            reference=txn_id,
            txn_id=txn_id,
            pending=-fee,
            available=0,
            created_at=now,
        )
    return True


def refund_debit(
    db: Connection,
    *,
    kind: str,
    reference: str,
    txn_id: str,
    amount: int,
    refunded_before: int,
    now: int,
    reason: str | None = None,
) -> int | None:
    """Debit the seller for ``amount`` of a store sale given back to its buyer.

    The seller gives back the amount less the commission's share of it (the operator
    returns its commission in proportion: over every refund of a sale, exactly the
    commission); the platform's fee is not returned by the platform, so it stays as the
    sale recorded it. Taken from pending while the sale is held, else from available.
    """
    u = t.purchases
    sale = db.execute(
        select(u.c.source_id, u.c.currency, u.c.total, u.c.commission, u.c.payment_platform).where(
            u.c.txn_id == txn_id
        )
    ).one()
    gross = to_minor(sale.total, sale.currency)
    commission = to_minor(sale.commission, sale.currency)
    returned = share(commission, refunded_before + amount, gross) - share(
        commission, refunded_before, gross
    )
    debit = amount - returned
    pending = held(db, txn_id)
    return append_once(
        db,
        source_id=sale.source_id,
        currency=sale.currency,
        test=sale.payment_platform == "test",
        kind=kind,
        reference=reference,
        txn_id=txn_id,
        pending=-debit if pending else 0,
        available=0 if pending else -debit,
        reason=reason,
        created_at=now,
    )


def balances(db: Connection, source_id: int) -> list[Balance]:
    """The source's balances per currency (test money apart), sums of its entries."""
    e = t.ledger_entries
    rows = db.execute(
        select(e.c.currency, e.c.test, func.sum(e.c.pending), func.sum(e.c.available))
        .where(e.c.source_id == source_id)
        .group_by(e.c.currency, e.c.test)
        .order_by(e.c.test, e.c.currency)
    )
    return [Balance(r[0], bool(r[1]), int(r[2] or 0), int(r[3] or 0)) for r in rows]


def releasing_by(db: Connection, source_id: int, currency: str, test: bool, until: int) -> int:
    """What the source's held sales in that currency will make available by ``until``."""
    e, h = t.ledger_entries, t.ledger_holds
    found = db.execute(
        select(func.sum(e.c.pending))
        .select_from(e.join(h, h.c.txn_id == e.c.txn_id))
        .where(
            h.c.source_id == source_id,
            h.c.currency == currency,
            h.c.test == test,
            h.c.release_at <= until,
        )
    ).scalar()
    return int(found or 0)


def adjust(
    engine: Engine,
    *,
    source_id: int,
    currency: str,
    test: bool,
    amount: int,
    reason: str,
    reference: str,
    now: int,
) -> int | None:
    """An operator's adjustment of the available balance, with its reason; once per
    ``reference`` (None when that reference was written before)."""
    with engine.begin() as db:
        return append_once(
            db,
            source_id=source_id,
            currency=currency,
            test=test,
            kind="adjustment",
            reference=reference,
            pending=0,
            available=amount,
            reason=reason,
            created_at=now,
        )


def entries(engine: Engine, source_id: int) -> list[EntryRecord]:
    """Every entry of the source, oldest first (for the operator and the tests)."""
    e = t.ledger_entries
    with engine.connect() as db:
        rows = db.execute(select(e).where(e.c.source_id == source_id).order_by(e.c.seq))
        return [entry_record(row) for row in rows]
