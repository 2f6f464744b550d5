"""The money seam: what the ledger asks of the payment platform, and test mode's answers.

The platform that took a sale is asked for its fee, for refunds, for sellers' accounts
(hosted onboarding) and for payouts; one answers for live money
(:class:`pkgcat.store.stripe_connect.StripeMoney`, Stripe Connect) and :class:`TestMoney`
for test money, which moves none: every id it makes starts with ``test_``, every account
is ready at once, and every payout is paid as soon as it is sent.

A step's outcome says what the ledger does next: ``done``; ``retry`` (the platform could
not be asked: the same step is tried again later with the same idempotency key, so it
happens once); ``refused`` (the platform said no, and why: the money goes back).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal, Protocol

State = Literal["done", "retry", "refused"]


@dataclass(frozen=True, slots=True)
class Step:
    state: State
    id: str | None = None
    """The platform's id of what the step made (a transfer, a payout, a refund)."""
    code: str | None = None
    message: str = ""
    settled: bool = False
    """A payout that is with the seller already (test mode): no event will follow."""


@dataclass(frozen=True, slots=True)
class Link:
    """Where the seller goes to connect their account, and until when it works."""

    url: str
    expires_at: int | None
    account_id: str
    ready: bool
    """The account can be paid out to already (test mode's are at once)."""


@dataclass(frozen=True, slots=True)
class Order:
    """A payout to send: the platform's idempotency keys derive from its id."""

    payout_id: str
    account_id: str
    amount: int
    currency: str


class MoneyPlatform(Protocol):
    name: str
    """As purchases name it in ``payment_platform``."""
    test: bool

    def fee(self, txn_id: str, currency: str) -> int | None:
        """The platform's fee on the sale, in the sale's minor units; None: not known yet."""

    def refund(self, txn_id: str, amount: int, currency: str, key: str) -> Step: ...

    def connect(self, source_id: int, account_id: str | None) -> str:
        """The seller's account: ``account_id`` when there is one, else a new one."""

    def link(self, account_id: str, return_url: str, refresh_url: str) -> Link: ...

    def transfer(self, order: Order) -> Step:
        """The payout's money moved to the seller's account on the platform."""

    def pay_out(self, order: Order) -> Step:
        """The money sent on from the seller's platform account to their bank."""

    def reverse(self, payout_id: str, transfer_id: str, amount: int) -> Step:
        """A failed payout's transfer taken back, so the ledger owes it again."""


class TestMoney:
    """Test mode: the whole cycle with no money, everything it makes marked test."""

    name = "test"
    test = True

    def fee(self, txn_id: str, currency: str) -> int | None:  # noqa: ARG002 - no fee taken
        return None  # test mode reports no fee: none is taken

    def refund(self, txn_id: str, amount: int, currency: str, key: str) -> Step:  # noqa: ARG002 - no money to return
        return Step("done", id=f"test_re_{secrets.token_hex(8)}")

    def connect(self, source_id: int, account_id: str | None) -> str:  # noqa: ARG002 - any id
        if account_id is not None and account_id.startswith("test_acct_"):
            return account_id
        return f"test_acct_{secrets.token_hex(8)}"

    def link(self, account_id: str, return_url: str, refresh_url: str) -> Link:  # noqa: ARG002 - never expires
        # No onboarding to go through: the seller lands where the real one would return.
        return Link(return_url, None, account_id, ready=True)

    def transfer(self, order: Order) -> Step:
        return Step("done", id=f"test_tr_{order.payout_id}")

    def pay_out(self, order: Order) -> Step:
        return Step("done", id=f"test_po_{order.payout_id}", settled=True)

    def reverse(self, payout_id: str, transfer_id: str, amount: int) -> Step:  # noqa: ARG002 - no money moved
        return Step("done", id=f"test_trr_{payout_id}")
