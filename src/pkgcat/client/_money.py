"""The records of the money operations (``source/balance``, ``source/payouts``,
``purchase/refund``), and their readers.

These answers are the server's own JSON (no shape B). Amounts are
:class:`~decimal.Decimal` with the currency's decimals as sent; a balance may be below
zero (a refund after a payout, owed until later sales repay it).
"""

from __future__ import annotations

import datetime as dt
from datetime import tzinfo
from decimal import Decimal

from pkgcat.client._shapes import (
    MOMENT,
    answer,
    both,
    each,
    flag,
    integer,
    iso_day,
    mapping,
    nullable,
    record,
    text,
    walk_cursor,
)
from pkgcat.client._shapes import amount as decimal

__all__ = ["Balance", "LedgerEntry", "NextPayout", "Payout", "PayoutsPage", "Refund"]
"""The records, exported by :mod:`pkgcat.client`."""


@record(slots=True)
class NextPayout:
    """The payout the schedule would make next in one currency."""

    date: dt.date = both(iso_day)
    amount: Decimal = both(decimal)
    """Available now, and what is released by then."""
    minimum: Decimal = both(decimal)
    blocked: str | None = nullable(text)
    """Why no payout would be made then; ``None``: one would."""


@record(slots=True)
class Balance:
    """The caller's source's balances in one currency (test money apart)."""

    currency: str = both(text)
    test: bool = both(flag)
    pending: Decimal = both(decimal)
    """Held: store sales not released yet."""
    available: Decimal = both(decimal)
    """Released and not paid out; below zero when the seller owes."""
    next_payout: NextPayout = both(NextPayout)


@record(slots=True)
class LedgerEntry:
    """One entry of the source's ledger."""

    kind: str = both(text)
    reference: str = both(text)
    txn_id: str | None = nullable(text)
    pending: Decimal = both(decimal)
    available: Decimal = both(decimal)
    reason: str | None = nullable(text)
    created_at: dt.datetime = both(MOMENT)


@record(slots=True)
class Payout:
    """One payout of the source, with the ledger entries it paid (its own debit last)."""

    id: str = both(text)
    currency: str = both(text)
    test: bool = both(flag)
    period: dt.date = both(iso_day)
    amount: Decimal = both(decimal)
    status: str = both(text)
    """``pending``, ``in_transit``, ``paid`` or ``failed``."""
    failure_code: str | None = nullable(text)
    failure_message: str | None = nullable(text)
    created_at: dt.datetime = both(MOMENT)
    settled_at: dt.datetime | None = nullable(MOMENT)
    entries: tuple[LedgerEntry, ...] = both(each(LedgerEntry))


@record(slots=True)
class PayoutsPage:
    """A page of the source's payouts, newest first."""

    payouts: tuple[Payout, ...] = both(each(Payout))
    limit: int = both(integer)
    has_more: bool = both(flag)
    cursor: str | None = walk_cursor()


@record(slots=True)
class Refund:
    """A refund of a store purchase."""

    id: str = both(text)
    txn_id: str = both(text)
    amount: Decimal = both(decimal)
    currency: str = both(text)
    status: str = both(text)
    test: bool = both(flag)
    platform_refund_id: str | None = nullable(text)


def read_balances(value: object, zone: tzinfo) -> list[Balance]:
    """The answer's balances, live money first, by currency."""
    found = mapping(value, "response").get("balances")
    return list(each(Balance).read(found, "response.balances", zone))


read_payouts = answer(PayoutsPage)
read_refund = answer(Refund)
