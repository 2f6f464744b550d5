"""The three operations (spec 4): parse the query, call the service, render the shape."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from pkgcat import shapes
from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.http.errors import envelope, envelope_of_items
from pkgcat.services import (
    BLANK,
    DAYS_DEFAULT,
    LIMIT_DEFAULT,
    CatalogueService,
    buyers_window,
    package_identifier,
)
from pkgcat.storage.cache import GenerationCache, cache_bytes

Query = dict[str, str]
Handler = Callable[[CatalogueService, Caller, Query, "ResponseCache"], Awaitable[bytes]]

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


def _view(caller: Caller) -> tuple[object, ...]:
    """What, besides the parameters, decides an answer: the caller's source, shape and zone."""
    return (caller.application.source_id, caller.shape, caller.timezone)


def _json_items(items: list[dict[str, Any]]) -> bytes:
    """A JSON array's items without its brackets, to be joined with others."""
    return orjson.dumps(items)[1:-1]


async def usage(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    calendar = service.usage_calendar(caller, integer(query, "days", DAYS_DEFAULT))
    zone = ZoneInfo(caller.timezone)
    # Only the last day or two can still change: the days before them are rendered
    # once per catalogue generation (operator loads of statistics move it).
    live = service.live_days(caller)  # the calendar holds at least two days
    settled_days, live_days = calendar[:-live], calendar[-live:]
    key = ("usage", caller.application.id, calendar[0], live_days[0], *_view(caller))
    settled = cache.get(caller.generation, key)
    if settled is None:
        days = await service.usage_on(caller, settled_days)
        settled = _json_items(shapes.usage_body(days, caller.shape, zone, ends_today=False))
        cache.put(caller.generation, key, settled)
    if live == 1:  # today only: the count this request's commit returned
        recent = [service.usage_today(caller)]
    else:
        recent = await service.usage_on(caller, live_days)
    return envelope_of_items(settled, _json_items(shapes.usage_body(recent, caller.shape, zone)))


async def details(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    package_id = package_identifier(query.get("package", ""))
    key = ("details", package_id, *_view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        package = await service.package_details(caller, package_id)
        body = envelope(shapes.package_body(package, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


async def buyers(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    limit, page = buyers_window(integer(query, "limit", LIMIT_DEFAULT), integer(query, "page", 1))
    package_id = package_identifier(query.get("package", ""))
    key = ("buyers", package_id, limit, page, *_view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        result = await service.buyers(caller, package_id, limit=limit, page=page)
        body = envelope(shapes.buyers_body(result, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


VERSION = "1.0"


def operation_name(path: str) -> str:
    """A route's operation as usage counts it: ``/1.0/package/details.json`` is ``package/details``."""
    return path[len(VERSION) + 2 : -len(".json")]


ROUTES: dict[str, Handler] = {
    f"/{VERSION}/application/usage.json": usage,
    f"/{VERSION}/package/details.json": details,
    f"/{VERSION}/package/buyers.json": buyers,
}
"""Path to handler; the OpenAPI document lists the same paths (a test checks it)."""
