"""Stripe as the ledger's platform: fees, refunds, Connect accounts, transfers and payouts.

Every call goes through the ``stripe`` library's ``StripeClient`` (configured per
instance) with an idempotency key derived from the ledger's own id, so a call repeated
after a crash, a timeout or by another host has its effect once (Stripe keeps a key's
answer for 24 hours: https://docs.stripe.com/api/idempotent_requests). Payouts use
"separate charges and transfers": the sale's money stays in the operator's account until
its payout, which is a Transfer to the seller's connected account (Express, its payouts
on the ``manual`` schedule) and then a Payout on that account (``Stripe-Account``), whose
outcome Stripe tells in ``payout.paid`` or ``payout.failed``.

An error Stripe answers about the request itself (``InvalidRequestError``,
``PermissionError``, a card or balance error) refuses the step, with Stripe's code and
message; a connection error, a rate limit, a server error or an authentication error
(the operator's key, which the operator fixes) leaves it to be tried again.
"""

from __future__ import annotations

import logging
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import stripe

from pkgcat.money.amounts import exponent
from pkgcat.money.platform import Link, Order, Step

log = logging.getLogger("pkgcat.money")

_RETRY = (
    stripe.APIConnectionError,
    stripe.RateLimitError,
    stripe.APIError,
    stripe.AuthenticationError,
)


def _failed(error: stripe.StripeError, what: str) -> Step:
    message = error.user_message or str(error) or type(error).__name__
    if isinstance(error, _RETRY):
        log.warning("Stripe could not be asked to %s: %s", what, type(error).__name__)
        return Step("retry", code=error.code, message=message)
    return Step("refused", code=error.code, message=message)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if obj is not None else None


def fee_in(balance_transaction: Any, currency: str) -> int:
    """The fee of a charge's balance transaction in the charge's minor units.

    Stripe states the balance transaction in the operator's settlement currency; when it
    is another than the sale's, ``exchange_rate`` is what the sale's amount was multiplied
    by (stripe-python 14.4.2, ``stripe/_balance_transaction.py`` line 97), so the fee is
    divided by it, rounded half up to a minor unit.
    """
    fee = int(balance_transaction["fee"])
    settled = str(balance_transaction["currency"]).upper()
    if settled == currency.upper():
        return fee
    rate = balance_transaction.get("exchange_rate")
    if not rate:
        return fee
    major = Decimal(fee).scaleb(-exponent(settled)) / Decimal(str(rate))
    return int(major.scaleb(exponent(currency)).to_integral_value(ROUND_HALF_UP))


class StripeMoney:
    name = "stripe"
    test = False

    def __init__(self, secret_key: str, api_base: str | None = None) -> None:
        addresses: Any = {"api": api_base, "connect": api_base} if api_base else None
        self._client = stripe.StripeClient(
            secret_key, base_addresses=addresses, max_network_retries=2
        )

    def fee(self, txn_id: str, currency: str) -> int | None:
        """The fee of the PaymentIntent's charge (its ``latest_charge.balance_transaction``,
        expanded in one request); None while Stripe has not made the balance transaction."""
        if not txn_id.startswith("pi_"):
            return 0  # no PaymentIntent, no charge of Stripe's: no fee to tell
        try:
            intent = self._client.v1.payment_intents.retrieve(
                txn_id, {"expand": ["latest_charge.balance_transaction"]}
            )
        except stripe.StripeError as error:
            log.warning("Stripe's fee of a sale could not be read: %s", type(error).__name__)
            return None
        charge = _field(intent, "latest_charge")
        balance = _field(charge, "balance_transaction")
        if not isinstance(balance, stripe.StripeObject):
            return None
        return fee_in(balance, currency)

    def refund(self, txn_id: str, amount: int, currency: str, key: str) -> Step:  # noqa: ARG002 - the charge's
        try:
            made = self._client.v1.refunds.create(
                {"payment_intent": txn_id, "amount": amount, "metadata": {"pkgcat_refund": key}},
                {"idempotency_key": f"pkgcat-refund-{key}"},
            )
        except stripe.StripeError as error:
            return _failed(error, "refund")
        if made.status in ("failed", "canceled"):
            return Step("refused", id=made.id, message=made.failure_reason or made.status)
        return Step("done", id=made.id)

    def connect(self, source_id: int, account_id: str | None) -> str:
        if account_id is not None and not account_id.startswith("test_"):
            return account_id
        account = self._client.v1.accounts.create(
            {
                "type": "express",
                "capabilities": {"transfers": {"requested": True}},
                # The ledger decides when a seller is paid: Stripe pays out only when asked.
                "settings": {"payouts": {"schedule": {"interval": "manual"}}},
                "metadata": {"pkgcat_source": str(source_id)},
            },
            {"idempotency_key": f"pkgcat-account-{source_id}"},
        )
        return str(account.id)

    def link(self, account_id: str, return_url: str, refresh_url: str) -> Link:
        made = self._client.v1.account_links.create(
            {
                "account": account_id,
                "type": "account_onboarding",
                "return_url": return_url,
                "refresh_url": refresh_url,
            }
        )
        return Link(str(made.url), int(made.expires_at), account_id, ready=False)

    def transfer(self, order: Order) -> Step:
        try:
            made = self._client.v1.transfers.create(
                {
                    "amount": order.amount,
                    "currency": order.currency.lower(),
                    "destination": order.account_id,
                    "transfer_group": order.payout_id,
                    "metadata": {"pkgcat_payout": order.payout_id},
                },
                {"idempotency_key": f"pkgcat-transfer-{order.payout_id}"},
            )
        except stripe.StripeError as error:
            return _failed(error, "transfer a payout")
        return Step("done", id=made.id)

    def pay_out(self, order: Order) -> Step:
        try:
            made = self._client.v1.payouts.create(
                {
                    "amount": order.amount,
                    "currency": order.currency.lower(),
                    "metadata": {"pkgcat_payout": order.payout_id},
                },
                {
                    "stripe_account": order.account_id,
                    "idempotency_key": f"pkgcat-payout-{order.payout_id}",
                },
            )
        except stripe.StripeError as error:
            return _failed(error, "send a payout")
        return Step("done", id=made.id)

    def reverse(self, payout_id: str, transfer_id: str, amount: int) -> Step:
        try:
            made = self._client.v1.transfers.reversals.create(
                transfer_id,
                {"amount": amount, "metadata": {"pkgcat_payout": payout_id}},
                {"idempotency_key": f"pkgcat-reversal-{payout_id}"},
            )
        except stripe.StripeError as error:
            return _failed(error, "reverse a failed payout's transfer")
        return Step("done", id=made.id)
