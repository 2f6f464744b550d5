"""The operations: parse the query, call the service, render the shape (seller.py: the seller API 1.1)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from pkgcat import shapes
from pkgcat.domain import Caller
from pkgcat.http import seller
from pkgcat.http.errors import envelope, envelope_of_items
from pkgcat.http.params import Query, ResponseCache, integer, view
from pkgcat.services import (
    DAYS_DEFAULT,
    LIMIT_DEFAULT,
    CatalogueService,
    buyers_window,
    package_identifier,
)

Handler = Callable[[CatalogueService, Caller, Query, ResponseCache], Awaitable[bytes]]


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
    key = ("usage", caller.application.id, calendar[0], live_days[0], *view(caller))
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
    key = ("details", package_id, *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        package = await service.package_details(caller, package_id)
        body = envelope(shapes.package_body(package, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


async def buyers(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    if "cursor" in query:  # cursor mode; without it, page mode answers as it always has
        return await seller.buyers_walk(service, caller, query, cache)
    limit, page = buyers_window(integer(query, "limit", LIMIT_DEFAULT), integer(query, "page", 1))
    package_id = package_identifier(query.get("package", ""))
    key = ("buyers", package_id, limit, page, *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        result = await service.buyers(caller, package_id, limit=limit, page=page)
        body = envelope(shapes.buyers_body(result, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


VERSION = "1.0"
ROUTES: dict[str, Handler] = {
    f"/{VERSION}/application/usage.json": usage,
    f"/{VERSION}/package/details.json": details,
    f"/{VERSION}/package/buyers.json": buyers,
    f"/{VERSION}/source/packages.json": seller.source_packages,
    f"/{VERSION}/package/check.json": seller.check,
    f"/{VERSION}/source/sales.json": seller.sales,
}
"""Path to handler; the OpenAPI document lists the same paths (a test checks it)."""
