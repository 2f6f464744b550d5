"""The sellers' money as use cases: balances, payouts, refunds, accounts; and the operator's.

Each method is one use case over the worker's (or the command's) engine, synchronous (the
HTTP layer runs it in a thread, as it runs webhooks' management), returning the values
below and raising :class:`pkgcat.errors.InvalidArgument` (naming the parameter) or a
:class:`pkgcat.money.errors.MoneyError`. Amounts come and go as decimals with exactly the
currency's decimals; the ledger keeps minor units (:mod:`pkgcat.money.amounts`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.cursors import Cursors, key_position
from pkgcat.errors import InvalidArgument
from pkgcat.money.amounts import AmountError, from_minor, to_minor
from pkgcat.money.errors import NoPlatform, PlatformRefused, PlatformUnavailable
from pkgcat.money.platform import MoneyPlatform
from pkgcat.money.schedule import DAY, Schedule, day_start, utc_day
from pkgcat.storage import ledger, payouts, refunds
from pkgcat.storage import money as terms

PAYOUTS_LIST = "source/payouts"
"""The list the payouts' cursors are made for (:mod:`pkgcat.cursors`)."""
MAX_LIMIT = 100


@dataclass(frozen=True, slots=True)
class NextPayout:
    on: date
    """The payout date it is for (today: due at the scheduler's next run)."""
    amount: Decimal
    """What would be paid then: available now, and what is released by then."""
    minimum: Decimal
    blocked: str | None
    """Why no payout would be made then (no account, below the minimum...); None: one would."""


@dataclass(frozen=True, slots=True)
class CurrencyBalance:
    currency: str
    test: bool
    pending: Decimal
    available: Decimal
    next_payout: NextPayout


@dataclass(frozen=True, slots=True)
class EntryView:
    seq: int
    kind: str
    reference: str
    txn_id: str | None
    currency: str
    test: bool
    pending: Decimal
    available: Decimal
    reason: str | None
    created_at: int


@dataclass(frozen=True, slots=True)
class PayoutView:
    id: str
    currency: str
    test: bool
    period: date
    amount: Decimal
    status: str
    failure_code: str | None
    failure_message: str | None
    created_at: int
    settled_at: int | None
    entries: tuple[EntryView, ...]
    """The ledger entries it paid (its own debit last)."""


@dataclass(frozen=True, slots=True)
class PayoutPage:
    payouts: tuple[PayoutView, ...]
    cursor: str | None
    """The next page's cursor; None: this is the last."""


@dataclass(frozen=True, slots=True)
class RefundView:
    id: str
    txn_id: str
    amount: Decimal
    currency: str
    status: str
    test: bool
    platform_refund_id: str | None


@dataclass(frozen=True, slots=True)
class Onboarding:
    url: str
    expires_at: int | None
    account_id: str
    ready: bool
    test: bool


def entry_view(entry: ledger.EntryRecord) -> EntryView:
    return EntryView(
        entry.seq, entry.kind, entry.reference, entry.txn_id, entry.currency, entry.test,
        from_minor(entry.pending, entry.currency), from_minor(entry.available, entry.currency),
        entry.reason, entry.created_at,
    )  # fmt: skip


def _amount(value: Decimal | str, currency: str, parameter: str = "amount") -> int:
    try:
        return to_minor(value, currency)
    except AmountError as error:
        raise InvalidArgument(parameter, str(error)) from None


class Money:
    """The money use cases of one deployment, over one engine."""

    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        platform: MoneyPlatform | None,
        *,
        cursors: Cursors | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.schedule = Schedule.of(settings)
        self._engine = engine
        self._platform = platform
        self._cursors = cursors
        self._clock = clock

    def now(self) -> int:
        return int(self._clock())

    # Reads ------------------------------------------------------------------------------

    def balance(self, source_id: int) -> list[CurrencyBalance]:
        """Pending and available per currency (test money apart), and the next payout."""
        now = self.now()
        today = utc_day(now)
        period = self.schedule.period(today)
        found = []
        with self._engine.connect() as db:
            account = terms.account(db, source_id)
            thresholds = terms.thresholds(db, source_id)
            for b in ledger.balances(db, source_id):
                due = not payouts.made_for(self._engine, source_id, b.currency, b.test,
                                           period.isoformat())  # fmt: skip
                on = today if due else self.schedule.next_after(today)
                until = day_start(on) + DAY - 1
                amount = max(b.available + ledger.releasing_by(
                    db, source_id, b.currency, b.test, until), 0)  # fmt: skip
                minimum = self.schedule.minimum(b.currency, thresholds.get(b.currency))
                blocked = _blocked(account, b.test, amount, minimum, b.currency)
                found.append(
                    CurrencyBalance(
                        b.currency, b.test, from_minor(b.pending, b.currency),
                        from_minor(b.available, b.currency),
                        NextPayout(on, from_minor(amount, b.currency),
                                   from_minor(minimum, b.currency), blocked),
                    )
                )  # fmt: skip
        return found

    def _cursors_of(self) -> Cursors:
        if self._cursors is None:
            self._cursors = Cursors.from_hex(terms.cursor_key(self._engine))
        return self._cursors

    def payouts(self, source_id: int, *, cursor: str | None = None, limit: int = 25) -> PayoutPage:
        """The source's payouts, newest first, each with the ledger entries it paid."""
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgument("limit", f"from 1 to {MAX_LIMIT}")
        after = None
        if cursor:
            after = key_position(self._cursors_of().read(cursor, PAYOUTS_LIST, source_id, ()))
        rows, paid = payouts.page(
            self._engine, source_id, after=(after[0], after[1]) if after else None, limit=limit + 1
        )
        more = len(rows) > limit
        rows = rows[:limit]
        views = tuple(
            PayoutView(
                p.id, p.currency, p.test, date.fromisoformat(p.period),
                from_minor(p.amount, p.currency), p.status, p.failure_code, p.failure_message,
                p.created_at, p.settled_at, tuple(entry_view(e) for e in paid[p.id]),
            )
            for p in rows
        )  # fmt: skip
        next_cursor = None
        if more:
            last = rows[-1]
            next_cursor = self._cursors_of().make(
                PAYOUTS_LIST, source_id, (), (last.created_at, last.id)
            )
        return PayoutPage(views, next_cursor)

    def entries(self, source_id: int) -> list[EntryView]:
        """Every ledger entry of the source, oldest first."""
        return [entry_view(e) for e in ledger.entries(self._engine, source_id)]

    # The seller's writes ----------------------------------------------------------------

    def _platform_or_refuse(self) -> MoneyPlatform:
        if self._platform is None:
            raise NoPlatform("the store has no payment platform (PKGCAT_STORE_PLATFORM)")
        return self._platform

    def refund(
        self,
        source_id: int,
        txn_id: str,
        amount: Decimal | str | None = None,
        *,
        key: str | None = None,
    ) -> RefundView:
        """Refund the source's store sale ``txn_id``, all that is left or ``amount`` of it,
        through the platform; once per ``key`` (the request's Idempotency-Key: the same key
        again answers the same refund). Refunded whole, the purchase is Refunded: its
        devices no longer own it. The seller's ledger is debited."""
        currency = refunds.sale_currency(self._engine, source_id, txn_id)
        if currency is None:  # asked first: what is not the source's is refused alike anywhere
            raise InvalidArgument("txn_id", f"no store purchase {txn_id!r} in this source")
        platform = self._platform_or_refuse()
        minor = None if amount is None else _amount(amount, currency)
        try:
            made = refunds.start(
                self._engine, source_id=source_id, txn_id=txn_id, amount=minor,
                request_key=key, platform=platform.name, now=self.now(),
            )  # fmt: skip
        except refunds.RefundRefused as refused:
            raise InvalidArgument(refused.parameter, refused.problem) from None
        if made.status == "pending":
            step = platform.refund(txn_id, made.amount, made.currency, made.id)
            if step.state == "retry":
                raise PlatformUnavailable(
                    f"{platform.name} could not be asked to refund now; send the same request "
                    "again (the same key) and the refund is made once"
                )
            if step.state == "refused":
                refunds.fail(self._engine, made.id, step.message, self.now())
                raise PlatformRefused(f"{platform.name} refused the refund: {step.message}")
            assert step.id is not None
            made = refunds.succeed(self._engine, made.id, step.id, self.now())
        elif made.status == "failed":
            raise PlatformRefused(f"{platform.name} refused the refund: {made.failure}")
        return RefundView(
            made.id, made.txn_id, from_minor(made.amount, made.currency), made.currency,
            made.status, made.platform == "test", made.platform_refund_id,
        )  # fmt: skip

    def connect(self, source_id: int, return_url: str, refresh_url: str) -> Onboarding:
        """The address where the seller connects (or finishes connecting) the account their
        payouts go to: the platform's hosted onboarding (Stripe's account link, valid a few
        minutes: ``refresh_url`` asks for a new one). Test mode connects at once."""
        platform = self._platform_or_refuse()
        known = terms.account_of(self._engine, source_id)
        mine = known.account_id if known is not None and known.test == platform.test else None
        try:
            account_id = platform.connect(source_id, mine)
            link = platform.link(account_id, return_url, refresh_url)
        except Exception as error:  # the platform's library raises its own errors
            raise PlatformUnavailable(f"{platform.name} could not be asked: {error}") from None
        if account_id != mine:
            terms.save_account(self._engine, source_id, account_id, test=platform.test,
                               ready=link.ready, now=self.now())  # fmt: skip
        return Onboarding(link.url, link.expires_at, account_id, link.ready, platform.test)

    def set_threshold(self, source_id: int, currency: str, amount: Decimal | str | None) -> None:
        """The source's own least payout in ``currency``, above the deployment's minimum;
        None: the deployment's minimum alone."""
        currency = currency.upper()
        minor = None if amount is None else _amount(amount, currency)
        if minor is not None and minor < self.schedule.minimum(currency):
            least = from_minor(self.schedule.minimum(currency), currency)
            raise InvalidArgument("amount", f"at least the minimum payout, {least} {currency}")
        terms.set_threshold(self._engine, source_id, currency, minor)

    # The operator's writes --------------------------------------------------------------

    def set_commission(self, source_id: int, percent: Decimal | str | None) -> None:
        """The source's commission rate for its sales from now on; None: the deployment's."""
        value = None
        if percent is not None:
            try:
                value = Decimal(percent)
            except InvalidOperation:
                value = Decimal("NaN")
            if not value.is_finite() or not 0 <= value <= 100 or value.as_tuple().exponent < -4:  # type: ignore[operator]  # finite: an int exponent
                raise InvalidArgument("percent", "a number from 0 to 100, at most 4 decimals")
        terms.set_commission(self._engine, source_id, value, self.now())

    def adjust(
        self,
        source_id: int,
        currency: str,
        amount: Decimal | str,
        reason: str,
        *,
        test: bool = False,
        key: str | None = None,
    ) -> EntryView:
        """An adjustment of the source's available balance (negative: taken away), with the
        reason the seller reads; once per ``key``."""
        currency = currency.upper()
        reason = reason.strip()
        if not reason or len(reason) > 500 or not reason.isprintable():
            raise InvalidArgument("reason", "say why, in one line of at most 500 characters")
        minor = _amount(amount, currency)
        if minor == 0:
            raise InvalidArgument("amount", "not zero")
        reference = key or f"adj_{secrets.token_hex(12)}"
        seq = ledger.adjust(
            self._engine, source_id=source_id, currency=currency, test=test, amount=minor,
            reason=reason, reference=reference, now=self.now(),
        )  # fmt: skip
        found = [e for e in ledger.entries(self._engine, source_id)
                 if e.kind == "adjustment" and e.reference == reference]  # fmt: skip
        if seq is None and not found:
            raise InvalidArgument("key", "used already for another source's adjustment")
        return entry_view(found[0])


def _blocked(
    account: terms.Account | None, test: bool, amount: int, minimum: int, currency: str
) -> str | None:
    if account is None or account.test != test:
        return "no payout account is connected"
    if not test and not account.payouts_enabled:
        why = account.disabled_reason or "its onboarding is not finished"
        return f"the payout account cannot be paid yet ({why})"
    if amount < minimum:
        return f"below the minimum payout of {from_minor(minimum, currency)} {currency}"
    return None
