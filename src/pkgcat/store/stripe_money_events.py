"""Stripe's events about the sellers' money: accounts, payouts, transfers.

Connect events (``account.updated``, ``payout.paid``, ``payout.failed``) happen on a
seller's connected account: Stripe sends them to a Connect endpoint, with its own signing
secret (``PKGCAT_STRIPE_CONNECT_WEBHOOK_SECRET``), and names the account in the event's
``account`` (stripe-python 14.4.2, ``stripe/_event.py`` line 58). ``transfer.reversed``
happens on the operator's own account. Each object's fields are read with the types
Stripe's reference gives them (``stripe/_account.py`` lines 1445, 1482 and 961;
``stripe/_payout.py`` lines 100, 104, 116, 154; ``stripe/_transfer.py`` lines 60, 96,
108), and an event whose field is not so is refused whole, as the store's others are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Id = Annotated[str, Field(min_length=1, max_length=255)]


class _Read(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class _Requirements(_Read):
    disabled_reason: Annotated[str, Field(max_length=255)] | None = None


class _Account(_Read):
    object: Literal["account"]
    id: Id
    payouts_enabled: bool | None = None
    details_submitted: bool | None = None
    requirements: _Requirements | None = None


class _Payout(_Read):
    object: Literal["payout"]
    id: Id
    status: str
    failure_code: Annotated[str, Field(max_length=64)] | None = None
    failure_message: Annotated[str, Field(max_length=2000)] | None = None
    metadata: dict[str, str] | None = None


class _Transfer(_Read):
    object: Literal["transfer"]
    id: Id
    reversed: bool
    amount: int
    amount_reversed: int


@dataclass(frozen=True, slots=True)
class AccountChange:
    account_id: str
    payouts_enabled: bool
    details_submitted: bool
    disabled_reason: str | None


@dataclass(frozen=True, slots=True)
class PayoutChange:
    """A payout on a seller's account reached their bank, or failed (with Stripe's why)."""

    platform_payout_id: str
    payout_id: str | None
    """Ours, from the payout's ``metadata.pkgcat_payout``."""
    paid: bool
    code: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class TransferReversed:
    transfer_id: str


MoneyChange = AccountChange | PayoutChange | TransferReversed


def money_change(kind: str, found: dict[str, Any], read: Any) -> MoneyChange | None:
    """What a money event asks of the ledger; ``read`` reads an object as a model (the
    store's reader, whose errors name the field)."""
    if kind == "account.updated":
        account: _Account = read(_Account, found, "data.object")
        reason = account.requirements.disabled_reason if account.requirements else None
        return AccountChange(
            account.id,
            bool(account.payouts_enabled),
            bool(account.details_submitted),
            reason,
        )
    if kind in ("payout.paid", "payout.failed"):
        payout: _Payout = read(_Payout, found, "data.object")
        ours = (payout.metadata or {}).get("pkgcat_payout")
        if kind == "payout.paid":
            return PayoutChange(payout.id, ours, paid=True)
        return PayoutChange(
            payout.id,
            ours,
            paid=False,
            code=payout.failure_code,
            message=payout.failure_message or payout.failure_code or "the payout failed",
        )
    if kind == "transfer.reversed":
        transfer: _Transfer = read(_Transfer, found, "data.object")
        # Reversed whole (``reversed``): the seller's money is back in the operator's account.
        return TransferReversed(transfer.id) if transfer.reversed else None
    return None
