"""The handlers of the served operations: read the query through the table, call the service,
render the shape (kept by the response cache).

Which operations exist, and their parameters, is the table of :mod:`pkgcat.http.operations`;
the seller operations of API 1.1 have their handlers in :mod:`pkgcat.http.seller`."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from pkgcat import models
from pkgcat.domain import Caller, Shape, UsageDay
from pkgcat.http import licences, money, seller, uploads, webhooks
from pkgcat.http.errors import envelope, envelope_of_items
from pkgcat.http.operations import (
    BY_NAME,
    BY_PATH,
    DAYS,
    END,
    INTEGER_MAX,
    LIMIT,
    PACKAGE,
    PAGE,
    START,
    VERSION,
    days_and_range,
    routes,
)
from pkgcat.http.params import Handler, Query, ResponseCache, response_cache
from pkgcat.http.uploads import Incoming
from pkgcat.repository.uploads import Uploads
from pkgcat.services import CatalogueService

WriteHandler = Callable[[CatalogueService, Uploads, Caller, Incoming], Awaitable[bytes]]
"""``async def h(service, uploads, caller, incoming) -> bytes``: a write's whole answer body."""

__all__ = [
    "INTEGER_MAX",
    "LICENCE_ROUTES",
    "MONEY_ROUTES",
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


_BY = BY_NAME["application/usage"].parameter("by")


def _last_entry(day: date, shape: Shape, zone: ZoneInfo) -> tuple[bytes, bytes]:
    """A report's last entry for ``day`` as :func:`models.usage_body` renders it, in two parts:
    the bytes before its count and after it (the count is the entry's last 0)."""
    rendered = _json_items(models.usage_body([UsageDay(day, 0)], shape, zone))
    before, _, after = rendered.rpartition(b"0")
    return before, after


@lru_cache(maxsize=2)
def _report_tail(shape: Shape) -> bytes:
    """What follows today's count to the end of a usage answer (the same for every day)."""
    return _last_entry(date(2000, 1, 1), shape, ZoneInfo("UTC"))[1] + b"]}"


async def _report_head(
    service: CatalogueService, caller: Caller, settled_days: tuple[date, ...]
) -> bytes:
    """A usage answer ending today, up to today's count: the settled days and today's date."""
    settled = await _settled_usage(service, caller, settled_days, None, False)
    before, _ = _last_entry(caller.today, caller.shape, ZoneInfo(caller.timezone))
    return envelope_of_items(settled, before)[: -len(b"]}")]


def _usage_calendar(service: CatalogueService, caller: Caller, query: Query) -> tuple[date, ...]:
    """The report's days: the last ``days`` and today, or ``start`` to ``end``."""
    if "start" in query or "end" in query:
        if "days" in query:
            raise days_and_range()
        end = END.day(query)
        return service.usage_range(caller, START.day(query), end)
    return service.usage_calendar(caller, DAYS.bounded(query))


async def _settled_usage(
    service: CatalogueService, caller: Caller, days: tuple[date, ...], by: str | None, ends: bool
) -> bytes:
    counts = await service.usage_on(caller, days)
    operations = await service.usage_operations_on(caller, days) if by else None
    zone = ZoneInfo(caller.timezone)
    return _json_items(
        models.usage_body(counts, caller.shape, zone, ends_today=ends, operations=operations)
    )


async def usage(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    calendar = _usage_calendar(service, caller, query)
    by = _BY.choice(query)
    # Only the last day or two can still change (today, and yesterday just after
    # midnight): the days before them are rendered once per catalogue generation
    # (operator loads of statistics move it).
    live = service.live_days(caller)
    split = bisect_left(calendar, caller.today - timedelta(days=live - 1))
    settled_days, live_days = calendar[:split], calendar[split:]
    if by is None and len(live_days) == 1 and live_days[0] == caller.today:
        # The usual report: all of it but today's count is kept, rendered once per catalogue
        # generation and day; the count is the one this request's commit returned.
        head_key = ("usage-head", caller.application.id, calendar[0], split)
        head = await cache.answer(caller, head_key, _report_head, service, caller, settled_days)
        today = service.usage_today(caller).requests
        return b"%s%d%s" % (head, today, _report_tail(caller.shape))
    key = ("usage", caller.application.id, calendar[0], split, len(live_days), by)
    settled = await cache.answer(
        caller, key, _settled_usage, service, caller, settled_days, by, not live_days
    )
    if not live_days:  # a range that ended before yesterday: all of it settled
        return envelope_of_items(settled)
    if live_days[0] == caller.today:  # today only: the count this request's commit returned
        recent = [service.usage_today(caller)]
    else:
        recent = await service.usage_on(caller, live_days)
    operations = await service.usage_operations_on(caller, live_days) if by else None
    zone = ZoneInfo(caller.timezone)
    return envelope_of_items(
        settled, _json_items(models.usage_body(recent, caller.shape, zone, operations=operations))
    )


async def _details(
    service: CatalogueService, caller: Caller, package_id: str, counted: int
) -> bytes:
    package = service.with_downloads(await service.package_details(caller, package_id), counted)
    return envelope(models.package_body(package, caller.shape, ZoneInfo(caller.timezone)))


async def details(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    package_id = PACKAGE.identifier(query)
    # Live: the downloads counted so far are part of the key (a worker's own commits and,
    # on PostgreSQL, every other's notifications drop what the counter keeps of them).
    counted = await service.counted_downloads(package_id)
    key = ("details", package_id, counted)
    return await cache.answer(caller, key, _details, service, caller, package_id, counted)


async def _buyers(
    service: CatalogueService, caller: Caller, package_id: str, limit: int, page: int
) -> bytes:
    found = await service.buyers(caller, package_id, limit=limit, page=page)
    return envelope(models.buyers_body(found, caller.shape, ZoneInfo(caller.timezone)))


async def buyers(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    if "cursor" in query:  # cursor mode; without it, page mode answers as it always has
        return await seller.buyers_walk(service, caller, query, cache)
    limit, page = LIMIT.integer(query), PAGE.integer(query)
    limit, page = LIMIT.size(limit), PAGE.within(page)
    package_id = PACKAGE.identifier(query)
    key = ("buyers", package_id, limit, page)
    return await cache.answer(caller, key, _buyers, service, caller, package_id, limit, page)


ROUTES: dict[str, Handler] = routes(
    {
        "application/usage": usage,
        "package/details": details,
        "package/buyers": buyers,
        **seller.HANDLERS,
    }
)
"""Path to handler of each served read of the table (:mod:`pkgcat.http.operations`): serving
one is adding its line here, or to the ``HANDLERS`` of the module that holds its handler."""

WRITE_ROUTES: dict[str, WriteHandler] = routes({"package/upload": uploads.upload})
"""Path to handler of each served write (POST) of the table."""

WEBHOOK_ROUTES: dict[str, webhooks.Handler] = routes(webhooks.HANDLERS)
"""Path to handler of each ``webhook/*`` operation, reads and writes: the caller's endpoints."""

MONEY_ROUTES: dict[str, money.Handler] = routes(money.HANDLERS)
"""Path to handler of each money operation, reads and writes: the caller's source's money."""
LICENCE_ROUTES: dict[str, licences.Handler] = routes(licences.HANDLERS)
"""Path to handler of each whitelist operation, read and writes (the licence use cases)."""

TAGGED: frozenset[Handler] = frozenset(
    handler for path, handler in ROUTES.items() if BY_PATH[path].etag
)
"""The handlers whose answers carry an ``ETag`` (the table's ``etag``)."""


def operation_name(path: str) -> str:
    """A served route's operation as usage counts it: ``/1.0/package/details.json`` is ``package/details``."""
    return BY_PATH[path].name
