"""Secret keys: ``pkc_`` followed by 40 random base62 characters.

A key is shown once, when it is created; the database keeps its SHA-256 hash
and a short display prefix. A key carries about 238 bits of randomness, so a
plain (unsalted, fast) hash is enough: no dictionary or brute force can reach it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string

KEY_PREFIX = "pkc_"
KEY_RANDOM_LENGTH = 40
DISPLAY_PREFIX_LENGTH = len(KEY_PREFIX) + 8
_ALPHABET = string.digits + string.ascii_letters
_KEY_RE = re.compile(rf"{KEY_PREFIX}[0-9A-Za-z]{{{KEY_RANDOM_LENGTH}}}")


def new_key() -> str:
    """A fresh random key."""
    return KEY_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))


def is_well_formed(key: str) -> bool:
    """Whether ``key`` has the form of a key (checked before any database read)."""
    return _KEY_RE.fullmatch(key) is not None


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key: what the database stores and looks up."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def display_prefix(key: str) -> str:
    """The part of a key that may be shown and logged (``pkc_`` and 8 characters)."""
    return key[:DISPLAY_PREFIX_LENGTH]


def same_hash(a: str, b: str) -> bool:
    """Constant-time comparison of two hashes."""
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))
