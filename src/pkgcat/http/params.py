"""What every operation's handler shares: the query, and the rendered-answer cache."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVarTuple

from pkgcat.domain import Caller
from pkgcat.http.operations import Query
from pkgcat.services import CatalogueService
from pkgcat.storage.cache import GenerationCache, cache_bytes

__all__ = ["Handler", "Query", "ResponseCache", "response_cache"]

Ts = TypeVarTuple("Ts")


class ResponseCache(GenerationCache[tuple[object, ...], bytes]):
    """Rendered answers that depend only on the catalogue, for one catalogue generation.

    Details and buyers pages are the same bytes for every request with the same
    parameters, caller source, shape and zone until the catalogue changes. A usage
    answer changes with every request, but only in its last two days: the rendered
    days before them are kept.

    Keys are made of the parameters as the table read them (the package identifier
    trimmed, the page size clamped), never of their spelling: every spelling of one
    request shares one entry.
    """

    async def answer(
        self,
        caller: Caller,
        key: tuple[object, ...],
        render: Callable[[*Ts], Awaitable[bytes]],
        *args: *Ts,
    ) -> bytes:
        """The answer kept under ``key`` for the caller's view (source, shape and zone), or
        ``render(*args)``'s, kept for the caller's catalogue generation."""
        generation = caller.generation
        key = (*key, caller.application.source_id, caller.shape, caller.timezone)
        body = self.get(generation, key)
        if body is None:
            body = await render(*args)
            self.put(generation, key, body)
        return body


Handler = Callable[[CatalogueService, Caller, Query, ResponseCache], Awaitable[bytes]]
"""``async def h(service, caller, query, cache) -> bytes``: a read operation's whole answer body."""


def response_cache(worker_bytes: int) -> ResponseCache:
    """The response cache, with its share of a worker's cache budget."""
    return ResponseCache(cache_bytes(worker_bytes, "responses"))
