"""Refunds and chargebacks of store sales: their rows, the purchase's status, the ledger.

A refund the seller asks for is written ``pending`` before the platform is asked (with
the refund's id as the platform's idempotency key), then ``succeeded`` or ``failed``. A
pending refund counts as refunded already, so a platform's own report of it
(``charge.refunded``) arriving first adds nothing; a refund the platform reports that no
row accounts for (one made in its dashboard) is written as ``origin`` platform. The
refund that brings a sale's refunds to its whole gross makes the purchase ``Refunded``:
the device no longer owns it, and ``sale.refunded`` is written to the outbox.

Every function locks the purchase's row first (``FOR UPDATE`` on PostgreSQL, the writer's
lock on SQLite), so two refunds of one sale, or a refund and its report, add up.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, select, update

from pkgcat.money.amounts import text, to_minor
from pkgcat.storage import ledger
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.store import COMPLETED, record_refund, written_by_the_store


class RefundRefused(Exception):
    """A refund that cannot be made: ``parameter`` names what is wrong (txn_id, amount)."""

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(problem)
        self.parameter = parameter
        self.problem = problem


@dataclass(frozen=True, slots=True)
class RefundRecord:
    id: str
    source_id: int
    txn_id: str
    amount: int
    currency: str
    origin: str
    status: str
    platform: str
    platform_refund_id: str | None
    failure: str | None
    request_key: str | None
    created_at: int


def _record(row: Any, platform: str) -> RefundRecord:
    m = row._mapping
    return RefundRecord(
        m["id"], m["source_id"], m["txn_id"], int(m["amount"]), m["currency"], m["origin"],
        m["status"], platform, m["platform_refund_id"], m["failure"], m["request_key"],
        m["created_at"],
    )  # fmt: skip


def _sale(db: Connection, txn_id: str, source_id: int | None = None) -> Any:
    """The store's own purchase of that reference (of that source), its row locked."""
    u = t.purchases
    query = select(
        u.c.source_id, u.c.txn_id, u.c.total, u.c.currency, u.c.status, u.c.payment_platform
    ).where(u.c.txn_id == txn_id, written_by_the_store())
    if source_id is not None:
        query = query.where(u.c.source_id == source_id)
    if db.dialect.name == "postgresql":
        query = query.with_for_update(of=u)
    return db.execute(query).first()


def refunded(db: Connection, txn_id: str, *, besides: str | None = None) -> int:
    """What is refunded of the sale, or being refunded (pending), in minor units."""
    r = t.store_refunds
    query = select(func.sum(r.c.amount)).where(r.c.txn_id == txn_id, r.c.status != "failed")
    if besides is not None:
        query = query.where(r.c.id != besides)
    return int(db.execute(query).scalar() or 0)


def _new_id() -> str:
    return f"rf_{secrets.token_hex(12)}"


def start(
    engine: Engine,
    *,
    source_id: int,
    txn_id: str,
    amount: int | None,
    request_key: str | None,
    platform: str,
    now: int,
) -> RefundRecord:
    """A pending refund of ``amount`` (None: all that is left) of the source's store sale.

    The same ``request_key`` again returns the refund it made, whatever its state (the
    caller finishes a pending one); with another sale or amount it is refused.
    RefundRefused for a sale that is not the source's, not the store's, not completed, of
    another platform, or an amount above what is left to refund.
    """
    r = t.store_refunds
    with write_transaction(engine) as db:
        sale = _sale(db, txn_id, source_id)
        if request_key is not None:
            kept = db.execute(
                select(r).where(r.c.source_id == source_id, r.c.request_key == request_key)
            ).first()
            if kept is not None:
                if kept.txn_id != txn_id or (amount is not None and kept.amount != amount):
                    raise RefundRefused(
                        "request_key", "this key was used for another refund; use a new one"
                    )
                return _record(kept, sale.payment_platform if sale else platform)
        if sale is None:
            raise RefundRefused("txn_id", f"no store purchase {txn_id!r} in this source")
        if sale.status != COMPLETED:
            raise RefundRefused("txn_id", f"the purchase {txn_id} is {sale.status}")
        if sale.payment_platform != platform:
            raise RefundRefused(
                "txn_id",
                f"the purchase {txn_id} was paid through {sale.payment_platform}, "
                f"not through this store's platform ({platform})",
            )
        left = to_minor(sale.total, sale.currency) - refunded(db, txn_id)
        wanted = left if amount is None else amount
        if wanted <= 0 or wanted > left:
            raise RefundRefused(
                "amount",
                f"between 0 and {text(left, sale.currency)} {sale.currency} is left to refund"
                if left > 0
                else f"the purchase {txn_id} is refunded whole already",
            )
        refund_id = _new_id()
        db.execute(
            insert(r).values(
                id=refund_id, source_id=source_id, txn_id=txn_id, amount=wanted,
                currency=sale.currency, origin="seller", status="pending",
                request_key=request_key, created_at=now, updated_at=now,
            )
        )  # fmt: skip
        return _record(db.execute(select(r).where(r.c.id == refund_id)).one(), platform)


def _apply(db: Connection, refund_id: str, txn_id: str, amount: int, now: int) -> None:
    """The ledger's debit of a refund that succeeded, and the purchase Refunded once whole."""
    sale = _sale(db, txn_id)
    before = refunded(db, txn_id, besides=refund_id)
    ledger.refund_debit(
        db, kind="refund", reference=refund_id, txn_id=txn_id, amount=amount,
        refunded_before=before, now=now,
    )  # fmt: skip
    if before + amount >= to_minor(sale.total, sale.currency):
        record_refund(db, sale.payment_platform, txn_id, "Refunded")


def succeed(engine: Engine, refund_id: str, platform_refund_id: str, now: int) -> RefundRecord:
    """The platform made the refund: recorded, debited, the purchase Refunded when whole."""
    r = t.store_refunds
    with write_transaction(engine) as db:
        row = db.execute(select(r).where(r.c.id == refund_id)).one()
        _sale(db, row.txn_id)  # its lock first, as every refund takes them
        row = db.execute(select(r).where(r.c.id == refund_id)).one()
        if row.status == "pending":
            db.execute(
                update(r)
                .where(r.c.id == refund_id)
                .values(status="succeeded", platform_refund_id=platform_refund_id,
                        updated_at=now)
            )  # fmt: skip
            _apply(db, refund_id, row.txn_id, int(row.amount), now)
        sale = _sale(db, row.txn_id)
        return _record(db.execute(select(r).where(r.c.id == refund_id)).one(),
                       sale.payment_platform)  # fmt: skip


def fail(engine: Engine, refund_id: str, reason: str, now: int) -> None:
    """The platform refused the refund: nothing is refunded, the reason kept."""
    r = t.store_refunds
    with write_transaction(engine) as db:
        db.execute(
            update(r)
            .where(r.c.id == refund_id, r.c.status == "pending")
            .values(status="failed", failure=reason[:500], updated_at=now)
        )


def follow_platform(
    db: Connection, platform: str, txn_id: str, refunded_total: int | None, now: int
) -> bool:
    """The platform says ``refunded_total`` of the sale is refunded (Stripe's
    ``charge.refunded``, cumulative; None: all of it): what no refund row accounts for is
    written as one, and debited; the purchase becomes Refunded once whole. False: not a
    store sale of it."""
    sale = _sale(db, txn_id)
    if sale is None or sale.payment_platform != platform:
        return False
    if refunded_total is None:
        refunded_total = to_minor(sale.total, sale.currency)
    so_far = refunded(db, txn_id)
    unaccounted = refunded_total - so_far
    if unaccounted > 0:
        refund_id = _new_id()
        db.execute(
            insert(t.store_refunds).values(
                id=refund_id, source_id=sale.source_id, txn_id=txn_id, amount=unaccounted,
                currency=sale.currency, origin="platform", status="succeeded",
                created_at=now, updated_at=now,
            )
        )  # fmt: skip
        _apply(db, refund_id, txn_id, unaccounted, now)
    elif refunded_total >= to_minor(sale.total, sale.currency):
        record_refund(db, platform, txn_id, "Refunded")
    return True


def chargeback(db: Connection, platform: str, txn_id: str, now: int) -> bool:
    """A dispute: what is not refunded yet debited from the seller, the purchase Chargeback."""
    sale = _sale(db, txn_id)
    if sale is None or sale.payment_platform != platform:
        return False
    so_far = refunded(db, txn_id)
    left = to_minor(sale.total, sale.currency) - so_far
    if left > 0:
        ledger.refund_debit(
            db, kind="chargeback", reference=txn_id, txn_id=txn_id, amount=left,
            refunded_before=so_far, now=now, reason="disputed by the buyer",
        )  # fmt: skip
    return record_refund(db, platform, txn_id, "Chargeback")


def of_sale(engine: Engine, txn_id: str) -> list[RefundRecord]:
    r, u = t.store_refunds, t.purchases
    with engine.connect() as db:
        platform = db.execute(select(u.c.payment_platform).where(u.c.txn_id == txn_id)).scalar()
        rows = db.execute(select(r).where(r.c.txn_id == txn_id).order_by(r.c.created_at))
        return [_record(row, platform or "") for row in rows]


def stale(engine: Engine, *, before: int, limit: int = 50) -> list[RefundRecord]:
    """Refunds still pending since before ``before``: their request was cut short."""
    r, u = t.store_refunds, t.purchases
    with engine.connect() as db:
        rows = db.execute(
            select(r, u.c.payment_platform)
            .join(u, u.c.txn_id == r.c.txn_id)
            .where(r.c.status == "pending", r.c.created_at < before)
            .limit(limit)
        )
        return [_record(row, row.payment_platform) for row in rows]


def sale_currency(engine: Engine, source_id: int, txn_id: str) -> str | None:
    """The currency of the source's store sale ``txn_id``; None when there is no such sale."""
    u = t.purchases
    with engine.connect() as db:
        found = db.execute(
            select(u.c.currency).where(
                u.c.txn_id == txn_id, u.c.source_id == source_id, written_by_the_store()
            )
        ).scalar()
    return None if found is None else str(found)
