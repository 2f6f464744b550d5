"""Stripe as the store's payment platform: Checkout Sessions, and what its webhooks say.

A purchase opens a Checkout Session (the ``stripe`` library's ``StripeClient``,
configured per instance: no global key) for the package's price, with the
store's payment id as ``client_reference_id``; the device opens its page, and
the page returns to the store, which hands back to Sileo
(``sileo://payment_completed``). Nothing is owned until Stripe says so, through
a webhook that the store verifies with Stripe's own scheme (the library's
``WebhookSignature.verify_header``: the ``Stripe-Signature`` header's HMAC-SHA256
of its timestamp and the body under the endpoint's secret), its timestamp within
five minutes of the store's clock either way (:func:`verified_event`).

Events and their effect on the ledger (:mod:`pkgcat.storage.store`), each event
applied once (its id recorded in the same transaction):

- ``checkout.session.completed`` (``payment_status`` paid) and
  ``checkout.session.async_payment_succeeded``: the payment completes and its
  purchase is recorded, with the PaymentIntent's id as ``txn_id``;
- ``checkout.session.expired`` and ``checkout.session.async_payment_failed``:
  the payment fails, nothing is owned;
- ``charge.refunded``: what its ``amount_refunded`` says is refunded, and no refund of the
  store's accounts for, is debited from the seller's ledger; refunded whole, the purchase
  becomes Refunded (a purchase the store made, never an imported one:
  :mod:`pkgcat.storage.refunds`); ``charge.dispute.created``: Chargeback, what was not
  refunded debited;
- the sellers' money (:mod:`pkgcat.store.stripe_money_events`): ``account.updated``,
  ``payout.paid``, ``payout.failed`` and ``transfer.reversed``.

A signed event is still read as data from outside: its envelope (``id``,
``type``, ``data.object``) and every field of the object that the store reads
must have the type and length Stripe's API reference gives them, or the event is
refused whole (400, naming the field) and nothing of it is applied.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal

import anyio
import orjson
import stripe
from iso4217 import Currency
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pkgcat.config import Settings
from pkgcat.store.payments import Outcome, Payment
from pkgcat.store.stripe_money_events import MoneyChange, money_change

TOLERANCE = 300
"""Seconds a signed event's timestamp may be from this server's clock, either way (Stripe's
default): an older replay is refused, and so is one dated ahead."""


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

    @classmethod
    def from_settings(cls, settings: Settings) -> StripePlatform:
        """The platform of ``PKGCAT_STRIPE_*`` and the store's address (both checked by
        :class:`~pkgcat.config.Settings` when ``PKGCAT_STORE_PLATFORM=stripe``)."""
        assert settings.stripe_secret_key is not None
        assert settings.store_url is not None
        return cls(
            settings.stripe_secret_key.get_secret_value(),
            settings.store_url,
            settings.stripe_api_base,
        )

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


_SIGNATURE_ITEM = re.compile(r"[A-Za-z0-9]+=[!-~]*")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")

Reference = Annotated[str, Field(min_length=1, max_length=128)]
"""A Stripe object's id the ledger keeps as a purchase's ``txn_id`` (at most 128 characters)."""


class _Read(BaseModel):
    """Stripe's JSON as sent: strict types, and the fields the store does not read ignored."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class _Data(_Read):
    object: dict[str, Any]


class _Envelope(_Read):
    id: Annotated[str, Field(min_length=1, max_length=255)]  # store_events.event_id
    type: Annotated[str, Field(min_length=1, max_length=255)]
    data: _Data


class _SessionPaid(_Read):
    """checkout.session.completed, .async_payment_succeeded: a Checkout Session."""

    object: Literal["checkout.session"]
    id: Reference
    payment_status: str
    client_reference_id: Annotated[str, Field(max_length=200)] | None = None
    payment_intent: Reference | None = None


class _SessionEnded(_Read):
    """checkout.session.expired, .async_payment_failed: a Checkout Session."""

    object: Literal["checkout.session"]
    id: Reference
    client_reference_id: Annotated[str, Field(max_length=200)] | None = None


class _Charge(_Read):
    object: Literal["charge"]
    id: Reference
    refunded: bool
    payment_intent: Reference | None = None
    amount_refunded: int | None = None
    """In minor units, every refund of the charge so far (stripe/_charge.py line 2215)."""


class _Dispute(_Read):
    object: Literal["dispute"]
    id: Reference
    payment_intent: Reference | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """What an event asks of the ledger: a store payment completed or failed, a purchase
    refunded or charged back."""

    kind: Literal["complete", "fail", "refund", "chargeback"]
    payment_id: str = ""
    """The store's payment (``client_reference_id``), for complete and fail."""
    txn_id: str = ""
    """The PaymentIntent (the purchase's ``txn_id``), for complete, refund and chargeback."""
    refunded: int | None = None
    """For refund: what is refunded of the charge so far, in minor units; None: all of it."""


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    type: str
    change: Change | MoneyChange | None
    """None: an event the store does not act on, or one about nothing of the store's."""


_WHAT = {
    "missing": "is missing",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "literal_error": "must be {expected}",
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must not be empty",
}


def _read(model: type[_Read], value: object, where: str) -> Any:
    """``value`` as ``model``; ValueError naming the first field that is not as Stripe sends it."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        field = ".".join([where, *map(str, first["loc"])]).strip(".")
        known = _WHAT.get(first["type"])
        what = known.format(**first.get("ctx", {})) if known else first["msg"]
        raise ValueError(f"the event's {field} {what}" if field else f"the event {what}") from None


def _change(kind: str, found: dict[str, Any]) -> Change | MoneyChange | None:
    if kind in ("checkout.session.completed", "checkout.session.async_payment_succeeded"):
        session: _SessionPaid = _read(_SessionPaid, found, "data.object")
        if session.payment_status != "paid" or session.client_reference_id is None:
            # Paid later (async_payment_succeeded) or never; or a session the store did not make.
            return None
        txn_id = session.payment_intent or session.id
        return Change("complete", payment_id=session.client_reference_id, txn_id=txn_id)
    if kind in ("checkout.session.expired", "checkout.session.async_payment_failed"):
        ended: _SessionEnded = _read(_SessionEnded, found, "data.object")
        if ended.client_reference_id is None:
            return None
        return Change("fail", payment_id=ended.client_reference_id)
    if kind == "charge.refunded":
        charge: _Charge = _read(_Charge, found, "data.object")
        if charge.payment_intent is None:
            return None  # a charge no Checkout Session made
        if charge.amount_refunded is None and not charge.refunded:
            return None  # in part, by an amount the event does not say
        whole = charge.refunded and charge.amount_refunded is None
        return Change("refund", txn_id=charge.payment_intent,
                      refunded=None if whole else charge.amount_refunded)  # fmt: skip
    if kind == "charge.dispute.created":
        dispute: _Dispute = _read(_Dispute, found, "data.object")
        if dispute.payment_intent is None:
            return None
        return Change("chargeback", txn_id=dispute.payment_intent)
    return money_change(kind, found, _read)


def _timestamp(header: str) -> int:
    """The ``t`` of a ``Stripe-Signature: t=TIMESTAMP,v1=HEX[,v1=...]`` header.

    Stricter than stripe-python (``_webhook.py``, ``_get_timestamp_and_signatures``, which
    takes the first ``t`` through ``int()``): exactly one ``t``, of digits, and printable
    ASCII throughout, since the library's constant-time compare raises TypeError on other
    characters.
    """
    items = header.split(",")
    if not header.isascii() or not all(_SIGNATURE_ITEM.fullmatch(item) for item in items):
        raise ValueError("the Stripe-Signature header is not t=TIMESTAMP,v1=SIGNATURE")
    stamps = [item[2:] for item in items if item.startswith("t=")]
    if len(stamps) != 1 or not _TIMESTAMP.fullmatch(stamps[0]):
        raise ValueError("the Stripe-Signature header must carry one t=TIMESTAMP, in digits")
    return int(stamps[0])


def verified_event(
    payload: bytes, signature: str, secret: str | tuple[str, ...], now: int
) -> Event:
    """The event a webhook carries, once its signature is Stripe's and its shape as Stripe
    sends it; ValueError saying what is wrong otherwise.

    ``secret``: the endpoint's signing secret, or several (the operator's account's
    endpoint and the Connect endpoint's): a signature under any of them verifies.
    ``now``: the store's clock, which the signature's timestamp must be within
    :data:`TOLERANCE` of, either way.
    """
    timestamp = _timestamp(signature)
    try:
        text = payload.decode()
    except UnicodeDecodeError:
        raise ValueError("the body is not a Stripe event") from None
    refusal = ""
    for each in (secret,) if isinstance(secret, str) else secret:
        try:
            # Stripe's own check of the HMAC-SHA256, compared in constant time. Its check of
            # the time (tolerance) refuses only an old timestamp: both ways are checked
            # below, on the store's clock. The library's verifier carries no annotations.
            stripe.WebhookSignature.verify_header(text, signature, each, None)  # type: ignore[no-untyped-call]
        except stripe.SignatureVerificationError as error:
            refusal = str(error.user_message)
            continue
        break
    else:
        raise ValueError(f"the Stripe-Signature does not verify: {refusal}")
    if timestamp < now - TOLERANCE:
        raise ValueError(
            f"the Stripe-Signature's timestamp is {now - timestamp} s old; "
            f"at most {TOLERANCE} s is accepted"
        )
    if timestamp > now + TOLERANCE:
        raise ValueError(
            f"the Stripe-Signature's timestamp is {timestamp - now} s ahead of this server's "
            f"clock; at most {TOLERANCE} s is accepted"
        )
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise ValueError("the body is not a Stripe event") from None
    envelope: _Envelope = _read(_Envelope, body, "")
    change = _change(envelope.type, envelope.data.object)
    return Event(envelope.id, envelope.type, change)
