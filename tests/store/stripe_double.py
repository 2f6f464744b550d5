"""A local double of Stripe's API (a peer these tests do not run): Checkout Sessions only.

It answers ``POST /v1/checkout/sessions`` as Stripe does, with a session object,
and keeps the form each request sent; ``fail`` makes it answer a card error.
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
from urllib.parse import parse_qsl


@dataclass
class StripeDouble:
    base: str = ""
    sessions: list[dict[str, str]] = field(default_factory=list)
    fail: bool = False


def signed(payload: bytes, secret: str, at: int | None = None) -> str:
    """The ``Stripe-Signature`` header Stripe would send with ``payload``."""
    timestamp = int(time.time()) if at is None else at
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def event_body(kind: str, obj: object) -> dict[str, Any]:
    """An event as Stripe sends it (stripe-python 14.4.2, ``stripe/_event.py``: ``id``,
    ``type``, ``data.object`` among the rest), around ``obj``."""
    return {
        "id": f"evt_{secrets.token_hex(8)}",
        "object": "event",
        "type": kind,
        "api_version": "2024-06-20",
        "created": int(time.time()),
        "livemode": False,
        "data": {"object": obj},
    }


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps(event_body(kind, obj)).encode()


@contextmanager
def stripe_double() -> Iterator[StripeDouble]:
    double = StripeDouble()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the standard library's hook name
            length = int(self.headers.get("content-length", "0"))
            form = dict(parse_qsl(self.rfile.read(length).decode()))
            if self.path != "/v1/checkout/sessions":
                self._answer(404, {"error": {"type": "invalid_request_error", "message": "no"}})
                return
            if double.fail:
                error = {"type": "api_error", "message": "the double was told to fail"}
                self._answer(500, {"error": error})
                return
            double.sessions.append(form)
            session_id = f"cs_test_{secrets.token_hex(8)}"
            self._answer(
                200,
                {
                    "id": session_id,
                    "object": "checkout.session",
                    "client_reference_id": form.get("client_reference_id"),
                    "payment_status": "unpaid",
                    "status": "open",
                    "url": f"https://checkout.stripe.test/c/pay/{session_id}",
                },
            )

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
