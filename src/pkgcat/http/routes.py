"""The three operations (spec 4): parse the query, call the service, render the shape."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo

from pkgcat import shapes
from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.services import DAYS_DEFAULT, LIMIT_DEFAULT, CatalogueService

Query = dict[str, str]
Handler = Callable[[CatalogueService, Caller, Query], Awaitable[Any]]

_MAX_DIGITS = 12


def integer(query: Query, name: str, default: int) -> int:
    """An integer parameter in plain decimal digits, or ``default`` when absent."""
    raw = query.get(name)
    if raw is None:
        return default
    text = raw.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit() or not digits.isascii() or len(digits) > _MAX_DIGITS:
        raise InvalidArgument(name, f"must be an integer, got {raw!r}")
    return int(text)


async def usage(service: CatalogueService, caller: Caller, query: Query) -> Any:
    days = await service.usage(caller, integer(query, "days", DAYS_DEFAULT))
    return shapes.usage_body(days, caller.shape, ZoneInfo(caller.timezone))


async def details(service: CatalogueService, caller: Caller, query: Query) -> Any:
    package = await service.package_details(caller, query.get("package", ""))
    return shapes.package_body(package, caller.shape, ZoneInfo(caller.timezone))


async def buyers(service: CatalogueService, caller: Caller, query: Query) -> Any:
    limit = integer(query, "limit", LIMIT_DEFAULT)
    page = integer(query, "page", 1)
    result = await service.buyers(caller, query.get("package", ""), limit=limit, page=page)
    return shapes.buyers_body(result, caller.shape, ZoneInfo(caller.timezone))


VERSION = "1.0"
ROUTES: dict[str, Handler] = {
    f"/{VERSION}/application/usage.json": usage,
    f"/{VERSION}/package/details.json": details,
    f"/{VERSION}/package/buyers.json": buyers,
}
"""Path to handler; the OpenAPI document lists the same paths (a test checks it)."""
