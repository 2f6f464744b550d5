"""Signed, short-lived, single-use download URLs: how a paid package's .deb is handed out.

The server makes one (:meth:`Grants.make`) for one file path; the payment
flow will call it once a buyer is known to own the package. The URL is the
file's own path with three parameters::

    /repo/pool/ab/abcd.../pkg_1.0_all.deb?grant=RANDOM&expires=UNIX&signature=MAC

``grant`` is 16 random bytes (hex), ``expires`` the end of its lifetime, and
``signature`` an HMAC-SHA256 (base64url) of the path, the grant and the expiry
under the per-database download key (sealed in the database, see
:mod:`pkgcat.repository.keys`). It carries no API key, token or buyer: it
proves only that this server made it for this path until then.

A request with one is checked (:meth:`Grants.check`: form, expiry, MAC in
constant time, all without the database) and then spent (:meth:`Grants.spend`):
one insert of the grant's id, whose primary key lets exactly one request of all
workers and hosts through. A replayed, altered, expired or foreign URL is
refused with the reason.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

_GRANT = re.compile(r"[0-9a-f]{32}")
_EXPIRES = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"[A-Za-z0-9_-]{43}")


class GrantRefused(Exception):
    """A download URL that does not authorize this download; the message says why."""


@dataclass(frozen=True, slots=True)
class Grant:
    grant_id: str
    expires_at: int


class Grants:
    """Makes and checks download URLs with one key (32 bytes)."""

    def __init__(self, key: bytes, lifetime: int) -> None:
        self._key = key
        self.lifetime = lifetime

    def _mac(self, path: str, grant_id: str, expires: int) -> str:
        message = f"{path}\n{grant_id}\n{expires}".encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def make(self, path: str, now: int) -> str:
        """A URL (path and query) that downloads ``path`` once, until ``now`` + the lifetime."""
        grant_id = secrets.token_hex(16)
        expires = now + self.lifetime
        query = {
            "grant": grant_id,
            "expires": expires,
            "signature": self._mac(path, grant_id, expires),
        }
        return f"{path}?{urlencode(query)}"

    def check(self, path: str, query: Mapping[str, str], now: int) -> Grant:
        """The grant a request carries for ``path``; :class:`GrantRefused` unless it is good."""
        grant_id = query.get("grant", "")
        expires = query.get("expires", "")
        signature = query.get("signature", "")
        if not grant_id:
            raise GrantRefused("a paid package: this download needs a download URL from the server")
        if not (
            _GRANT.fullmatch(grant_id)
            and _EXPIRES.fullmatch(expires)
            and _SIGNATURE.fullmatch(signature)
        ):
            raise GrantRefused("a malformed download URL")
        if not hmac.compare_digest(self._mac(path, grant_id, int(expires)), signature):
            raise GrantRefused("a download URL not made by this server for this file")
        if int(expires) < now:
            raise GrantRefused("an expired download URL; ask for a new one")
        return Grant(grant_id, int(expires))
