"""Discount codes: made by a seller for a package, entered by a buyer, used by a payment.

A use is claimed by the payment that applies the code, in the transaction that starts it
(:func:`claim_use`: one conditional UPDATE, ``uses < max_uses``; the database decides a race
on the last use, and a CHECK holds ``uses <= max_uses`` besides), given back when that payment
fails, and the buyer's entry of the code is spent when it completes: a code is applied once
per purchase, and a buyer's entry to one purchase.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine, and_, delete, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from pkgcat.events import DiscountCreated, DiscountEnded
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Discount, DiscountState
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.shop.log import changed, owned


def _state(row: object, now: int) -> DiscountState:
    if row.ended_at is not None or row.ends_at <= now:  # type: ignore[attr-defined]  # a Row
        return "ended"
    return "used_up" if row.uses >= row.max_uses else "active"  # type: ignore[attr-defined]


def _read(db: Connection, where: object, now: int) -> list[Discount]:
    d, p = t.discount_codes, t.packages
    rows = db.execute(
        select(d, p.c.package.label("package_name"))
        .join(p, p.c.id == d.c.package_id)
        .where(where)  # type: ignore[arg-type]  # a column expression
        .order_by(d.c.created_at, d.c.code)
    ).all()
    return [
        Discount(
            row.id, row.code, row.package_name, row.kind, row.value, row.max_uses, row.uses,
            row.ends_at, _state(row, now), row.created_at, row.created_by,
        )
        for row in rows
    ]  # fmt: skip


def create(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    discount_id: str,
    code: str,
    kind: str,
    max_uses: int,
    ends_at: int,
    check: Callable[[str | None, str], str],
    actor: str,
    now: int,
) -> Discount:
    """A new code for the package; ``check(list price, currency)`` runs under its lock and
    says the value stored (a whole percentage, or an amount in the currency's minor units)."""
    d = t.discount_codes
    try:
        with write_transaction(engine) as db:
            found = owned(db, source_id, package)
            value = check(found.price, found.currency)
            db.execute(
                d.insert().values(
                    id=discount_id, code=code, source_id=source_id, package_id=found.id,
                    kind=kind, value=value, max_uses=max_uses, uses=0, ends_at=ends_at,
                    created_at=now, created_by=actor,
                )
            )  # fmt: skip
            facts = {
                "code": code, "kind": kind, "value": value, "max_uses": max_uses,
                "ends_at": ends_at,
            }  # fmt: skip
            changed(db, found, actor, DiscountCreated, facts, now)
            return _read(db, d.c.id == discount_id, now)[0]
    except IntegrityError:
        raise ShopRefused("code", f"{code!r} is taken; choose another", "conflict") from None


def listed(engine: Engine, source_id: int, package: str, now: int) -> list[Discount]:
    with engine.connect() as db:
        found = owned(db, source_id, package, lock=False)
        return _read(db, t.discount_codes.c.package_id == found.id, now)


def end(engine: Engine, source_id: int, code: str, *, actor: str, now: int) -> Discount:
    """End the source's code ``code`` now; its uses stay counted."""
    d, p = t.discount_codes, t.packages
    with write_transaction(engine) as db:
        row = db.execute(
            select(d.c.id, p.c.package)
            .join(p, p.c.id == d.c.package_id)
            .where(d.c.code == code, d.c.source_id == source_id)
        ).first()
        if row is None:
            raise ShopRefused("code", f"this source has no discount code {code!r}", "missing")
        found = owned(db, source_id, row.package)
        done = db.execute(
            update(d).where(d.c.id == row.id, d.c.ended_at.is_(None)).values(ended_at=now)
        )
        if done.rowcount != 1:
            raise ShopRefused("code", f"{code!r} is ended already", "conflict")
        discount = _read(db, d.c.id == row.id, now)[0]
        changed(db, found, actor, DiscountEnded, {"code": code, "uses": discount.uses}, now)
        return discount


def find(engine: Engine, code: str, now: int) -> Discount | None:
    """The code as a buyer typed it (upper-cased by the caller), any state."""
    with engine.connect() as db:
        found = _read(db, t.discount_codes.c.code == code, now)
    return found[0] if found else None


def enter(engine: Engine, buyer_id: int, discount_id: str, now: int) -> None:
    """Keep the code for the buyer's next purchase of its package (entered twice: once)."""
    b = t.buyer_discounts
    with engine.begin() as db:
        key = and_(b.c.buyer_id == buyer_id, b.c.discount_id == discount_id)
        if db.execute(select(b.c.buyer_id).where(key)).first() is None:
            try:
                with db.begin_nested():
                    db.execute(
                        b.insert().values(
                            buyer_id=buyer_id, discount_id=discount_id, entered_at=now
                        )
                    )
            except IntegrityError:
                pass  # the same code entered at the same moment on another device


def pending(db: Connection, buyer_id: int, package_id: int, now: int) -> Discount | None:
    """The buyer's entered code for the package that is still usable (the latest entered)."""
    b, d = t.buyer_discounts, t.discount_codes
    row = db.execute(
        select(d.c.id)
        .join(b, b.c.discount_id == d.c.id)
        .where(
            b.c.buyer_id == buyer_id,
            d.c.package_id == package_id,
            d.c.ended_at.is_(None),
            d.c.ends_at > now,
            d.c.uses < d.c.max_uses,
        )
        .order_by(b.c.entered_at.desc())
        .limit(1)
    ).scalar()
    return None if row is None else _read(db, d.c.id == row, now)[0]


def claim_use(db: Connection, discount_id: str, now: int) -> bool:
    """One use of the code, for the payment starting in this transaction; False when none is
    left (or it ended). The row's lock (PostgreSQL) or the write lock (SQLite) orders racers,
    and each re-reads ``uses`` before it adds one."""
    d = t.discount_codes
    done = db.execute(
        update(d)
        .where(
            d.c.id == discount_id, d.c.uses < d.c.max_uses, d.c.ended_at.is_(None),
            d.c.ends_at > now,
        )
        .values(uses=d.c.uses + 1)
    )  # fmt: skip
    return done.rowcount == 1


def release_use(db: Connection, discount_id: str) -> None:
    """Give back the use of a payment that failed."""
    d = t.discount_codes
    db.execute(update(d).where(d.c.id == discount_id, d.c.uses > 0).values(uses=d.c.uses - 1))


def spent_by(db: Connection, buyer_id: int, discount_id: str) -> None:
    """The buyer's entry of the code is used by a completed purchase."""
    b = t.buyer_discounts
    db.execute(delete(b).where(b.c.buyer_id == buyer_id, b.c.discount_id == discount_id))


def forget(engine: Engine, buyer_id: int, discount_id: str) -> None:
    """Drop the buyer's entry (its code is used up: the next purchase pays without it)."""
    with engine.begin() as db:
        spent_by(db, buyer_id, discount_id)
