"""What a payment platform's event does to the purchases and the ledger, as a function of
the transaction that applies it (:func:`pkgcat.storage.store.apply_event`: the event's id
and its effect commit together, once)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import Connection, update

from pkgcat.storage import money, payouts, refunds
from pkgcat.storage import schema as t
from pkgcat.storage import store as db
from pkgcat.store.stripe_money_events import AccountChange, PayoutChange, TransferReversed

if TYPE_CHECKING:
    from pkgcat.store.stripe_platform import Change  # the stripe extra

    Effect = Callable[[Connection], object]

log = logging.getLogger("pkgcat.money")
PLATFORM = "stripe"


def effect_of(change: object, now: int, terms: db.SaleTerms) -> Effect:
    """The effect of one of Stripe's events. Only the store's own payments, the purchases
    they wrote, the sellers' accounts and the payouts the ledger made are changed."""
    if isinstance(change, AccountChange):
        return lambda connection: money.account_updated(
            connection,
            change.account_id,
            payouts_enabled=change.payouts_enabled,
            details_submitted=change.details_submitted,
            disabled_reason=change.disabled_reason,
            now=now,
        )
    if isinstance(change, PayoutChange):
        return lambda connection: _payout_outcome(connection, change, now)
    if isinstance(change, TransferReversed):
        return lambda connection: _reversed(connection, change.transfer_id, now)
    return _sale_effect(change, now, terms)  # type: ignore[arg-type]  # the store's Change


def _sale_effect(change: Change, now: int, terms: db.SaleTerms) -> Effect:
    if change.kind == "complete":
        return lambda connection: db.complete_payment(
            connection, change.payment_id, change.txn_id, now, platform=PLATFORM, terms=terms
        )
    if change.kind == "fail":
        return lambda connection: db.fail_open_payment(connection, change.payment_id, PLATFORM)
    if change.kind == "refund":
        return lambda connection: refunds.follow_platform(
            connection, PLATFORM, change.txn_id, change.refunded, now
        )
    return lambda connection: refunds.chargeback(connection, PLATFORM, change.txn_id, now)


def _payout_outcome(connection: Connection, change: PayoutChange, now: int) -> bool:
    found = payouts.by_platform_id(connection, change.platform_payout_id)
    if found is None and change.payout_id is not None:
        found = payouts.by_id(connection, change.payout_id)
    if found is None or found.test:
        return False  # a payout the ledger did not make (the seller's own, say)
    if change.paid:
        return payouts.paid(connection, found.id, now)
    return payouts.fail(connection, found.id, code=change.code, message=change.message, now=now)


def _reversed(connection: Connection, transfer_id: str, now: int) -> bool:
    """A payout's transfer taken back on the platform (its dashboard, or the scheduler after
    a failed payout): the seller is owed the amount again, once."""
    found = payouts.by_transfer(connection, transfer_id)
    if found is None:
        return False
    p = t.payouts
    connection.execute(
        update(p)
        .where(p.c.id == found.id, p.c.reversal_id.is_(None))
        .values(reversal_id=f"reversed:{transfer_id}", updated_at=now)
    )
    return payouts.fail(
        connection, found.id, code="transfer_reversed",
        message="the payout's transfer was reversed on the platform", now=now,
    )  # fmt: skip
