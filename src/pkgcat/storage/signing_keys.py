"""The repository's signing keys and the key of download URLs, as the database keeps them.

Each function is one transaction (or one read). What the rows hold is made, sealed and
opened by :mod:`pkgcat.repository.keys`: here a key is its fingerprint, its public key
and its sealed secret key (``repository_keys``, migration 0006), and the download URLs'
key one sealed value of ``api_secrets``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError

from pkgcat.storage import schema as t

DOWNLOAD_KEY = "download_key"
"""The name, in ``api_secrets``, of the sealed key that signs download URLs."""


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A signing key as stored, but its sealed secret."""

    fingerprint: str
    created_at: int
    retired_at: int | None
    public_key: str
    """The armored certificate."""


_ORDER = (t.repository_keys.c.created_at, t.repository_keys.c.fingerprint)
"""Oldest first: the order keys sign in and are listed and exported in."""


def add_key(engine: Engine, key: StoredKey, sealed_key: str) -> None:
    """Store a new signing key (not retired), its secret key sealed."""
    with engine.begin() as db:
        db.execute(
            insert(t.repository_keys).values(
                fingerprint=key.fingerprint,
                public_key=key.public_key,
                sealed_key=sealed_key,
                created_at=key.created_at,
            )
        )


def stored_keys(engine: Engine) -> list[StoredKey]:
    """Every key, oldest first, retired ones included."""
    k = t.repository_keys
    with engine.connect() as db:
        rows = db.execute(
            select(k.c.fingerprint, k.c.created_at, k.c.retired_at, k.c.public_key).order_by(
                *_ORDER
            )
        ).all()
    return [StoredKey(*row) for row in rows]


def retire(engine: Engine, fingerprint: str, when: int) -> None:
    """Mark the key retired at ``when``: it signs no more."""
    k = t.repository_keys
    with engine.begin() as db:
        db.execute(update(k).where(k.c.fingerprint == fingerprint).values(retired_at=when))


def signing_public_keys(engine: Engine) -> list[str]:
    """The armored public key of every key not retired, oldest first."""
    k = t.repository_keys
    with engine.connect() as db:
        return list(
            db.execute(
                select(k.c.public_key).where(k.c.retired_at.is_(None)).order_by(*_ORDER)
            ).scalars()
        )


def sealed_signing_keys(engine: Engine) -> list[tuple[str, str]]:
    """(fingerprint, sealed secret key) of every key not retired, oldest first."""
    k = t.repository_keys
    with engine.connect() as db:
        rows = db.execute(
            select(k.c.fingerprint, k.c.sealed_key)
            .where(k.c.retired_at.is_(None))
            .order_by(*_ORDER)
        ).all()
    return [(fingerprint, sealed) for fingerprint, sealed in rows]


def sealed_download_key(engine: Engine) -> str | None:
    """The sealed key of download URLs, or None before its first use."""
    s = t.api_secrets
    with engine.connect() as db:
        found: str | None = db.execute(select(s.c.value).where(s.c.name == DOWNLOAD_KEY)).scalar()
    return found


def keep_download_key(engine: Engine, sealed: str) -> str:
    """Store ``sealed`` as the key of download URLs unless a key is there already (another
    process made one first); the sealed key stored, whichever it is."""
    s = t.api_secrets
    try:
        with engine.begin() as db:
            db.execute(insert(s).values(name=DOWNLOAD_KEY, value=sealed))
    except IntegrityError:
        pass  # another process made it first: use theirs
    stored = sealed_download_key(engine)
    assert stored is not None
    return stored
