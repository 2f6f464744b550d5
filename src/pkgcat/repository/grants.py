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
constant time, all without the database) and then claimed
(:func:`pkgcat.storage.served.claim_grant`): one insert of the grant's id, whose
primary key lets exactly one request of all workers and hosts through, and in
the same transaction a row that binds the claim to that request's client
(:meth:`Grants.claim_id`). A download cut short is resumed on the same URL: apt
asks again with ``Range: bytes=N-`` once it holds part of a file (methods/http.cc,
``HttpMethod::SendReq``: ``if (Server->RangesAllowed && stat(Itm->DestFile...) >= 0
&& SBuf.st_size > 0) Req << "Range: bytes=" ... << "If-Range: " ...``), and that
request is let through only for the client that claimed it, until the file has
gone out whole once (:meth:`Grants.done_id`, inserted before the last byte is
sent, so it is counted once). A ``HEAD`` claims nothing. A replayed, altered,
expired or foreign URL is refused with the reason.

What a resume must match: the claim's client address (its /64 for IPv6, behind
``PKGCAT_TRUSTED_PROXIES`` the address they forward) and its ``User-Agent``,
exactly. apt presents nothing else of its own again: it keeps no cookie, and its
``If-Range`` is a date (the partial file's mtime), not a value a server could
make secret. Both are kept only as a MAC under the download key, so the table
holds no address. The User-Agent is no secret (one apt version sends one string):
the address is what binds, and a second device behind the buyer's address holding
the URL could resume it too, until the file has gone out whole once.
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

    def claim_id(self, grant: Grant, client: str, agent: str) -> str:
        """The row that binds a claimed grant to its client: 128 bits of a MAC, the width of a
        grant's id, so that it shares the grants' table (and their purge) with no migration."""
        return self._row("claim", grant.grant_id, client, agent)

    def done_id(self, grant: Grant) -> str:
        """The row that says a grant's file has gone out whole: its download was counted."""
        return self._row("done", grant.grant_id)

    def _row(self, *parts: str) -> str:
        message = "\n".join(parts).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:32]

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
