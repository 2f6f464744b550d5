"""Verifying a webhook from a pkgcat server: the receiver's side of its two signatures.

::

    from pkgcat.client import webhooks

    event = webhooks.verify(request_body, request.headers["Pkgcat-Signature"], secret)
    event = webhooks.verify(request_body, request.headers, secret)  # either scheme

The header is ``t=<unix seconds>,v1=<hex>`` with one ``v1`` per secret that
signs (two while the endpoint's secret is being rolled). Each ``v1`` is the
HMAC-SHA256, keyed by the secret's text, of ``"<t>."`` followed by the body
exactly as received. :func:`verify` accepts the body when any ``v1`` matches
(compared in constant time) and ``t`` is within ``tolerance`` seconds of now,
which bounds how long a captured request can be replayed.

Given the request's headers (a mapping, or anything with ``items()``), it checks
``Pkgcat-Signature`` when present, else the Standard Webhooks headers
(https://www.standardwebhooks.com/: ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature``, ``v1,<base64>`` per secret, space-separated, each the
HMAC-SHA256 of ``"<id>.<timestamp>." + body``). That scheme's key is the bytes
the secret's base64 spells; :func:`standard_secret` writes the secret as its
libraries read it. Either spelling of the secret verifies either scheme here.

The tree::

    PkgcatError
    └── WebhookVerificationError     the request is not a genuine, fresh webhook
        ├── UnknownSignatureScheme   no ``t=`` or no ``v1=`` in the header, no signature header
        ├── StaleSignature           ``t`` is more than ``tolerance`` seconds away
        └── SignatureMismatch        no ``v1`` is the body's signature with this secret
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Iterable
from typing import Any, Protocol

from pkgcat.client._errors import PkgcatError

__all__ = [
    "SignatureMismatch",
    "StaleSignature",
    "UnknownSignatureScheme",
    "WebhookVerificationError",
    "standard_secret",
    "verify",
]

SCHEME = "v1"
PREFIX = "whsec_"


class Headers(Protocol):
    """A request's headers: a mapping, or ``http.server``'s message, or any with ``items()``."""

    def items(self) -> Iterable[tuple[str, object]]: ...


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


def _key(secret: str) -> bytes:
    """The bytes a secret spells, in base64url (as shown) or standard base64 (as
    :func:`standard_secret` writes it)."""
    spelled = secret.removeprefix(PREFIX).rstrip("=")
    try:
        key = base64.b64decode(spelled + "=" * (-len(spelled) % 4), altchars=b"-_", validate=True)
    except binascii.Error:
        key = b""
    if not key:
        raise ValueError(f"the secret is not {PREFIX} and base64: the one shown at creation is")
    return key


def _shown(secret: str) -> str:
    """The secret as it was shown (its text keys ``Pkgcat-Signature``), whichever spelling."""
    if not (secret.endswith("=") or "+" in secret or "/" in secret):
        return secret
    return PREFIX + base64.urlsafe_b64encode(_key(secret)).decode().rstrip("=")


def standard_secret(secret: str) -> str:
    """``secret`` as Standard Webhooks libraries take it: ``whsec_`` and its key in standard
    base64 (``-`` and ``_`` written ``+`` and ``/``, padded with ``=``)."""
    return PREFIX + base64.b64encode(_key(secret)).decode()


def _fresh(timestamp: int, tolerance: int, now: float | None) -> None:
    age = (time.time() if now is None else now) - timestamp
    if abs(age) > tolerance:
        raise StaleSignature(
            f"the signature's timestamp is {abs(age):.0f} s "
            f"{'old' if age > 0 else 'ahead'}, beyond the tolerance of {tolerance} s"
        )


def _standard(
    raw: bytes, headers: dict[str, str], secret: str, tolerance: int, now: float | None
) -> None:
    missing = [n for n in ("webhook-id", "webhook-timestamp") if not headers.get(n)]
    if missing:
        raise UnknownSignatureScheme(f"webhook-signature comes without {' and '.join(missing)}")
    try:
        timestamp = int(headers["webhook-timestamp"])
    except ValueError:
        given = headers["webhook-timestamp"]
        raise UnknownSignatureScheme(f"the webhook-timestamp {given!r} is not a number") from None
    signatures = [
        value
        for version, _, value in (
            item.partition(",") for item in headers["webhook-signature"].split()
        )
        if version == SCHEME and value
    ]
    if not signatures:
        raise UnknownSignatureScheme(f"the webhook-signature header has no {SCHEME}, signature")
    _fresh(timestamp, tolerance, now)
    signed = f"{headers['webhook-id']}.{timestamp}.".encode() + raw
    expected = base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise SignatureMismatch(
            "no v1 signature of webhook-signature matches the body with this secret"
        )


def verify(
    body: bytes | str,
    header: str | Headers,
    secret: str,
    tolerance: int = 300,
    *,
    now: float | None = None,
) -> Any:
    """The event (the body parsed as JSON) if ``header`` signs ``body`` with ``secret``.

    ``header``: the ``Pkgcat-Signature`` header, or all the request's headers (then
    ``Pkgcat-Signature`` when there, else Standard Webhooks' ``webhook-signature``).
    ``body`` must be the bytes received, before any parsing. Raises a
    :class:`WebhookVerificationError` saying what is wrong otherwise.
    """
    raw = body.encode() if isinstance(body, str) else body
    if not isinstance(header, str):
        headers = {str(name).lower(): str(value) for name, value in header.items()}
        if "pkgcat-signature" not in headers and "webhook-signature" in headers:
            _standard(raw, headers, secret, tolerance, now)
            return json.loads(raw)
        if "pkgcat-signature" not in headers:
            raise UnknownSignatureScheme(
                "the request has neither a Pkgcat-Signature nor a webhook-signature header"
            )
        header = headers["pkgcat-signature"]
    timestamp, signatures = _parse(header)
    _fresh(timestamp, tolerance, now)
    signed = f"{timestamp}.".encode() + raw
    expected = hmac.new(_shown(secret).encode(), signed, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise SignatureMismatch("no v1 signature matches the body with this secret")
    return json.loads(raw)
