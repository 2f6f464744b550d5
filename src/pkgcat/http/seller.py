"""The seller operations of API 1.1: source/packages, package/check, source/sales, buyers' cursor mode.

Each handler has the signature of every other (:data:`pkgcat.http.routes.Handler`):
it parses its own parameters, calls one use case of
:class:`~pkgcat.services.CatalogueService` and renders the answer with
:mod:`pkgcat.shapes`, keeping it for the catalogue generation like the others.
Parameters are validated before anything is read: a bad one is code 2 naming it.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from pkgcat import shapes
from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.http.errors import envelope
from pkgcat.http.operations import BY_NAME, LIMIT
from pkgcat.http.params import Query, ResponseCache, view
from pkgcat.services import BLANK, CatalogueService

_PAID = BY_NAME["source/packages"].parameter("paid")
_ONLINE = BY_NAME["source/packages"].parameter("online")


def _optional(query: Query, name: str) -> str | None:
    raw = query.get(name)
    return None if raw is None else raw.strip(BLANK)


async def buyers_walk(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    """buyers.json with ``cursor`` (even empty): keyset pages with ``has_more`` and ``cursor``."""
    if "page" in query:
        raise InvalidArgument("cursor", "not together with page; give one or the other")
    limit = LIMIT.page_size(query)
    cursor = query.get("cursor", "")
    package_id = query.get("package", "")
    key = ("buyers-walk", package_id, limit, cursor, *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        walk = await service.buyers_walk(caller, package_id, limit, cursor)
        body = envelope(shapes.buyers_walk_body(walk, caller.shape, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


async def source_packages(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    paid, online = _PAID.flag(query), _ONLINE.flag(query)
    limit = LIMIT.page_size(query)
    cursor = query.get("cursor") or None
    key = ("source/packages", paid, online, limit, cursor, *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        page = await service.source_packages(
            caller, paid=paid, online=online, limit=limit, cursor=cursor
        )
        zone = ZoneInfo(caller.timezone)
        body = envelope(shapes.source_packages_body(page, caller.shape, zone))
        cache.put(caller.generation, key, body)
    return body


async def check(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    package_id = query.get("package", "")
    buyer = {name: query.get(name) for name in ("nickname", "account", "udid", "model")}
    key = ("package/check", package_id, *buyer.values(), *view(caller))
    body = cache.get(caller.generation, key)
    if body is None:
        found = await service.check(caller, package_id, **buyer)
        body = envelope(shapes.check_body(found, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body


_DAYS = BY_NAME["package/downloads"].parameter("days")


async def downloads(
    service: CatalogueService, caller: Caller, query: Query, _cache: ResponseCache
) -> bytes:
    """Not kept: today's count moves with every download, which no generation follows."""
    days = _DAYS.integer(query) if "days" in query else None
    calendar = service.downloads_calendar(caller, days, query.get("start"), query.get("end"))
    report = await service.downloads(caller, query.get("package", ""), calendar)
    return envelope(shapes.downloads_body(report, caller.shape))


async def sales(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    start, end = query.get("start"), query.get("end")
    package_id, status = _optional(query, "package"), query.get("status")
    limit = LIMIT.page_size(query)
    cursor = query.get("cursor") or None
    # Today decides the default range: it is part of the key.
    key = (
        "source/sales",
        start,
        end,
        package_id,
        status,
        limit,
        cursor,
        caller.today,
        *view(caller),
    )
    body = cache.get(caller.generation, key)
    if body is None:
        page = await service.sales(
            caller,
            start=start,
            end=end,
            package_id=package_id,
            status=status,
            limit=limit,
            cursor=cursor,
        )
        body = envelope(shapes.sales_body(page, ZoneInfo(caller.timezone)))
        cache.put(caller.generation, key, body)
    return body
