"""What every operation's handler shares: the query, the rendered-answer cache and its key."""

from __future__ import annotations

from pkgcat.domain import Caller
from pkgcat.http.operations import Query
from pkgcat.storage.cache import GenerationCache, cache_bytes

__all__ = ["Query", "ResponseCache", "response_cache", "view"]

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
