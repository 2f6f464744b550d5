"""Secrets sealed with a passphrase: how the database keeps what must be opened again.

A secret is sealed as an OpenPGP message encrypted for a passphrase (RFC 9580
password-based encryption, done in process by pysequoia), so the database alone
opens nothing: every worker and host given the passphrase can. A secret that
signs must be opened to sign, so it cannot be kept as a hash.

Two passphrases seal, each named by its setting where a secret does not open:

- ``PKGCAT_REPOSITORY_PASSPHRASE``: the repository's signing keys and the key of
  download URLs (:mod:`pkgcat.repository.keys`);
- ``PKGCAT_WEBHOOK_PASSPHRASE``: the webhook endpoints' signing secrets, and the
  kept answers of the writes that hold one (:mod:`pkgcat.webhooks.signing`).
"""

from __future__ import annotations

import pysequoia as pgp


class KeyProblem(Exception):
    """A key or secret that cannot be made, sealed, opened or used; the message says why, in
    one line."""


def seal(secret: bytes, passphrase: str) -> str:
    """``secret`` encrypted for ``passphrase``, as an armored OpenPGP message."""
    return pgp.encrypt(secret, passwords=[passphrase]).decode("ascii")


def unseal(sealed: str, passphrase: str, *, what: str, setting: str) -> bytes:
    """What :func:`seal` sealed. :class:`KeyProblem` when the passphrase is not the one, naming
    ``what`` was sealed (``the repository's keys``) and the ``setting`` that gives it."""
    try:
        opened = pgp.decrypt(sealed.encode("ascii"), passwords=[passphrase]).bytes
    except RuntimeError:  # Sequoia's errors carry a trace: never shown, never logged
        raise KeyProblem(
            f"{what} do not open with {setting} (it is not the passphrase they were sealed with)"
        ) from None
    assert opened is not None
    return opened
