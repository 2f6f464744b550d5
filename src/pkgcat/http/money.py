"""The seller's money through the API: ``source/balance``, ``source/payouts`` and
``purchase/refund``.

Each reads or writes only the caller's own source's money, through
:class:`~pkgcat.money.service.Money` (synchronous: run in a thread). The reads are
never kept by the response cache: the ledger moves with sales, releases and payouts,
which the catalogue's generation does not follow. The refund is a write of fields,
done once per ``Idempotency-Key`` as the webhook writes are; the key is also what the
refund is made under at the platform, so a retry after a failure on the server's side
finishes the same refund.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, NamedTuple, TypeVar
from zoneinfo import ZoneInfo

import anyio
from sqlalchemy import Engine

from pkgcat import models
from pkgcat.config import Settings
from pkgcat.domain import Caller
from pkgcat.errors import InternalError, InvalidArgument, Unavailable
from pkgcat.http.errors import envelope
from pkgcat.http.idempotency import idempotency_key, idempotent
from pkgcat.http.operations import BY_NAME, CURSOR, LIMIT
from pkgcat.http.params import Query
from pkgcat.http.uploads import Incoming
from pkgcat.http.webhooks import read_fields
from pkgcat.money.errors import NoPlatform, PlatformRefused, PlatformUnavailable
from pkgcat.money.service import CurrencyBalance, EntryView, Money, PayoutView, RefundView
from pkgcat.storage.writes.idempotency import Answers

T = TypeVar("T")
_REFUND = BY_NAME["purchase/refund"]
_TXN_ID, _AMOUNT = _REFUND.parameter("txn_id"), _REFUND.parameter("amount")


class Desk:
    """The worker's money use cases, opened at their first use on the worker's engine."""

    def __init__(self, settings: Settings, engine: Callable[[], Engine]) -> None:
        self._settings = settings
        self._engine = engine
        self._money: Money | None = None
        self._opening = threading.Lock()  # calls come from several threads at once
        self.answers = Answers(
            engine, ttl=settings.idempotency_seconds, bound=settings.idempotency_claim_seconds
        )
        """The refunds' answers kept under an ``Idempotency-Key``, as uploads keep theirs."""

    def money(self) -> Money:
        with self._opening:
            if self._money is None:
                from pkgcat.store.platforms import money_platform_for

                platform = money_platform_for(self._settings)
                self._money = Money(self._settings, self._engine(), platform)
            return self._money


class Call(NamedTuple):
    """What a money operation's handler is given."""

    desk: Desk
    caller: Caller
    query: Query
    incoming: Incoming


Handler = Callable[[Call], Awaitable[bytes]]


async def _run(call: Callable[[], T]) -> T:
    """``call`` in a thread, the money service's refusals in the envelope's terms."""
    try:
        return await anyio.to_thread.run_sync(call)
    except NoPlatform as error:  # the operator's to set
        raise InternalError(f"this server takes no payments: {error}") from None
    except PlatformUnavailable as error:
        raise Unavailable(str(error)) from None
    except PlatformRefused as error:
        raise InvalidArgument("txn_id", str(error)) from None


def _moment(seconds: int | None, caller: Caller) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, ZoneInfo(caller.timezone)).isoformat()


def balance_body(balance: CurrencyBalance) -> dict[str, Any]:
    following = balance.next_payout
    return {
        "currency": balance.currency,
        "test": balance.test,
        "pending": models.amount(balance.pending),
        "available": models.amount(balance.available),
        "next_payout": {
            "date": following.on.isoformat(),
            "amount": models.amount(following.amount),
            "minimum": models.amount(following.minimum),
            "blocked": following.blocked,
        },
    }


def entry_body(entry: EntryView, caller: Caller) -> dict[str, Any]:
    return {
        "kind": entry.kind,
        "reference": entry.reference,
        "txn_id": entry.txn_id,
        "pending": models.amount(entry.pending),
        "available": models.amount(entry.available),
        "reason": entry.reason,
        "created_at": _moment(entry.created_at, caller),
    }


def payout_body(payout: PayoutView, caller: Caller) -> dict[str, Any]:
    return {
        "id": payout.id,
        "currency": payout.currency,
        "test": payout.test,
        "period": payout.period.isoformat(),
        "amount": models.amount(payout.amount),
        "status": payout.status,
        "failure_code": payout.failure_code,
        "failure_message": payout.failure_message,
        "created_at": _moment(payout.created_at, caller),
        "settled_at": _moment(payout.settled_at, caller),
        "entries": [entry_body(e, caller) for e in payout.entries],
    }


def refund_body(refund: RefundView) -> dict[str, Any]:
    return {
        "id": refund.id,
        "txn_id": refund.txn_id,
        "amount": models.amount(refund.amount),
        "currency": refund.currency,
        "status": refund.status,
        "test": refund.test,
        "platform_refund_id": refund.platform_refund_id,
    }


async def balance(call: Call) -> bytes:
    desk, caller, _, _ = call
    found = await _run(lambda: desk.money().balance(caller.application.source_id))
    return envelope({"balances": [balance_body(b) for b in found]})


async def payouts(call: Call) -> bytes:
    desk, caller, query, _ = call
    limit = LIMIT.page_size(query)
    cursor = CURSOR.cursor(query)
    source = caller.application.source_id
    page = await _run(lambda: desk.money().payouts(source, cursor=cursor, limit=limit))
    return envelope(
        {
            "payouts": [payout_body(p, caller) for p in page.payouts],
            "limit": limit,
            "has_more": page.cursor is not None,
            "cursor": page.cursor,
        }
    )


async def refund(call: Call) -> bytes:
    desk, caller, _, incoming = call
    key = idempotency_key(incoming)
    fields, raw = await read_fields(incoming)
    txn_id = _TXN_ID.identifier(fields)
    amount = _AMOUNT.text(fields)
    source = caller.application.source_id
    # The platform's key: the API's, of this application (another's same key is another
    # refund); without one, a refund of its own each time.
    platform_key = None if key is None else f"{caller.application.id}:{key}"

    async def done() -> bytes:
        made = await _run(lambda: desk.money().refund(source, txn_id, amount, key=platform_key))
        return envelope(refund_body(made))

    digest = hashlib.sha256(raw).hexdigest()
    return await idempotent(desk.answers, caller.application.id, key, _REFUND.name, digest, done)


HANDLERS: dict[str, Handler] = {
    "source/balance": balance,
    "source/payouts": payouts,
    "purchase/refund": refund,
}
