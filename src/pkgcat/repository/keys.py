"""The repository's OpenPGP keys: made, sealed, listed, retired, exported, and used to sign.

Signing is done in process by pysequoia (Sequoia-PGP), so a server needs no
``gpg`` binary, keyring directory or agent (docs/architecture.md says why).

**Never in plain text.** A key's secret part is kept in the database only
sealed: the whole transferable secret key encrypted as an OpenPGP message for
the passphrase ``PKGCAT_REPOSITORY_PASSPHRASE`` (:mod:`pkgcat.sealing`, which
webhooks seal with too). Every worker and host that has the passphrase can sign;
the database alone cannot. The per-database key that signs download URLs is
sealed the same way. The rows are read and written by :mod:`pkgcat.storage.signing_keys`.

**Rotation.** Every key not retired signs: ``InRelease`` and ``Release.gpg``
carry one signature per key. apt accepts a file when any signature is from a
key it trusts, so clients that know only the old key, and clients that know
only the new one, both keep working while the operator hands out the new key
(``pkgcat repo key export`` exports every signing key). Retiring the old key
ends the overlap.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

import pysequoia as pgp
from sqlalchemy import Engine

from pkgcat.sealing import KeyProblem as KeyProblem  # the error of every key: raised here too
from pkgcat.sealing import seal, unseal
from pkgcat.storage import signing_keys as stored
from pkgcat.storage.signing_keys import StoredKey

SEALED_BY = "PKGCAT_REPOSITORY_PASSPHRASE"
"""The setting whose passphrase seals the repository's keys and the download URLs' key."""


class NoPassphrase(KeyProblem):
    """PKGCAT_REPOSITORY_PASSPHRASE is not set where a secret key is needed."""

    def __init__(self) -> None:
        super().__init__(f"{SEALED_BY} is not set: it seals the repository's secret keys")


def _opened(sealed: str, passphrase: str) -> bytes:
    return unseal(sealed, passphrase, what="the repository's keys", setting=SEALED_BY)


@dataclass(frozen=True, slots=True)
class KeyInfo:
    fingerprint: str
    created_at: int
    retired_at: int | None
    user_id: str


def create_key(engine: Engine, passphrase: str, label: str, *, now: int | None = None) -> KeyInfo:
    """Make a new signing key (Ed25519), store it sealed; it signs from the next indexes on."""
    made = pgp.Tsk.generate(f"{label} repository signing key")
    cert = made.extract_certificate()
    when = int(time.time()) if now is None else now
    stored.add_key(
        engine, StoredKey(cert.fingerprint, when, None, str(cert)), seal(bytes(made), passphrase)
    )
    return KeyInfo(cert.fingerprint, when, None, str(cert.user_ids[0]))


def list_keys(engine: Engine) -> list[KeyInfo]:
    """Every key, oldest first, retired ones included."""
    found = []
    for key in stored.stored_keys(engine):
        ids = pgp.Cert.from_bytes(key.public_key.encode()).user_ids
        found.append(
            KeyInfo(key.fingerprint, key.created_at, key.retired_at, str(ids[0]) if ids else "")
        )
    return found


def retire_key(engine: Engine, fingerprint: str, *, now: int | None = None) -> KeyInfo:
    """Stop signing with a key (a prefix of its fingerprint is enough); never the last one."""
    active = [key for key in list_keys(engine) if key.retired_at is None]
    wanted = fingerprint.lower().replace(" ", "")
    matching = [key for key in active if key.fingerprint.startswith(wanted)] if wanted else []
    if len(matching) != 1:
        raise KeyProblem(
            f"no signing key {fingerprint!r}"
            if not matching
            else f"{fingerprint!r} names {len(matching)} signing keys: give more of the fingerprint"
        )
    if len(active) == 1:
        raise KeyProblem(
            "it is the only signing key: create its successor first (pkgcat repo key create)"
        )
    when = int(time.time()) if now is None else now
    stored.retire(engine, matching[0].fingerprint, when)
    return KeyInfo(matching[0].fingerprint, matching[0].created_at, when, matching[0].user_id)


def export_keys(engine: Engine) -> str:
    """The public keys of every signing key, in one armored block: what clients' Signed-By reads."""
    public = stored.signing_public_keys(engine)
    raw = b"".join(bytes(pgp.Cert.from_bytes(key.encode())) for key in public)
    if not raw:
        raise KeyProblem("the repository has no signing key yet: pkgcat repo key create makes one")
    return pgp.armor(raw, pgp.ArmorKind.PublicKey)


class Signers:
    """The unsealed signing keys of one process, opened once each and kept while they sign."""

    def __init__(self, passphrase: str | None) -> None:
        self._passphrase = passphrase
        self._opened: dict[str, pgp.Tsk] = {}

    def current(self, engine: Engine) -> list[pgp.Tsk]:
        """The keys that sign now (an empty list without a passphrase or without keys)."""
        sealed = stored.sealed_signing_keys(engine)
        if self._passphrase is None:
            return []
        for fingerprint, secret in sealed:
            if fingerprint not in self._opened:
                self._opened[fingerprint] = pgp.Tsk.from_bytes(_opened(secret, self._passphrase))
        return [self._opened[fingerprint] for fingerprint, _ in sealed]


def _signatures(signed: bytes) -> bytes:
    """The binary signature packets of an armored signature (or of a cleartext message's)."""
    armored = signed[signed.index(b"-----BEGIN PGP SIGNATURE-----") :]
    return bytes(pgp.Sig.from_bytes(armored))


def clearsign(keys: list[pgp.Tsk], text: bytes) -> bytes:
    """``text`` in the cleartext signature framework, signed by every key (InRelease)."""
    assert keys, "signing needs a key"
    made = [pgp.sign(key.signer(), text, mode=pgp.SignatureMode.CLEAR) for key in keys]
    heads = {one[: one.index(b"-----BEGIN PGP SIGNATURE-----")] for one in made}
    if len(heads) != 1:  # keys that hash differently would need a Hash header naming both
        raise KeyProblem("the signing keys use different hash algorithms")
    signatures = b"".join(_signatures(one) for one in made)
    return heads.pop() + pgp.armor(signatures, pgp.ArmorKind.Signature).encode("ascii")


def detach_sign(keys: list[pgp.Tsk], data: bytes) -> bytes:
    """An armored detached signature of ``data`` by every key (Release.gpg)."""
    assert keys, "signing needs a key"
    made = [pgp.sign(key.signer(), data, mode=pgp.SignatureMode.DETACHED) for key in keys]
    return pgp.armor(b"".join(_signatures(one) for one in made), pgp.ArmorKind.Signature).encode(
        "ascii"
    )


def download_key(engine: Engine, passphrase: str | None) -> bytes:
    """The per-database key that signs download URLs, made (sealed) on first use."""
    if passphrase is None:
        raise NoPassphrase
    sealed = stored.sealed_download_key(engine)
    if sealed is None:
        sealed = stored.keep_download_key(engine, seal(secrets.token_bytes(32), passphrase))
    return _opened(sealed, passphrase)
