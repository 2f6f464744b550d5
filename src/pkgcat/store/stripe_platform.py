"""Stripe as the store's payment platform: Checkout Sessions, and what its webhooks say.

A purchase opens a Checkout Session (the ``stripe`` library's ``StripeClient``,
configured per instance: no global key) for the package's price, with the
store's payment id as ``client_reference_id``; the device opens its page, and
the page returns to the store, which hands back to Sileo
(``sileo://payment_completed``). Nothing is owned until Stripe says so, through
a webhook that the store verifies with Stripe's own scheme
(``stripe.Webhook.construct_event``: the ``Stripe-Signature`` header's
timestamp and HMAC-SHA256 under the endpoint's secret, within five minutes).

Events and their effect on the ledger (:mod:`pkgcat.storage.store`), each event
applied once (its id recorded in the same transaction):

- ``checkout.session.completed`` (``payment_status`` paid) and
  ``checkout.session.async_payment_succeeded``: the payment completes and its
  purchase is recorded, with the PaymentIntent's id as ``txn_id``;
- ``checkout.session.expired`` and ``checkout.session.async_payment_failed``:
  the payment fails, nothing is owned;
- ``charge.refunded`` (fully): the purchase becomes Refunded;
  ``charge.dispute.created``: Chargeback.
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

import anyio
import orjson
import stripe
from iso4217 import Currency

from pkgcat.store.payments import Outcome, Payment

TOLERANCE = 300
"""Seconds a signed event stays acceptable (Stripe's default): an older replay is refused."""


def minor_units(amount: str, currency: str) -> int:
    """``4.99`` USD as 499 cents: Stripe takes amounts in the currency's smallest unit."""
    exponent = Currency(currency.upper()).exponent or 0
    return int(Decimal(amount).scaleb(exponent))


class StripePlatform:
    name = "stripe"

    def __init__(self, secret_key: str, store_url: str, api_base: str | None = None) -> None:
        addresses: Any = {"api": api_base} if api_base else None
        self._client = stripe.StripeClient(
            secret_key, base_addresses=addresses, max_network_retries=2
        )
        self._return = f"{store_url}payment/return"

    def new_id(self) -> str:
        return f"pay_{secrets.token_hex(12)}"

    def _create(self, payment: Payment) -> Any:
        return self._client.v1.checkout.sessions.create(
            {
                "mode": "payment",
                "client_reference_id": payment.payment_id,
                "metadata": {"payment_id": payment.payment_id},
                "line_items": [
                    {
                        "quantity": 1,
                        "price_data": {
                            "currency": payment.currency.lower(),
                            "unit_amount": minor_units(payment.amount, payment.currency),
                            "product_data": {"name": payment.description},
                        },
                    }
                ],
                "success_url": self._return,
                "cancel_url": self._return,
            },
            {"idempotency_key": payment.payment_id},
        )

    async def pay(self, payment: Payment) -> Outcome:
        try:
            session = await anyio.to_thread.run_sync(self._create, payment)
        except stripe.StripeError:
            return Outcome("failed")
        return Outcome("open", url=str(session.url))


def verified_event(payload: bytes, signature: str, secret: str) -> dict[str, Any]:
    """The event a webhook carries, once its signature is Stripe's; ValueError otherwise."""
    try:
        text = payload.decode()
        # Stripe's own check: timestamp within TOLERANCE, HMAC-SHA256 compared in constant time.
        # The library's verifier carries no annotations.
        stripe.WebhookSignature.verify_header(text, signature, secret, TOLERANCE)  # type: ignore[no-untyped-call]
    except stripe.SignatureVerificationError as error:
        raise ValueError(f"the Stripe-Signature does not verify: {error.user_message}") from None
    except UnicodeDecodeError:
        raise ValueError("the body is not a Stripe event") from None
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise ValueError("the body is not a Stripe event") from None
    if not isinstance(event, dict) or not isinstance(event.get("id"), str):
        raise ValueError("the body is not a Stripe event")
    return event
