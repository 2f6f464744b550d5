"""A local double of Stripe's API (a peer these tests do not run): Checkout and Connect.

It answers as Stripe does, with the objects of stripe-python 14.4.2's resources and the
fields the store reads (``stripe/checkout/_session.py``, ``_payment_intent.py``,
``_charge.py``, ``_balance_transaction.py``, ``_refund.py``, ``_account.py``,
``_account_link.py``, ``_transfer.py``, ``_reversal.py``, ``_payout.py``), to the requests
the library sends: form-encoded bodies with nested keys (``metadata[pkgcat_payout]``,
``expand[0]``), the connected account in ``Stripe-Account``. Like Stripe
(https://docs.stripe.com/api/idempotent_requests) it answers a request whose
``Idempotency-Key`` it has seen with the first answer, made once. ``fail`` makes Checkout
answer a server error; ``refuse`` maps a path to the error Stripe would answer there.

Webhooks are signed by :func:`signed` with Stripe's real scheme: the header
``t=TIMESTAMP,v1=HEX`` where HEX is HMAC-SHA256 of ``TIMESTAMP.BODY`` under the
endpoint's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Answer = tuple[int, dict[str, Any]]


@dataclass
class Charge:
    """What Stripe holds of a PaymentIntent's charge: amount, currency, fee (minor units)."""

    amount: int
    currency: str
    fee: int
    settled_currency: str | None = None
    exchange_rate: float | None = None


@dataclass
class StripeDouble:
    base: str = ""
    sessions: list[dict[str, str]] = field(default_factory=list)
    fail: bool = False
    charges: dict[str, Charge] = field(default_factory=dict)
    """PaymentIntents by id: their charge, with its balance transaction."""
    made: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Each object made, by kind (refunds, accounts, transfers, payouts, reversals), once."""
    sent: list[tuple[str, str, dict[str, str], dict[str, str]]] = field(default_factory=list)
    """Every request: method, path, form, headers (lower-case names)."""
    refuse: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    """A path's refusal, as Stripe's error body: {"type": ..., "code": ..., "message": ...}."""
    keys: dict[str, Answer] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return self.made.setdefault(kind, [])


def signed(payload: bytes, secret: str, at: int | None = None) -> str:
    """The ``Stripe-Signature`` header Stripe would send with ``payload``."""
    timestamp = int(time.time()) if at is None else at
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def event_body(kind: str, obj: object, account: str | None = None) -> dict[str, Any]:
    """An event as Stripe sends it (stripe-python 14.4.2, ``stripe/_event.py``: ``id``,
    ``type``, ``data.object`` among the rest; ``account`` for an event on a connected
    account, line 58), around ``obj``."""
    body = {
        "id": f"evt_{secrets.token_hex(8)}",
        "object": "event",
        "type": kind,
        "api_version": "2024-06-20",
        "created": int(time.time()),
        "livemode": False,
        "pending_webhooks": 1,
        "data": {"object": obj},
    }
    if account is not None:
        body["account"] = account
    return body


def event(kind: str, obj: dict[str, Any], account: str | None = None) -> bytes:
    return json.dumps(event_body(kind, obj, account)).encode()


def _id(prefix: str) -> str:
    return f"{prefix}_test_{secrets.token_hex(8)}"


def _metadata(form: dict[str, str]) -> dict[str, str]:
    return {k[len("metadata[") : -1]: v for k, v in form.items() if k.startswith("metadata[")}


def _balance_transaction(charge_id: str, charge: Charge) -> dict[str, Any]:
    """stripe/_balance_transaction.py lines 71-154: amount, currency, fee, net, in the
    currency the operator's account settles in."""
    settled = charge.settled_currency or charge.currency
    rate = charge.exchange_rate
    amount = round(charge.amount * rate) if rate else charge.amount
    return {
        "id": _id("txn"), "object": "balance_transaction", "amount": amount,
        "available_on": int(time.time()) + 2 * 86400, "created": int(time.time()),
        "currency": settled, "exchange_rate": rate, "fee": charge.fee,
        "fee_details": [{"amount": charge.fee, "currency": settled, "type": "stripe_fee",
                         "description": "Stripe processing fees", "application": None}],
        "net": amount - charge.fee, "reporting_category": "charge", "source": charge_id,
        "status": "pending", "type": "charge", "description": None,
    }  # fmt: skip


def _answer(double: StripeDouble, method: str, path: str, form: dict[str, str],
            headers: dict[str, str]) -> Answer:  # fmt: skip
    if path in double.refuse:
        status, error = double.refuse[path]
        return status, {"error": error}
    parts = path.strip("/").split("/")
    now = int(time.time())
    if method == "GET" and parts[:2] == ["v1", "payment_intents"] and len(parts) == 3:
        charge = double.charges.get(parts[2])
        if charge is None:
            return 404, {"error": {"type": "invalid_request_error", "code": "resource_missing",
                                   "message": f"No such payment_intent: '{parts[2]}'"}}  # fmt: skip
        charge_id = f"ch_{parts[2][3:]}"
        latest: object = charge_id
        if form.get("expand[0]") == "latest_charge.balance_transaction":
            latest = {"id": charge_id, "object": "charge", "amount": charge.amount,
                      "currency": charge.currency, "payment_intent": parts[2],
                      "balance_transaction": _balance_transaction(charge_id, charge)}  # fmt: skip
        return 200, {"id": parts[2], "object": "payment_intent", "amount": charge.amount,
                     "currency": charge.currency, "status": "succeeded",
                     "latest_charge": latest}  # fmt: skip
    if method != "POST":
        return 404, {"error": {"type": "invalid_request_error", "message": "no such route"}}
    if path == "/v1/checkout/sessions":
        if double.fail:
            return 500, {"error": {"type": "api_error", "message": "the double was told to fail"}}
        double.sessions.append(form)
        session_id = f"cs_test_{secrets.token_hex(8)}"
        return 200, {"id": session_id, "object": "checkout.session",
                     "client_reference_id": form.get("client_reference_id"),
                     "payment_status": "unpaid", "status": "open",
                     "url": f"https://checkout.stripe.test/c/pay/{session_id}"}  # fmt: skip
    if path == "/v1/refunds":
        intent = form["payment_intent"]
        made = {"id": _id("re"), "object": "refund", "amount": int(form["amount"]),
                "charge": f"ch_{intent[3:]}", "payment_intent": intent, "created": now,
                "currency": double.charges[intent].currency if intent in double.charges
                else "usd", "metadata": _metadata(form), "status": "succeeded",
                "failure_reason": None}  # fmt: skip
    elif path == "/v1/accounts":
        made = {"id": _id("acct"), "object": "account", "type": form.get("type"),
                "charges_enabled": False, "payouts_enabled": False, "details_submitted": False,
                "metadata": _metadata(form), "requirements": {"disabled_reason":
                "requirements.past_due"}, "settings": {"payouts": {"schedule": {
                "interval": form.get("settings[payouts][schedule][interval]")}}}}  # fmt: skip
    elif path == "/v1/account_links":
        made = {"object": "account_link", "created": now, "expires_at": now + 300,
                "url": f"https://connect.stripe.test/setup/e/{form['account']}/"
                f"{secrets.token_hex(6)}"}  # fmt: skip
    elif path == "/v1/transfers":
        made = {"id": _id("tr"), "object": "transfer", "amount": int(form["amount"]),
                "amount_reversed": 0, "currency": form["currency"],
                "destination": form["destination"], "transfer_group": form.get("transfer_group"),
                "metadata": _metadata(form), "reversed": False, "created": now,
                "livemode": False}  # fmt: skip
    elif parts[:2] == ["v1", "transfers"] and parts[-1] == "reversals":
        made = {"id": _id("trr"), "object": "transfer_reversal", "amount": int(form["amount"]),
                "transfer": parts[2], "metadata": _metadata(form), "created": now}  # fmt: skip
    elif path == "/v1/payouts":
        made = {"id": _id("po"), "object": "payout", "amount": int(form["amount"]),
                "currency": form["currency"], "status": "pending", "automatic": False,
                "metadata": _metadata(form), "failure_code": None, "failure_message": None,
                "arrival_date": now + 2 * 86400, "created": now, "livemode": False,
                "account": headers.get("stripe-account")}  # fmt: skip
    else:
        return 404, {"error": {"type": "invalid_request_error", "message": "no such route"}}
    kind = {"re": "refunds", "acct": "accounts", "tr": "transfers", "trr": "reversals",
            "po": "payouts"}.get(str(made.get("id", "_")).split("_")[0], "links")  # fmt: skip
    double.of(kind).append(made | {"idempotency_key": headers.get("idempotency-key")})
    return 200, made


@contextmanager
def stripe_double() -> Iterator[StripeDouble]:
    double = StripeDouble()

    class Handler(BaseHTTPRequestHandler):
        def _handle(self, method: str) -> None:
            length = int(self.headers.get("content-length", "0"))
            split = urlsplit(self.path)
            raw = self.rfile.read(length).decode() if length else split.query
            form = dict(parse_qsl(raw))
            headers = {k.lower(): v for k, v in self.headers.items()}
            key = headers.get("idempotency-key")
            with double.lock:
                double.sent.append((method, split.path, form, headers))
                if key is not None and method == "POST" and key in double.keys:
                    status, body = double.keys[key]  # Stripe's replay of the first answer
                else:
                    status, body = _answer(double, method, split.path, form, headers)
                    if key is not None and method == "POST":
                        double.keys[key] = (status, body)
            self._answer(status, body)

        def do_POST(self) -> None:  # the standard library's hook name
            self._handle("POST")

        def do_GET(self) -> None:  # the standard library's hook name
            self._handle("GET")

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_{secrets.token_hex(6)}")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            pass  # quiet: the test asserts on what was sent

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    double.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield double
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
