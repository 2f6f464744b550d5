"""Parameters and the rendered-answer cache shared by every operation's handler."""

from __future__ import annotations

from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.services import BLANK
from pkgcat.storage.cache import GenerationCache, cache_bytes

Query = dict[str, str]

_MAX_DIGITS = 12
INTEGER_MAX = 10**_MAX_DIGITS - 1
"""The largest integer a parameter may hold (twelve digits): the OpenAPI document's ``maximum``."""


def integer(query: Query, name: str, default: int) -> int:
    """An integer parameter in plain decimal digits, or ``default`` when absent.

    ASCII white space around it and a sign are allowed; at most :data:`INTEGER_MAX`."""
    raw = query.get(name)
    if raw is None:
        return default
    text = raw.strip(BLANK)
    digits = text[1:] if text[:1] in "+-" else text
    # Leading zeros are a spelling: 007 is 7, however many of them there are.
    if not digits.isdigit() or not digits.isascii() or len(digits.lstrip("0")) > _MAX_DIGITS:
        raise InvalidArgument(
            name, f"must be an integer of at most {_MAX_DIGITS} digits, got {raw!r}"
        )
    return int(text)


ResponseCache = GenerationCache[tuple[object, ...], bytes]
"""Rendered answers that depend only on the catalogue, for one catalogue generation.

Details and buyers pages are the same bytes for every request with the same
parameters, caller source, shape and zone until the catalogue changes. A usage
answer changes with every request, but only in its last two days: the rendered
days before them are kept.

Keys are made of the parameters as validated (the package identifier trimmed,
the page size clamped), never of their spelling: every spelling of one request
shares one entry.
"""


def response_cache(worker_bytes: int) -> ResponseCache:
    """The response cache, with its share of a worker's cache budget."""
    return ResponseCache(cache_bytes(worker_bytes, "responses"))


def view(caller: Caller) -> tuple[object, ...]:
    """What, besides the parameters, decides an answer: the caller's source, shape and zone."""
    return (caller.application.source_id, caller.shape, caller.timezone)
