"""The handlers of the served operations: parse the query, call the service, render the shape.

Which operations exist, and their parameters, is the table of :mod:`pkgcat.http.operations`;
the seller operations of API 1.1 have their handlers in :mod:`pkgcat.http.seller`."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from pkgcat import shapes
from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.http import seller, uploads, webhooks
from pkgcat.http.errors import envelope, envelope_of_items
from pkgcat.http.operations import BY_PATH, DAYS, INTEGER_MAX, LIMIT, PAGE, VERSION, routes
from pkgcat.http.params import Query, ResponseCache, response_cache, view
from pkgcat.http.uploads import Incoming
from pkgcat.repository.uploads import Uploads
from pkgcat.services import USAGE_BY, CatalogueService, buyers_window, package_identifier

Handler = Callable[[CatalogueService, Caller, Query, ResponseCache], Awaitable[bytes]]
"""``async def h(service, caller, query, cache) -> bytes``: an operation's whole answer body."""
WriteHandler = Callable[[CatalogueService, Uploads, Caller, Incoming], Awaitable[bytes]]
"""``async def h(service, uploads, caller, incoming) -> bytes``: a write's whole answer body."""

__all__ = [
    "INTEGER_MAX",
    "ROUTES",
    "TAGGED",
    "VERSION",
    "WEBHOOK_ROUTES",
    "WRITE_ROUTES",
    "Handler",
    "Incoming",
    "Query",
    "WriteHandler",
    "operation_name",
    "response_cache",
]


def _json_items(items: list[dict[str, Any]]) -> bytes:
    """A JSON array's items without its brackets, to be joined with others."""
    return orjson.dumps(items)[1:-1]


def _usage_calendar(service: CatalogueService, caller: Caller, query: Query) -> tuple[date, ...]:
    """The report's days: the last ``days`` and today, or ``start`` to ``end``."""
    if "start" in query or "end" in query:
        if "days" in query:
            raise InvalidArgument("days", "give days, or start and end, not both")
        return service.usage_range(caller, query.get("start"), query.get("end"))
    return service.usage_calendar(caller, DAYS.integer(query))


def _usage_by(query: Query) -> str | None:
    by = query.get("by")
    if by is not None and by not in USAGE_BY:
        raise InvalidArgument("by", f"must be {' or '.join(USAGE_BY)}, got {by!r}")
    return by


async def usage(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    calendar = _usage_calendar(service, caller, query)
    by = _usage_by(query)
    zone = ZoneInfo(caller.timezone)
    # Only the last day or two can still change (today, and yesterday just after
    # midnight): the days before them are rendered once per catalogue generation
    # (operator loads of statistics move it).
    live = service.live_days(caller)
    split = bisect_left(calendar, caller.today - timedelta(days=live - 1))
    settled_days, live_days = calendar[:split], calendar[split:]
    key = ("usage", caller.application.id, calendar[0], split, len(live_days), by, *view(caller))
    settled = cache.get(caller.generation, key)
    if settled is None:
        days = await service.usage_on(caller, settled_days)
        operations = await service.usage_operations_on(caller, settled_days) if by else None
        settled = _json_items(
            shapes.usage_body(
                days, caller.shape, zone, ends_today=not live_days, operations=operations
            )
        )
        cache.put(caller.generation, key, settled)
    if not live_days:  # a range that ended before yesterday: all of it settled
        return envelope_of_items(settled)
    if live_days[0] == caller.today:  # today only: the count this request's commit returned
        recent = [service.usage_today(caller)]
    else:
        recent = await service.usage_on(caller, live_days)
    operations = await service.usage_operations_on(caller, live_days) if by else None
    return envelope_of_items(
        settled, _json_items(shapes.usage_body(recent, caller.shape, zone, operations=operations))
    )


async def details(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    package_id = package_identifier(query.get("package", ""))
    # Live: the downloads counted so far are part of the key (a worker's own commits and,
    # on PostgreSQL, every other's notifications drop what the counter keeps of them).
    counted = await service.counted_downloads(package_id)
    key = ("details", package_id, counted, *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        package = service.with_downloads(await service.package_details(caller, package_id), counted)
        body = envelope(shapes.package_body(package, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


async def buyers(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    if "cursor" in query:  # cursor mode; without it, page mode answers as it always has
        return await seller.buyers_walk(service, caller, query, cache)
    limit, page = buyers_window(LIMIT.integer(query), PAGE.integer(query))
    package_id = package_identifier(query.get("package", ""))
    key = ("buyers", package_id, limit, page, *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        result = await service.buyers(caller, package_id, limit=limit, page=page)
        body = envelope(shapes.buyers_body(result, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


ROUTES: dict[str, Handler] = routes(
    {
        "application/usage": usage,
        "package/details": details,
        "package/buyers": buyers,
        "source/packages": seller.source_packages,
        "package/check": seller.check,
        "source/sales": seller.sales,
        "package/downloads": seller.downloads,
    }
)
"""Path to handler of each served operation of the table (:mod:`pkgcat.http.operations`):
serving one is adding its line here."""

WRITE_ROUTES: dict[str, WriteHandler] = routes({"package/upload": uploads.upload})
"""Path to handler of each served write (POST) of the table."""

WEBHOOK_ROUTES: dict[str, webhooks.Handler] = routes(webhooks.HANDLERS)
"""Path to handler of each ``webhook/*`` operation, reads and writes: the caller's endpoints."""

TAGGED: frozenset[Handler] = frozenset(
    handler for path, handler in ROUTES.items() if BY_PATH[path].etag
)
"""The handlers whose answers carry an ``ETag`` (the table's ``etag``)."""


def operation_name(path: str) -> str:
    """A served route's operation as usage counts it: ``/1.0/package/details.json`` is ``package/details``."""
    return BY_PATH[path].name
