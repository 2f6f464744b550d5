"""Signing secrets and the ``Pkgcat-Signature`` header.

A secret is ``whsec_`` and 43 base64url characters (256 random bits), shown to
the application once, at creation or roll. The database keeps it sealed with
``PKGCAT_WEBHOOK_PASSPHRASE`` (OpenPGP password encryption, as the repository's
keys are sealed): the deliverer must open it to sign, so it cannot be a hash.

The header is ``t=<unix seconds>,v1=<hex>[,v1=<hex>...]``, each ``v1`` the
HMAC-SHA256, keyed by one active secret (its text as UTF-8), of ``"<t>." + body``.
During a roll, both the new and the previous secret sign.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence

from pkgcat.repository.keys import KeyProblem, seal, unseal

PREFIX = "whsec_"


class NoWebhookPassphrase(KeyProblem):
    """PKGCAT_WEBHOOK_PASSPHRASE is not set where a signing secret is sealed or opened."""

    def __init__(self) -> None:
        super().__init__(
            "PKGCAT_WEBHOOK_PASSPHRASE is not set: it seals the webhook endpoints' signing secrets"
        )


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def seal_secret(secret: str, passphrase: str | None) -> str:
    if passphrase is None:
        raise NoWebhookPassphrase
    return seal(secret.encode(), passphrase)


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
            found = self._opened[sealed] = unseal(sealed, self._passphrase)
        return found


def signature_header(body: bytes, keys: Sequence[bytes], timestamp: int) -> str:
    """``t=...,v1=...``: one ``v1`` per key, in the order given."""
    signed = str(timestamp).encode() + b"." + body
    parts = [f"t={timestamp}"]
    parts += [f"v1={hmac.new(key, signed, hashlib.sha256).hexdigest()}" for key in keys]
    return ",".join(parts)
