"""The store's storage: buyers, sign-in codes, device tokens, payments and their purchases.

Synchronous SQLAlchemy Core, the same statements on both databases; the store
runs each function in a thread, one transaction each, off the API's hot path.
Codes, tokens and payment secrets arrive here already hashed (SHA-256): their
values are never stored.

A store purchase is written by one function, :func:`record_purchase`, on the
caller's connection, so it commits with the payment's completion and anything
else the same transaction must hold (the webhooks' outbox, say).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    String,
    and_,
    cast,
    delete,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from pkgcat.domain import Claimant
from pkgcat.money import amounts
from pkgcat.storage import ledger, licences
from pkgcat.storage import money as terms_of
from pkgcat.storage import schema as t
from pkgcat.storage.shop import discounts
from pkgcat.storage.writes import outbox

COMPLETED = "Completed"
"""The status of an owning purchase in ``purchases`` (as imported purchases spell it)."""


class TxnTaken(Exception):
    """A store sale whose ``txn_id`` another purchase (an imported one) already has: the
    payment stays open and nothing is written, so the platform's retry applies it once the
    operator has settled which purchase the reference belongs to."""


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A device's sign-in, as stored."""

    buyer_id: int
    email: str
    udid: str
    model: str
    secret_hash: str
    revoked: bool


@dataclass(frozen=True, slots=True)
class ForSale:
    """A package as the store sells it."""

    id: int
    package: str
    source_id: int
    source: str
    price: str | None
    currency: str
    commercial: bool
    online: bool


@dataclass(frozen=True, slots=True)
class StorePurchase:
    """What :func:`record_purchase` writes: one Completed row of ``purchases``."""

    source_id: int
    package_id: int | None
    """None: the whole source (``allowed_for`` = source)."""
    buyer_id: int
    email: str
    udid: str | None
    """None: a gift given to an email address, on no device yet."""
    model: str | None
    total: str
    currency: str
    platform: str
    txn_id: str
    purchased_at: int
    list_price: str | None = None
    """The price before a sale or discount, when one applied (the purchase records it)."""
    discount_code: str | None = None
    discount_id: str | None = None


@dataclass(frozen=True, slots=True)
class SaleTerms:
    """What a store sale is recorded with beyond its price: the deployment's commission (a
    source's own rate overrides it), the hold, and the platform's fee in minor units."""

    commission_percent: Decimal = Decimal(0)
    hold_seconds: int = 30 * 86400
    fee: int | None = None
    """None: the platform reports no fee (test mode), or has not told it yet."""
    fee_pending: bool = False
    """The platform reports fees but has not told this one yet: the sale is not released
    until it has (:func:`pkgcat.storage.ledger.record_fee`)."""


ACCOUNT_PREFIX = "store-buyer-"
GIFT_PLATFORM = "gift"
"""The ``payment_platform`` of a gift's purchase: total 0, nothing for the ledger."""


def account_of(buyer_id: int) -> str:
    """The ``account`` of a store buyer's purchases: how ownership finds them again."""
    return f"{ACCOUNT_PREFIX}{buyer_id}"


def save_code(engine: Engine, email: str, code_hash: str, expires_at: int) -> None:
    """The address's live code, replacing any earlier one."""
    c = t.buyer_codes
    with engine.begin() as db:
        db.execute(delete(c).where(c.c.email == email))
        db.execute(insert(c).values(email=email, code_hash=code_hash, expires_at=expires_at))


def sign_in(
    engine: Engine,
    email: str,
    code_hash: str,
    token_hash: str,
    secret_hash: str,
    udid: str,
    model: str,
    now: int,
) -> int | None:
    """Spend the address's code and issue a device token, in one transaction.

    Returns the buyer's id (the account is made on its first sign-in), or None
    when the code is wrong, expired or already used. An expired code is deleted;
    a wrong one stays, for the throttle to bound the guesses.
    """
    c, b = t.buyer_codes, t.buyers
    with engine.begin() as db:
        found = db.execute(select(c.c.code_hash, c.c.expires_at).where(c.c.email == email)).first()
        if found is None:
            return None
        if found.expires_at < now:
            db.execute(delete(c).where(c.c.email == email))
            return None
        if not hmac.compare_digest(found.code_hash, code_hash):
            return None
        # Spent by exactly one request: of two racing with the same code, one deletes it.
        if (
            db.execute(delete(c).where(c.c.email == email, c.c.code_hash == code_hash)).rowcount
            != 1
        ):
            return None
        buyer_id = db.execute(select(b.c.id).where(b.c.email == email)).scalar()
        if buyer_id is None:
            buyer_id = db.execute(
                insert(b).values(email=email, created_at=now).returning(b.c.id)
            ).scalar_one()
        db.execute(
            insert(t.buyer_tokens).values(
                token_hash=token_hash,
                secret_hash=secret_hash,
                buyer_id=buyer_id,
                udid=udid,
                model=model,
                created_at=now,
            )
        )
        return int(buyer_id)


def buyer_id(engine: Engine, email: str) -> int | None:
    """The id of the buyer of this (lower-case) address, or None when the store has none."""
    with engine.connect() as db:
        found = db.execute(select(t.buyers.c.id).where(t.buyers.c.email == email)).scalar()
    return None if found is None else int(found)


def find_token(engine: Engine, token_hash: str) -> TokenRecord | None:
    k, b = t.buyer_tokens, t.buyers
    query = (
        select(k.c.buyer_id, b.c.email, k.c.udid, k.c.model, k.c.secret_hash, k.c.revoked_at)
        .join(b, b.c.id == k.c.buyer_id)
        .where(k.c.token_hash == token_hash)
    )
    with engine.connect() as db:
        row = db.execute(query).first()
    if row is None:
        return None
    return TokenRecord(
        row.buyer_id, row.email, row.udid, row.model, row.secret_hash, row.revoked_at is not None
    )


def revoke_token(engine: Engine, token_hash: str, now: int) -> None:
    k = t.buyer_tokens
    with engine.begin() as db:
        db.execute(
            update(k)
            .where(k.c.token_hash == token_hash, k.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )


def revoke_buyer(engine: Engine, email: str, now: int) -> int | None:
    """Revoke every token of a buyer; how many were live, or None for an unknown address."""
    k, b = t.buyer_tokens, t.buyers
    with engine.begin() as db:
        buyer_id = db.execute(select(b.c.id).where(b.c.email == email)).scalar()
        if buyer_id is None:
            return None
        done = db.execute(
            update(k)
            .where(k.c.buyer_id == buyer_id, k.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
        return int(done.rowcount)


@dataclass(frozen=True, slots=True)
class BuyerRow:
    email: str
    created_at: int
    devices: int
    """Devices signed in now (tokens not revoked)."""


def list_buyers(engine: Engine) -> list[BuyerRow]:
    b, k = t.buyers, t.buyer_tokens
    with engine.connect() as db:
        buyers = db.execute(select(b.c.id, b.c.email, b.c.created_at).order_by(b.c.email)).all()
        live = db.execute(select(k.c.buyer_id).where(k.c.revoked_at.is_(None))).scalars().all()
    counts: dict[int, int] = {}
    for buyer_id in live:
        counts[buyer_id] = counts.get(buyer_id, 0) + 1
    return [BuyerRow(row.email, row.created_at, counts.get(row.id, 0)) for row in buyers]


def for_sale(engine: Engine, package: str) -> ForSale | None:
    p, s = t.packages, t.sources
    query = (
        select(
            p.c.id,
            p.c.package,
            p.c.source_id,
            s.c.name.label("source"),
            p.c.price,
            p.c.currency,
            p.c.commercial,
            p.c.online,
        )
        .join(s, s.c.id == p.c.source_id)
        .where(p.c.package == package)
    )
    with engine.connect() as db:
        row = db.execute(query).first()
    if row is None:
        return None
    return ForSale(
        row.id,
        row.package,
        row.source_id,
        row.source,
        row.price,
        row.currency,
        bool(row.commercial),
        bool(row.online),
    )


def owned_packages(engine: Engine, buyer_id: int, udid: str) -> list[str]:
    """The packages a buyer holds on a device: bought one by one or through a whole source,
    or whitelisted for the device (:data:`pkgcat.storage.licences.HELD_BY_ACCOUNT`)."""
    with engine.connect() as db:
        found = licences.run(db, licences.HELD_BY_ACCOUNT, (account_of(buyer_id), udid))
    return [row["package"] for row in found]


def owns(engine: Engine, buyer_id: int, udid: str, package: ForSale) -> bool:
    """Whether a buyer on a device holds ``package``: the licence check's one question."""
    claimant = Claimant(account=account_of(buyer_id), udid=udid)
    with engine.connect() as db:
        return licences.held(db, package.source_id, package.id, claimant).owned


def owns_on(db: Connection, buyer_id: int, package_id: int) -> bool:
    """Whether a buyer's account holds a package through its purchases, on the caller's
    connection (inside a gift's transaction: a gift is for an account, not a device); the
    licence check's one statement, asked with no device."""
    source_id = db.execute(select(t.packages.c.source_id).where(t.packages.c.id == package_id))
    claimant = Claimant(account=account_of(buyer_id))
    return licences.held(db, source_id.scalar_one(), package_id, claimant).owned


class DiscountSpent(Exception):
    """The discount code's last use was taken by another purchase: nothing was started."""


def start_payment(
    engine: Engine,
    payment_id: str,
    purchase: StorePurchase,
) -> None:
    """An open payment: nothing is owned until :func:`complete_payment` commits.

    A discount applied claims one use of its code in the same transaction (of two payments
    on the last use, one claims it and the other raises :class:`DiscountSpent`); a payment
    that fails gives it back (:func:`fail_open_payment`).
    """
    with engine.begin() as db:
        if purchase.discount_id is not None and not discounts.claim_use(
            db, purchase.discount_id, purchase.purchased_at
        ):
            raise DiscountSpent(purchase.discount_code)
        db.execute(
            insert(t.store_payments).values(
                id=payment_id,
                buyer_id=purchase.buyer_id,
                udid=purchase.udid,
                model=purchase.model,
                source_id=purchase.source_id,
                package_id=purchase.package_id,
                amount=purchase.total,
                currency=purchase.currency,
                platform=purchase.platform,
                status="open",
                created_at=purchase.purchased_at,
                list_price=purchase.list_price,
                discount_id=purchase.discount_id,
            )
        )


@dataclass(frozen=True, slots=True)
class OpenPayment:
    source_id: int
    amount: str
    currency: str
    platform: str


def open_payment(engine: Engine, payment_id: str) -> OpenPayment | None:
    """The store payment ``payment_id`` while it is open; None otherwise."""
    s = t.store_payments
    with engine.connect() as db:
        row = db.execute(
            select(s.c.source_id, s.c.amount, s.c.currency, s.c.platform).where(
                _payment(payment_id, None)
            )
        ).first()
    return None if row is None else OpenPayment(row[0], row[1], row[2], row[3])


def _payment(payment_id: str, platform: str | None) -> ColumnElement[bool]:
    """The store payment ``payment_id``, still open, of ``platform`` when one is named."""
    s = t.store_payments
    return and_(
        s.c.id == payment_id,
        s.c.status == "open",
        *([] if platform is None else [s.c.platform == platform]),
    )


def complete_payment(
    db: Connection,
    payment_id: str,
    txn_id: str,
    now: int,
    *,
    platform: str | None = None,
    terms: SaleTerms = SaleTerms(),  # frozen: one shared default is safe
) -> bool:
    """Mark an open payment completed and record its purchase, on the caller's transaction.

    False (and nothing written) when the payment is unknown, no longer open, or of
    another platform than ``platform`` (a platform's event completes its own payments
    only): a completion told twice changes the ledger once.
    """
    s = t.store_payments
    done = db.execute(
        update(s).where(_payment(payment_id, platform)).values(status="completed", completed_at=now)
    )
    if done.rowcount != 1:
        return False
    row = db.execute(
        select(s, t.buyers.c.email, t.discount_codes.c.code.label("discount_code"))
        .join(t.buyers, t.buyers.c.id == s.c.buyer_id)
        .outerjoin(t.discount_codes, t.discount_codes.c.id == s.c.discount_id)
        .where(s.c.id == payment_id)
    ).one()
    if row.discount_id is not None:
        discounts.spent_by(db, row.buyer_id, row.discount_id)
    record_purchase(
        db,
        StorePurchase(
            source_id=row.source_id,
            package_id=row.package_id,
            buyer_id=row.buyer_id,
            email=row.email,
            udid=row.udid,
            model=row.model,
            total=row.amount,
            currency=row.currency,
            platform=row.platform,
            txn_id=txn_id,
            purchased_at=now,
            list_price=row.list_price,
            discount_code=row.discount_code,
        ),
        terms,
    )
    return True


def fail_payment(engine: Engine, payment_id: str) -> None:
    """An open payment that failed or was abandoned: it never owns anything."""
    with engine.begin() as db:
        fail_open_payment(db, payment_id)


def fail_open_payment(db: Connection, payment_id: str, platform: str | None = None) -> bool:
    """:func:`fail_payment` on the caller's transaction; False when it was not open (or is
    of another platform than ``platform``)."""
    s = t.store_payments
    done = db.execute(update(s).where(_payment(payment_id, platform)).values(status="failed"))
    if done.rowcount != 1:
        return False
    discount = db.execute(select(s.c.discount_id).where(s.c.id == payment_id)).scalar()
    if discount is not None:
        discounts.release_use(db, discount)
    return True


def written_by_the_store() -> ColumnElement[bool]:
    """Whether a ``purchases`` row is one :func:`complete_payment` wrote, not an imported one.

    No column of ``purchases`` says who wrote a row (an import may name any
    ``payment_platform``, ``txn_id`` and even a store buyer's ``account``), so the row
    is matched to the completed store payment it was written from: the same buyer
    (its account), device, source, package, amount, currency and platform, and the
    completion's time as the purchase's.
    """
    u, s = t.purchases, t.store_payments
    return (
        select(s.c.id)
        .where(
            s.c.status == "completed",
            s.c.platform == u.c.payment_platform,
            u.c.account == literal(ACCOUNT_PREFIX) + cast(s.c.buyer_id, String),
            s.c.udid == u.c.udid,
            s.c.model == u.c.device_model,
            s.c.source_id == u.c.source_id,
            s.c.package_id.is_not_distinct_from(u.c.package_id),
            s.c.amount == u.c.total,
            s.c.currency == u.c.currency,
            s.c.completed_at == u.c.purchased_at,
        )
        .exists()
    )


def record_refund(db: Connection, platform: str, txn_id: str, status: str) -> bool:
    """A store purchase refunded or charged back (``status``), on the caller's transaction.

    The one place a store purchase changes status after its sale: whatever must
    happen with a refund in the same transaction belongs here. Only a purchase the
    store itself made through its checkout changes: one an operator imported, with
    the same platform and reference, is left as it is (:func:`written_by_the_store`).
    False when no store purchase of that platform and reference is in another status.
    """
    u = t.purchases
    done = db.execute(
        update(u)
        .where(
            u.c.payment_platform == platform,
            u.c.txn_id == txn_id,
            u.c.status != status,
            written_by_the_store(),
        )
        .values(status=status)
    )
    if done.rowcount == 0:
        return False
    outbox.emit_sales(db, [txn_id], now=int(time.time()))
    return True


def apply_event(
    engine: Engine, event_id: str, now: int, effect: Callable[[Connection], object]
) -> bool:
    """Apply a platform event once: its id and its effect commit together; False if applied before."""
    try:
        with engine.begin() as db:
            db.execute(insert(t.store_events).values(event_id=event_id, applied_at=now))
            effect(db)
    except IntegrityError:
        # Applied before, or by a request racing this one: nothing changes.
        with engine.connect() as db:
            seen = db.execute(
                select(t.store_events.c.event_id).where(t.store_events.c.event_id == event_id)
            ).first()
        if seen is None:
            raise
        return False
    return True


def record_purchase(
    db: Connection,
    purchase: StorePurchase,
    terms: SaleTerms = SaleTerms(),  # frozen: one shared default is safe
) -> None:
    """Write a store purchase where imported ones land, on the caller's transaction.

    One Completed row of ``purchases`` (the buyer's email as nickname, the store
    account, the device) with its commission and the platform's fee, the seller's
    share credited pending in the ledger, and the device registered for the buyer in
    ``buyer_devices``, so buyers, check, sales and usage see it with no path of
    their own. This is the one place a store sale is written: whatever must
    happen with a sale in the same transaction belongs here. :class:`TxnTaken` when
    another purchase has its ``txn_id`` (the caller's transaction then rolls back).
    """
    u = t.purchases
    if db.execute(select(u.c.id).where(u.c.txn_id == purchase.txn_id)).first() is not None:
        raise TxnTaken(purchase.txn_id)
    gross = amounts.to_minor(purchase.total, purchase.currency)
    gift = purchase.platform == GIFT_PLATFORM
    percent = None if gift else terms_of.commission_percent(db, purchase.source_id)
    # The commission is on what was paid: a sale's or a discount's total; a gift's is 0.
    commission = amounts.commission(gross, terms.commission_percent if percent is None else percent)
    db.execute(
        insert(t.purchases).values(
            source_id=purchase.source_id,
            package_id=purchase.package_id,
            allowed_for="package" if purchase.package_id is not None else "source",
            nickname=purchase.email,
            status=COMPLETED,
            total=purchase.total,
            commission=amounts.text(commission, purchase.currency),
            fee=None if terms.fee is None else amounts.text(terms.fee, purchase.currency),
            currency=purchase.currency,
            purchased_at=purchase.purchased_at,
            txn_id=purchase.txn_id,
            profile_url="",
            payment_platform=purchase.platform,
            account=account_of(purchase.buyer_id),
            udid=purchase.udid,
            device_model=purchase.model,
            list_price=purchase.list_price,
            discount_code=purchase.discount_code,
        )
    )
    outbox.emit_sales(db, [purchase.txn_id], now=int(time.time()))
    if gift:
        # No money passed: nothing for the seller's ledger.
        _register_device(db, purchase)
        return
    ledger.credit_sale(
        db,
        source_id=purchase.source_id,
        txn_id=purchase.txn_id,
        currency=purchase.currency,
        test=purchase.platform == "test",
        gross=gross,
        commission=commission,
        fee=terms.fee,
        release_at=purchase.purchased_at + terms.hold_seconds,
        fee_pending=terms.fee_pending,
        now=purchase.purchased_at,
    )
    _register_device(db, purchase)


def _register_device(db: Connection, purchase: StorePurchase) -> None:
    """The buyer's device, for the operator's views (none for a gift given by email)."""
    if purchase.udid is None:
        return
    d = t.buyer_devices
    known = db.execute(
        select(d.c.udid).where(
            d.c.source_id == purchase.source_id,
            d.c.udid == purchase.udid,
            d.c.nickname == purchase.email,
        )
    ).first()
    if known is None:
        db.execute(
            insert(d).values(
                source_id=purchase.source_id,
                nickname=purchase.email,
                account=account_of(purchase.buyer_id),
                udid=purchase.udid,
                device_model=purchase.model,
            )
        )


def device_owns(engine: Engine, udid: str, machine: str, package: str) -> bool:
    """Whether a device holds ``package``: bought by a buyer who registered it with the
    package's source, or on the package's whitelist (the licence check's one question).

    Cydia's gate (``PKGCAT_STORE_CYDIA_GATE``): the device's ``X-Unique-ID`` and
    ``X-Machine`` headers, as a udid and its model (a registration that records no model
    matches any). Forgeable: the client says them.
    """
    p = t.packages
    with engine.connect() as db:
        found = db.execute(select(p.c.id, p.c.source_id).where(p.c.package == package)).first()
        if found is None:
            return False
        claimant = Claimant.device(udid, machine)
        return licences.held(db, found.source_id, found.id, claimant).owned
