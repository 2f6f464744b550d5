"""Verifying a webhook from a pkgcat server: the receiver's side of ``Pkgcat-Signature``.

::

    from pkgcat.client import webhooks

    event = webhooks.verify(request_body, request.headers["Pkgcat-Signature"], secret)

The header is ``t=<unix seconds>,v1=<hex>`` with one ``v1`` per secret that
signs (two while the endpoint's secret is being rolled). Each ``v1`` is the
HMAC-SHA256, keyed by the secret's text, of ``"<t>."`` followed by the body
exactly as received. :func:`verify` accepts the body when any ``v1`` matches
(compared in constant time) and ``t`` is within ``tolerance`` seconds of now,
which bounds how long a captured request can be replayed.

The tree::

    PkgcatError
    └── WebhookVerificationError     the request is not a genuine, fresh webhook
        ├── UnknownSignatureScheme   no ``t=`` or no ``v1=`` in the header
        ├── StaleSignature           ``t`` is more than ``tolerance`` seconds away
        └── SignatureMismatch        no ``v1`` is the body's signature with this secret
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from pkgcat.client._errors import PkgcatError

__all__ = [
    "SignatureMismatch",
    "StaleSignature",
    "UnknownSignatureScheme",
    "WebhookVerificationError",
    "verify",
]

SCHEME = "v1"


class WebhookVerificationError(PkgcatError):
    """The request is not a genuine, fresh webhook of the endpoint: reject it (HTTP 400)."""


class UnknownSignatureScheme(WebhookVerificationError):
    """The header has no timestamp or no signature this version knows (``v1``)."""


class StaleSignature(WebhookVerificationError):
    """The timestamp is further from now than the tolerance: a replay, or a clock adrift."""


class SignatureMismatch(WebhookVerificationError):
    """No signature in the header is the body's with this secret."""


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise UnknownSignatureScheme(f"the timestamp {value!r} is not a number") from None
        elif key == SCHEME and value:
            signatures.append(value)
    if timestamp is None:
        raise UnknownSignatureScheme("the header has no timestamp (t=)")
    if not signatures:
        raise UnknownSignatureScheme(f"the header has no {SCHEME}= signature")
    return timestamp, signatures


def verify(
    body: bytes | str,
    header: str,
    secret: str,
    tolerance: int = 300,
    *,
    now: float | None = None,
) -> Any:
    """The event (the body parsed as JSON) if ``header`` signs ``body`` with ``secret``.

    ``body`` must be the bytes received, before any parsing. Raises a
    :class:`WebhookVerificationError` saying what is wrong otherwise.
    """
    raw = body.encode() if isinstance(body, str) else body
    timestamp, signatures = _parse(header)
    age = (time.time() if now is None else now) - timestamp
    if abs(age) > tolerance:
        raise StaleSignature(
            f"the signature's timestamp is {abs(age):.0f} s "
            f"{'old' if age > 0 else 'ahead'}, beyond the tolerance of {tolerance} s"
        )
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise SignatureMismatch("no v1 signature matches the body with this secret")
    return json.loads(raw)
