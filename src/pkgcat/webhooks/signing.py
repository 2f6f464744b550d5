"""Signing secrets, and the two signatures of every delivery.

A secret is ``whsec_`` and 43 base64url characters (256 random bits), shown to
the application once, at creation or roll. The database keeps it sealed with
``PKGCAT_WEBHOOK_PASSPHRASE`` (:mod:`pkgcat.sealing`, as the repository's keys
are sealed): the deliverer must open it to sign, so it cannot be a hash.

The header is ``t=<unix seconds>,v1=<hex>[,v1=<hex>...]``, each ``v1`` the
HMAC-SHA256, keyed by one active secret (its text as UTF-8), of ``"<t>." + body``.
During a roll, both the new and the previous secret sign.

The same delivery also carries the headers of Standard Webhooks
(https://www.standardwebhooks.com/, its spec/standard-webhooks.md: "Signature
scheme"), which its libraries (``standardwebhooks``, Svix's) verify:
``webhook-id`` (the event's id, the same on every attempt: the receivers'
idempotency key), ``webhook-timestamp`` (the same ``t``) and ``webhook-signature``,
``v1,<base64>`` per active secret, space-separated, each the HMAC-SHA256 of
``"<id>.<t>." + body``. Those libraries take the secret as ``whsec_`` and the
standard base64 of the key, and decode it: the key of this scheme is the 32 random
bytes the secret's base64url spells, and ``pkgcat.client.webhooks.standard_secret``
writes the same secret in the alphabet they read (``-`` and ``_`` as ``+`` and ``/``,
padded with ``=``). One secret, shown once, verifies both ways.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from pkgcat.sealing import KeyProblem, seal, unseal

PREFIX = "whsec_"
SEALED_BY = "PKGCAT_WEBHOOK_PASSPHRASE"
"""The setting whose passphrase seals the signing secrets, and the answers that hold one."""


class NoWebhookPassphrase(KeyProblem):
    """PKGCAT_WEBHOOK_PASSPHRASE is not set where a signing secret is sealed or opened."""

    def __init__(self) -> None:
        super().__init__(
            "PKGCAT_WEBHOOK_PASSPHRASE is not set: it seals the webhook endpoints' signing secrets"
        )


class MalformedSecret(KeyProblem):
    """A stored secret that is not ``whsec_`` and base64url (none is made so: a row edited by hand)."""

    def __init__(self) -> None:
        super().__init__("the signing secret is not whsec_ and base64url: roll it")


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def _key_of(text: bytes) -> bytes:
    """The bytes a secret's base64url spells: the Standard Webhooks key."""
    if not text.startswith(PREFIX.encode()):
        raise MalformedSecret
    spelled = text[len(PREFIX) :]
    try:
        key = base64.b64decode(spelled + b"=" * (-len(spelled) % 4), altchars=b"-_", validate=True)
    except binascii.Error:
        raise MalformedSecret from None
    if not key:
        raise MalformedSecret
    return key


def standard_spelling(secret: str) -> str:
    """``secret`` as Standard Webhooks libraries take it: ``whsec_`` and its key in standard
    base64 (the commands print it; the client's ``standard_secret`` spells it the same)."""
    return PREFIX + base64.b64encode(_key_of(secret.encode())).decode()


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One active secret, as each scheme keys its HMAC."""

    text: bytes
    """The secret's text (UTF-8): the ``Pkgcat-Signature`` key."""
    key: bytes
    """The bytes its base64url spells: the ``webhook-signature`` key."""

    @classmethod
    def of(cls, text: bytes) -> SigningKey:
        return cls(text, _key_of(text))


def seal_secret(secret: str, passphrase: str | None) -> str:
    if passphrase is None:
        raise NoWebhookPassphrase
    return seal(secret.encode(), passphrase)


def open_sealed(sealed: str, passphrase: str) -> bytes:
    """What was sealed with the webhook passphrase: a secret, or an answer that holds one."""
    return unseal(
        sealed, passphrase, what="the webhook endpoints' signing secrets", setting=SEALED_BY
    )


class Opener:
    """Opens sealed secrets once each (password decryption is slow on purpose)."""

    def __init__(self, passphrase: str | None) -> None:
        self._passphrase = passphrase
        self._opened: dict[str, bytes] = {}

    def open(self, sealed: str) -> bytes:
        found = self._opened.get(sealed)
        if found is None:
            if self._passphrase is None:
                raise NoWebhookPassphrase
            found = self._opened[sealed] = open_sealed(sealed, self._passphrase)
        return found


def signature_header(body: bytes, keys: Sequence[SigningKey], timestamp: int) -> str:
    """``t=...,v1=...``: one ``v1`` per key, in the order given."""
    signed = str(timestamp).encode() + b"." + body
    parts = [f"t={timestamp}"]
    parts += [f"v1={hmac.new(k.text, signed, hashlib.sha256).hexdigest()}" for k in keys]
    return ",".join(parts)


def standard_headers(
    event_id: str, body: bytes, keys: Sequence[SigningKey], timestamp: int
) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` (one ``v1,`` per key)."""
    signed = f"{event_id}.{timestamp}.".encode() + body
    signatures = [
        "v1," + base64.b64encode(hmac.new(k.key, signed, hashlib.sha256).digest()).decode()
        for k in keys
    ]
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signatures),
    }
