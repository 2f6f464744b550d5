"""API keys: a secret key is ``pkc_`` and a public key ``pkp_``, each followed by 40 random
base62 characters.

A key is shown once, when it is created; the database keeps its SHA-256 hash
and a short display prefix. A key carries about 238 bits of randomness, so a
plain (unsalted, fast) hash is enough: no dictionary or brute force can reach it.

The two kinds differ from their first characters on, as Stripe's ``sk_`` and ``pk_`` do, so
that the kind is known from the key's form before any database read: a public key (made to
sit inside a tweak, on devices) offered where a secret key is needed is told apart at once,
and a secret key found in a repository or a paste is recognised by a scanner that rightly
ignores the public ones. The prefixes share no start longer than ``pk``, so no display
prefix of one kind is ever that of the other.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string

from pkgcat.domain import KeyKind

KEY_PREFIX = "pkc_"
PUBLIC_PREFIX = "pkp_"
PREFIXES: dict[KeyKind, str] = {"secret": KEY_PREFIX, "public": PUBLIC_PREFIX}
KEY_RANDOM_LENGTH = 40
DISPLAY_PREFIX_LENGTH = len(KEY_PREFIX) + 8
_ALPHABET = string.digits + string.ascii_letters
_KEY_RE = re.compile(rf"{KEY_PREFIX}[0-9A-Za-z]{{{KEY_RANDOM_LENGTH}}}")
_PUBLIC_RE = re.compile(rf"{PUBLIC_PREFIX}[0-9A-Za-z]{{{KEY_RANDOM_LENGTH}}}")


def new_key(kind: KeyKind = "secret") -> str:
    """A fresh random key of ``kind``."""
    return PREFIXES[kind] + "".join(secrets.choice(_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))


def is_well_formed(key: str) -> bool:
    """Whether ``key`` has the form of a secret key (checked before any database read)."""
    return _KEY_RE.fullmatch(key) is not None


def is_public(key: str) -> bool:
    """Whether ``key`` has the form of a public key (checked before any database read)."""
    return _PUBLIC_RE.fullmatch(key) is not None


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key: what the database stores and looks up."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def display_prefix(key: str) -> str:
    """The part of a key that may be shown and logged (its kind's prefix and 8 characters)."""
    return key[:DISPLAY_PREFIX_LENGTH]


def same_hash(a: str, b: str) -> bool:
    """Constant-time comparison of two hashes."""
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))
