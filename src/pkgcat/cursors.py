"""Opaque, tamper-evident cursors for the lists that are walked page by page.

A cursor is base64url (no padding) of a compact payload, the position of
the last item a page returned (its sort key, as a JSON array), followed by a
16-byte truncated HMAC-SHA256. The MAC covers the payload *and* the list it
belongs to: the operation, the caller's source and the parameters that define
the list (package, dates, status, filters). Those are not written in the
cursor: they are what the request that presents it says, so a cursor altered
in any byte, presented by another source, to another operation or with other
filters fails the MAC and is refused (code 2 naming ``cursor``), and reveals
nothing of the source it was made for.

Positions are keys, never offsets: a walk resumes right after the last item
it saw, so items that arrive meanwhile shift nothing.

The key is per database (migration 0005 stores it as ``api_secrets.cursor_key``),
so every worker and host of one catalogue agrees on it with no configuration.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

import orjson

from pkgcat.errors import InvalidArgument

MAX_LENGTH = 512
"""The longest cursor accepted, in characters; a longer one is refused unread."""
MAC_BYTES = 16

Position = tuple[int | str, ...]
"""The sort key of the last item of a page: integers and strings only."""
Filters = Sequence[tuple[str, str | int | None]]
"""The parameters that define a list, as (name, value) pairs in a fixed order."""

_REFUSED = "not a cursor of this list; start again without it"


class Cursors:
    """Makes and reads cursors with one secret key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a cursor key needs at least 16 bytes")
        self._key = key

    @classmethod
    def from_hex(cls, value: str) -> Cursors:
        """Cursors keyed with a hex string (as migration 0005 stores the key)."""
        return cls(bytes.fromhex(value))

    def _mac(self, operation: str, source_id: int, filters: Filters, payload: bytes) -> bytes:
        # The list's identity as canonical JSON, then the payload: JSON holds no raw
        # newline, so no two (list, payload) pairs give the same input.
        scope = orjson.dumps([operation, source_id, [list(pair) for pair in filters]])
        digest = hmac.new(self._key, scope + b"\n" + payload, hashlib.sha256).digest()
        return digest[:MAC_BYTES]

    def make(self, operation: str, source_id: int, filters: Filters, position: Position) -> str:
        """The cursor that resumes ``operation``'s list right after ``position``."""
        payload = orjson.dumps(list(position))
        token = payload + self._mac(operation, source_id, filters, payload)
        cursor = base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii")
        if len(cursor) > MAX_LENGTH:  # a sort key longer than any stored one allows
            raise ValueError("position too long for a cursor")
        return cursor

    def read(self, cursor: str, operation: str, source_id: int, filters: Filters) -> Position:
        """The position ``cursor`` holds, if it was made for this very list; else code 2."""
        if len(cursor) > MAX_LENGTH:
            raise InvalidArgument("cursor", f"longer than {MAX_LENGTH} characters; {_REFUSED}")
        if not cursor.isascii():
            raise InvalidArgument("cursor", _REFUSED)
        try:
            token = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            raise InvalidArgument("cursor", _REFUSED) from None
        # Only the canonical spelling: otherwise trailing bits would give one token two cursors.
        if base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii") != cursor:
            raise InvalidArgument("cursor", _REFUSED)
        payload, mac = token[:-MAC_BYTES], token[-MAC_BYTES:]
        if len(token) <= MAC_BYTES or not hmac.compare_digest(
            mac, self._mac(operation, source_id, filters, payload)
        ):
            raise InvalidArgument("cursor", _REFUSED)
        try:
            position = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise InvalidArgument("cursor", _REFUSED) from None
        if not isinstance(position, list) or not all(
            isinstance(part, int | str) and not isinstance(part, bool) for part in position
        ):
            raise InvalidArgument("cursor", _REFUSED)
        return tuple(position)


def key_position(position: Position) -> tuple[int, str]:
    """A (purchased_at, txn_id) position, as buyers and sales are sorted; code 2 otherwise."""
    if len(position) == 2:
        when, txn_id = position
        if isinstance(when, int) and isinstance(txn_id, str):
            return when, txn_id
    raise InvalidArgument("cursor", _REFUSED)


def text_position(position: Position) -> str:
    """A one-string position (a package identifier); code 2 otherwise."""
    if len(position) == 1 and isinstance(position[0], str):
        return position[0]
    raise InvalidArgument("cursor", _REFUSED)
