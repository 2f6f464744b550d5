"""The seller operations of API 1.1: source/packages, package/check, source/sales,
package/downloads, and buyers' cursor mode.

Each handler has the signature of every other (:data:`pkgcat.http.routes.Handler`):
it reads its parameters through the table (:mod:`pkgcat.http.operations`), calls one use
case of :class:`~pkgcat.services.CatalogueService` and renders the answer with
:mod:`pkgcat.models`, kept for the catalogue generation (:meth:`ResponseCache.answer`).
Parameters are read before anything is: a bad one is code 2 naming it.
"""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

from pkgcat import models
from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.http.errors import envelope
from pkgcat.http.operations import (
    BY_NAME,
    CURSOR,
    END,
    LIMIT,
    PACKAGE,
    START,
    buyer,
    days_and_range,
)
from pkgcat.http.params import Handler, Query, ResponseCache
from pkgcat.services import CatalogueService

_PACKAGES = BY_NAME["source/packages"]
_PAID, _ONLINE = _PACKAGES.parameter("paid"), _PACKAGES.parameter("online")
_SALES = BY_NAME["source/sales"]
_SOLD, _STATUS = _SALES.parameter("package"), _SALES.parameter("status")
_DAYS = BY_NAME["package/downloads"].parameter("days")


async def _buyers_walk(
    service: CatalogueService, caller: Caller, package_id: str, limit: int, cursor: str
) -> bytes:
    walk = await service.buyers_walk(caller, package_id, limit, cursor)
    return envelope(models.buyers_walk_body(walk, caller.shape, ZoneInfo(caller.timezone)))


async def buyers_walk(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    """buyers.json with ``cursor`` (even empty): keyset pages with ``has_more`` and ``cursor``."""
    if "page" in query:
        raise InvalidArgument("cursor", "not together with page; give one or the other")
    limit = LIMIT.page_size(query)
    package_id = PACKAGE.identifier(query)
    cursor = query.get("cursor", "")
    key = ("buyers-walk", package_id, limit, cursor)
    return await cache.answer(caller, key, _buyers_walk, service, caller, package_id, limit, cursor)


async def _source_packages(
    service: CatalogueService,
    caller: Caller,
    paid: bool | None,
    online: bool | None,
    limit: int,
    cursor: str | None,
) -> bytes:
    page = await service.source_packages(
        caller, paid=paid, online=online, limit=limit, cursor=cursor
    )
    zone = ZoneInfo(caller.timezone)
    return envelope(models.source_packages_body(page, caller.shape, zone))


async def source_packages(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    paid, online = _PAID.flag(query), _ONLINE.flag(query)
    limit = LIMIT.page_size(query)
    cursor = CURSOR.cursor(query)
    key = ("source/packages", paid, online, limit, cursor)
    return await cache.answer(
        caller, key, _source_packages, service, caller, paid, online, limit, cursor
    )


async def _check(
    service: CatalogueService,
    caller: Caller,
    package_id: str,
    by: str,
    value: str,
    model: str | None,
) -> bytes:
    found = await service.check(caller, package_id, by, value, model)
    public = caller.key.kind == "public"
    return envelope(models.check_body(found, ZoneInfo(caller.timezone), public=public))


async def check(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    """A buyer's or a device's check; with a device, YouRepo's ``udid`` and ``check`` too.

    A public key's answer (owned or not, nothing more) and a key made for one package are
    kept apart from a secret key's: the key's kind and package are part of the cache key."""
    by, value, model = buyer(query)
    package_id = PACKAGE.identifier(query)
    record = caller.key
    if record.kind == "public" and by != "udid":
        raise InvalidArgument(
            "udid", "a public key checks devices only; nickname and account need a secret key"
        )
    key = ("package/check", package_id, by, value, model, record.kind, record.package)
    return await cache.answer(caller, key, _check, service, caller, package_id, by, value, model)


async def downloads(
    service: CatalogueService, caller: Caller, query: Query, _cache: ResponseCache
) -> bytes:
    """Not kept: today's count moves with every download, which no generation follows."""
    days = _DAYS.integer(query) if "days" in query else None
    start = end = None
    if "start" in query or "end" in query:
        if days is not None:
            raise days_and_range()
        end = END.day(query)
        start = START.day(query)
    elif days is None:
        days = _DAYS.bounded(query)  # the default
    else:
        days = _DAYS.within(days)
    calendar = service.downloads_calendar(caller, days, start, end)
    report = await service.downloads(caller, PACKAGE.identifier(query), calendar)
    return envelope(models.downloads_body(report, caller.shape))


async def _sales(
    service: CatalogueService,
    caller: Caller,
    days: tuple[date, date],
    package_id: str | None,
    status: str | None,
    limit: int,
    cursor: str | None,
) -> bytes:
    page = await service.sales(
        caller, days, package_id=package_id, status=status, limit=limit, cursor=cursor
    )
    return envelope(models.sales_body(page, ZoneInfo(caller.timezone)))


async def sales(
    service: CatalogueService, caller: Caller, query: Query, cache: ResponseCache
) -> bytes:
    limit = LIMIT.page_size(query)
    end = END.day(query)
    days = service.sales_days(caller, START.day(query), end)
    status = _STATUS.choice(query)
    package_id = _SOLD.text(query)
    cursor = CURSOR.cursor(query)
    key = ("source/sales", days, package_id, status, limit, cursor)
    return await cache.answer(
        caller, key, _sales, service, caller, days, package_id, status, limit, cursor
    )


HANDLERS: dict[str, Handler] = {
    "source/packages": source_packages,
    "package/check": check,
    "source/sales": sales,
    "package/downloads": downloads,
}
"""This module's operations by name: :data:`pkgcat.http.routes.ROUTES` serves them."""
