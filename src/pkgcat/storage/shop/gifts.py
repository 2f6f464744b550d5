"""Gift codes and gifts: a purchase of ``payment_platform`` ``gift``, total 0, owned through
purchases like any other (no second way to own a package).

A code is redeemed by one conditional UPDATE (not redeemed yet, not expired) in the
transaction that records its purchase: of two redemptions at once, on any worker or host,
the database lets one update the row and the other finds it redeemed, and nothing of the
loser is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Engine, select, update
from sqlalchemy.engine import Connection

from pkgcat.events import GiftCodesCreated, GiftGiven
from pkgcat.money import amounts
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import GiftCode, GiftState
from pkgcat.storage import schema as t
from pkgcat.storage import store
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.shop.log import Owned, changed, owned


@dataclass(frozen=True, slots=True)
class NewCode:
    """A code about to be stored: its id, the SHA-256 of the code, its last characters."""

    id: str
    code_hash: str
    hint: str


def _state(row: object, now: int) -> GiftState:
    if row.redeemed_at is not None:  # type: ignore[attr-defined]  # a Row
        return "redeemed"
    return "expired" if row.expires_at <= now else "open"  # type: ignore[attr-defined]


def _read(db: Connection, where: object, now: int) -> list[GiftCode]:
    g, p, b = t.gift_codes, t.packages, t.buyers
    rows = db.execute(
        select(g, p.c.package.label("package_name"), b.c.email)
        .join(p, p.c.id == g.c.package_id)
        .outerjoin(b, b.c.id == g.c.buyer_id)
        .where(where)  # type: ignore[arg-type]  # a column expression
        .order_by(g.c.created_at, g.c.id)
    ).all()
    return [
        GiftCode(
            row.id, row.hint, row.package_name, _state(row, now), row.created_at,
            row.created_by, row.expires_at, row.recipient, row.redeemed_at, row.email,
            row.txn_id,
        )
        for row in rows
    ]  # fmt: skip


def _insert(
    db: Connection, found: Owned, codes: Sequence[NewCode], expires_at: int, actor: str,
    now: int, recipient: str | None = None,
) -> None:  # fmt: skip
    db.execute(
        t.gift_codes.insert(),
        [
            {
                "id": code.id, "code_hash": code.code_hash, "hint": code.hint,
                "source_id": found.source_id, "package_id": found.id, "created_at": now,
                "created_by": actor, "expires_at": expires_at, "recipient": recipient,
            }
            for code in codes
        ],
    )  # fmt: skip


def create_codes(
    engine: Engine,
    source_id: int,
    package: str,
    codes: Sequence[NewCode],
    *,
    expires_at: int,
    actor: str,
    now: int,
) -> list[GiftCode]:
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        _insert(db, found, codes, expires_at, actor, now)
        facts = {"count": len(codes), "expires_at": expires_at}
        changed(db, found, actor, GiftCodesCreated, facts, now)
        return _read(db, t.gift_codes.c.id.in_([code.id for code in codes]), now)


def list_codes(engine: Engine, source_id: int, package: str, now: int) -> list[GiftCode]:
    with engine.connect() as db:
        found = owned(db, source_id, package, lock=False)
        return _read(db, t.gift_codes.c.package_id == found.id, now)


def _gift_purchase(
    db: Connection, found: Owned, gift_id: str, buyer_id: int, email: str,
    device: tuple[str, str] | None, now: int,
) -> str:  # fmt: skip
    txn_id = f"gift_{gift_id}"
    store.record_purchase(
        db,
        store.StorePurchase(
            source_id=found.source_id, package_id=found.id, buyer_id=buyer_id, email=email,
            udid=None if device is None else device[0],
            model=None if device is None else device[1],
            total=amounts.text(0, found.currency), currency=found.currency,
            platform=store.GIFT_PLATFORM, txn_id=txn_id, purchased_at=now,
        ),
    )  # fmt: skip
    return txn_id


@dataclass(frozen=True, slots=True)
class Redeemed:
    package: str
    txn_id: str


def redeem(
    engine: Engine, code_hash: str, buyer_id: int, email: str, device: tuple[str, str] | None,
    now: int,
) -> Redeemed:  # fmt: skip
    """Redeem the code for the buyer: its purchase recorded, in one transaction.

    :class:`ShopRefused` (field ``gift_code``) for a code unknown, expired or redeemed, or a
    package the buyer owns already (the code stays unredeemed, for someone else).
    """
    g, p = t.gift_codes, t.packages
    # The write lock from the first read on SQLite (two redemptions queue, the second reads
    # the first's commit); on PostgreSQL the UPDATE below decides.
    with write_transaction(engine) as db:
        row = db.execute(
            select(g.c.id, g.c.package_id, g.c.expires_at, g.c.redeemed_at, p.c.source_id,
                   p.c.package, p.c.online)
            .join(p, p.c.id == g.c.package_id)
            .where(g.c.code_hash == code_hash)
        ).first()  # fmt: skip
        if row is None:
            raise ShopRefused("gift_code", "no such gift code", "missing")
        if row.redeemed_at is not None:
            raise ShopRefused("gift_code", "this gift code has been redeemed already", "conflict")
        if row.expires_at <= now:
            raise ShopRefused("gift_code", "this gift code has expired", "conflict")
        if store.owns_on(db, buyer_id, row.package_id):
            raise ShopRefused("gift_code", f"you own {row.package} already", "conflict")
        txn_id = f"gift_{row.id}"
        won = db.execute(
            update(g)
            .where(g.c.id == row.id, g.c.redeemed_at.is_(None), g.c.expires_at > now)
            .values(redeemed_at=now, buyer_id=buyer_id, txn_id=txn_id)
        )
        if won.rowcount != 1:
            raise ShopRefused("gift_code", "this gift code has been redeemed already", "conflict")
        found = owned(db, row.source_id, row.package, lock=False)
        _gift_purchase(db, found, row.id, buyer_id, email, device, now)
        return Redeemed(row.package, txn_id)


Delivered = Literal["owned", "mailed", "owned_already"]


@dataclass(frozen=True, slots=True)
class Given:
    package: str
    email: str
    delivered: Delivered
    gift_id: str | None
    txn_id: str | None


def _give(
    db: Connection, found: Owned, email: str, code: NewCode, expires_at: int, actor: str,
    now: int,
) -> Given:  # fmt: skip
    b = t.buyers
    buyer_id = db.execute(select(b.c.id).where(b.c.email == email)).scalar()
    if buyer_id is not None and store.owns_on(db, buyer_id, found.id):
        return Given(found.package, email, "owned_already", None, None)
    _insert(db, found, [code], expires_at, actor, now, recipient=email)
    if buyer_id is None:
        delivered: Delivered = "mailed"
        txn_id = None
    else:
        delivered = "owned"
        txn_id = f"gift_{code.id}"
        db.execute(
            update(t.gift_codes)
            .where(t.gift_codes.c.id == code.id)
            .values(redeemed_at=now, buyer_id=buyer_id, txn_id=txn_id)
        )
        _gift_purchase(db, found, code.id, int(buyer_id), email, None, now)
    facts = {"email": email, "delivered": delivered}
    changed(db, found, actor, GiftGiven, facts, now)
    return Given(found.package, email, delivered, code.id, txn_id)


def give(
    engine: Engine,
    source_id: int,
    gifts: Sequence[tuple[str, str, NewCode]],
    *,
    expires_at: int,
    actor: str,
    now: int,
) -> list[Given]:
    """Give each (package, email) its copy, all in one transaction: owned at once by a buyer
    the store knows, else a code kept for the address (the caller mails it after the commit).
    A package the source does not have refuses the whole, naming its row (``row N``)."""
    with write_transaction(engine) as db:
        done: list[Given] = []
        packages: dict[str, Owned] = {}
        for number, (package, email, code) in enumerate(gifts, start=1):
            if package not in packages:
                try:
                    packages[package] = owned(db, source_id, package)
                except ShopRefused as refused:
                    field = "package" if len(gifts) == 1 else f"row {number}: package"
                    raise ShopRefused(field, refused.message, refused.kind) from None
            done.append(_give(db, packages[package], email, code, expires_at, actor, now))
        return done
