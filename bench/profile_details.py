"""Where a details request's microseconds go, timed piece by piece in-process.

Seeds a throwaway SQLite database with the demo catalogue, wires the service
as ``pkgcat.app.create_app`` does (SQLite store and counter, ``limits``
fixed-window limiter in memory) and times each step of the request path with
a tight loop, the way ``timeit`` does; then the whole ASGI call without a
server, for the three operations::

    .venv/bin/python bench/profile_details.py
    .venv/bin/python bench/profile_details.py --pyinstrument   # needs pyinstrument in the venv

The store's reads are coroutines that never suspend, so they are driven here
without an event loop (one ``send``), which adds well under a microsecond; what
may suspend (the rate limiter, the group commit, whole ASGI calls) is timed
inside one event loop, since a store serves the loop it first counted in.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import details
from pkgcat import keys, shapes
from pkgcat.http import asgi
from pkgcat.http.asgi import ApiApp
from pkgcat.http.auth import presented_key
from pkgcat.http.errors import envelope
from pkgcat.http.routes import ROUTES, ResponseCache
from pkgcat.services import CatalogueService, utc_now
from pkgcat.storage import sqlite as sqlite_store
from pkgcat.storage.limiter import WindowLimiter
from pkgcat.storage.sqlite import SqliteCatalogue

T = TypeVar("T")
RATE_LIMIT = "100000000/hour"
DETAILS = "/1.0/package/details.json"
USAGE = "/1.0/application/usage.json"
BUYERS = "/1.0/package/buyers.json"


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends to its end, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("the coroutine suspended; it needs an event loop")


def per_call_us(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Median over ``repeat`` runs of the mean time of one call, in microseconds."""
    fn()  # warm caches
    runs: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            loop = itertools.repeat(None, number)
            start = time.perf_counter_ns()
            for _ in loop:
                fn()
            runs.append((time.perf_counter_ns() - start) / number / 1000)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(runs)


async def _null_receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _site(_scope: Any, _receive: Any, _send: Any) -> None:
    raise AssertionError("the API paths never reach the site app")


def http_scope(path: str, query: bytes, key: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"authorization", f"Bearer {key}".encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def whole_request_us(
    app: ApiApp, scope: dict[str, Any], number: int, repeat: int = 5
) -> float:
    """One ASGI call of ``app`` (no server), inside the running event loop."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, _null_receive, send)
    status = sent[0]["status"]
    if status != 200:
        raise RuntimeError(f"{scope['path']}: HTTP {status}: {sent[1]['body'][:200]!r}")
    return await async_per_call_us(lambda: app(scope, _null_receive, send), number, repeat)


async def async_per_call_us(
    make: Callable[[], Awaitable[object]], number: int, repeat: int = 5
) -> float:
    """``per_call_us`` for a coroutine that may suspend, inside the running event loop."""
    await make()  # warm caches
    runs: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter_ns()
            for _ in range(number):
                await make()
            runs.append((time.perf_counter_ns() - start) / number / 1000)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(runs)


def seed(database_url: str) -> dict[str, Any]:
    env = dict(os.environ, PKGCAT_DATABASE_URL=database_url)
    return details.seed(str(Path(sys.executable).with_name("pkgcat")), env)


def profile(database_url: str, scale: float, use_pyinstrument: bool) -> None:
    demo = seed(database_url)
    app_info = next(a for a in demo["applications"] if a["shape"] == "A" and a["timezone"] == "UTC")
    key: str = app_info["secret_key"]
    package_id: str = app_info["paid_package"]

    store = SqliteCatalogue(database_url)
    limiter = WindowLimiter(RATE_LIMIT, "memory://")
    service = CatalogueService(store, store, limiter, default_shape="A", default_timezone="UTC")
    app = ApiApp(service, _site)
    asyncio.run(_profile(app, store, limiter, service, key, package_id, scale, use_pyinstrument))


async def _profile(
    app: ApiApp,
    store: SqliteCatalogue,
    limiter: WindowLimiter,
    service: CatalogueService,
    key: str,
    package_id: str,
    scale: float,
    use_pyinstrument: bool,
) -> None:
    """Every measurement in one event loop: a store serves the loop it first counted in."""
    details_query = f"package={package_id}".encode()
    scope = http_scope(DETAILS, details_query, key)

    # The intermediate values each step hands the next one.
    query, _ = asgi._parse_query(details_query)
    key_hash = keys.hash_key(key)
    caller = await service.authenticate(key)
    record = caller.key
    app_id = caller.application.id
    decision = await limiter.hit(app_id)
    db = store._db  # the store's own connection, to time bare SELECTs on it
    row = db.execute(sqlite_store._PACKAGE, (package_id,)).fetchone()
    package = sqlite_store._package(row)
    zone = ZoneInfo("UTC")
    body = shapes.package_body(package, "A", zone)
    ids = itertools.count(1)

    def n(base: int) -> int:
        return max(50, int(base * scale))

    pieces: list[tuple[str, str, Callable[[], object], int]] = [
        (
            "parse",
            "route lookup + request id",
            lambda: (ROUTES.get(DETAILS), f"ab12cd34-{next(ids)}"),
            n(200_000),
        ),
        (
            "parse",
            "query parsing (parse_qsl)",
            lambda: asgi._parse_query(details_query),
            n(100_000),
        ),
        (
            "parse",
            "Authorization header + Bearer parse",
            lambda: presented_key(query.get("secret_key"), asgi._header(scope, b"authorization")),
            n(100_000),
        ),
        ("key", "key format check (regex)", lambda: keys.is_well_formed(key), n(200_000)),
        ("key", "sha256 of the key", lambda: keys.hash_key(key), n(200_000)),
        (
            "key",
            "catalogue generation read",
            lambda: db.execute(sqlite_store._GENERATION).fetchone(),
            n(100_000),
        ),
        (
            "key",
            "key SELECT (join), uncached",
            lambda: db.execute(sqlite_store._FIND_KEY, (key_hash,)).fetchone(),
            n(50_000),
        ),
        (
            "key",
            "constant-time hash compare",
            lambda: keys.same_hash(record.key_hash, key_hash),
            n(200_000),
        ),
        ("rate", "RateLimit-* headers", lambda: asgi._rate_headers(decision), n(200_000)),
        (
            "count",
            "clock + today in the app's zone",
            lambda: utc_now().astimezone(ZoneInfo(caller.timezone)).date(),
            n(100_000),
        ),
        (
            "package",
            "package SELECT with its source, uncached",
            lambda: db.execute(sqlite_store._PACKAGE, (package_id,)).fetchone(),
            n(50_000),
        ),
        (
            "package",
            "Package/Source dataclasses from the row",
            lambda: sqlite_store._package(row),
            n(50_000),
        ),
        ("render", "ZoneInfo lookup", lambda: ZoneInfo(caller.timezone), n(200_000)),
        (
            "render",
            "shapes.package_body (shape A)",
            lambda: shapes.package_body(package, "A", zone),
            n(50_000),
        ),
        ("render", "orjson envelope", lambda: envelope(body), n(200_000)),
    ]
    rows: list[tuple[str, str, float]] = [
        (group, label, per_call_us(fn, number)) for group, label, fn, number in pieces
    ]
    rows.insert(
        rows.index(next(r for r in rows if r[0] == "rate")),
        (
            "rate",
            "rate limiter hit (limits, memory)",
            await async_per_call_us(lambda: limiter.hit(app_id), n(50_000)),
        ),
    )
    rows.insert(
        rows.index(next(r for r in rows if r[0] == "package")),
        (
            "count",
            "usage count, group commit of one request",
            await async_per_call_us(lambda: store.increment(app_id, caller.today), n(10_000)),
        ),
    )
    group_totals: dict[str, float] = {}
    for group, _label, us in rows:
        group_totals[group] = group_totals.get(group, 0.0) + us

    async def admit() -> None:
        admitted = await service.authenticate(key)
        await service.limit(admitted)
        await service.count(admitted)

    admit_us = await async_per_call_us(admit, n(10_000))
    handler_us = await async_per_call_us(
        lambda: ROUTES[DETAILS](service, caller, query, ResponseCache()), n(20_000)
    )

    whole = {
        "details (answer cached)": await whole_request_us(app, scope, n(10_000)),
        "usage (days=30)": await whole_request_us(
            app, http_scope(USAGE, b"days=30", key), n(2_000)
        ),
        "buyers (page 1, limit 25, answer cached)": await whole_request_us(
            app,
            http_scope(BUYERS, f"package={package_id}&limit=25&page=1".encode(), key),
            n(2_000),
        ),
    }

    day = caller.today
    other = {
        "usage: store.usage of 31 days (history kept)": lambda: drive(
            store.usage(app_id, day.fromordinal(day.toordinal() - 30), day)
        ),
        "usage: service.usage (list of UsageDay)": lambda: drive(service.usage(caller, 30)),
        "buyers: total + page (two index ranges)": lambda: drive(
            store.buyers(package.id, package.source.id, limit=25, offset=0)
        ),
    }
    usage_days = drive(service.usage(caller, 30))
    buyers_page = drive(service.buyers(caller, package_id, limit=25, page=1))
    other_rows = [(label, per_call_us(fn, n(1_000))) for label, fn in other.items()]
    other_rows += [
        (
            "usage: shapes.usage_body (31 entries)",
            per_call_us(lambda: shapes.usage_body(usage_days, "A", zone), n(4_000)),
        ),
        (
            "buyers: shapes.buyers_body (25 buyers)",
            per_call_us(lambda: shapes.buyers_body(buyers_page, "A", zone), n(4_000)),
        ),
    ]

    total_pieces = sum(us for _g, _l, us in rows)
    print("| step | piece | us per call | share of pieces |")
    print("|---|---|---:|---:|")
    for group, label, us in rows:
        print(f"| {group} | {label} | {us:.2f} | {us / total_pieces:.0%} |")
    print(f"| | **sum of the pieces** | **{total_pieces:.1f}** | |")
    print()
    print("| step | us |")
    print("|---|---:|")
    for group, us in group_totals.items():
        print(f"| {group} | {us:.1f} |")
    print()
    print(f"admission (authenticate, limit, count, as a whole): {admit_us:.1f} us")
    print(f"details handler (answer not cached, package cached): {handler_us:.1f} us")
    print()
    print("| operation | whole ASGI call, no server (us) |")
    print("|---|---:|")
    for name, us in whole.items():
        print(f"| {name} | {us:.1f} |")
    print()
    print("| other pieces | us per call |")
    print("|---|---:|")
    for label, us in other_rows:
        print(f"| {label} | {us:.1f} |")

    if use_pyinstrument:
        await run_pyinstrument(app, scope, n(20_000))
    await store.close()


async def run_pyinstrument(app: ApiApp, scope: dict[str, Any], number: int) -> None:
    try:
        from pyinstrument import Profiler
    except ImportError:
        raise SystemExit(
            "pyinstrument is not installed: .venv/bin/pip install pyinstrument "
            "(a profiling aid only, not a project dependency)"
        ) from None

    async def send(_message: dict[str, Any]) -> None:
        return None

    profiler = Profiler(interval=0.0001, async_mode="disabled")
    profiler.start()
    for _ in range(number):
        await app(scope, _null_receive, send)
    profiler.stop()
    print()
    print(profiler.output_text(unicode=False, color=False, show_all=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every loop's iterations by this"
    )
    parser.add_argument(
        "--pyinstrument", action="store_true", help="also print a pyinstrument call tree"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pkgcat-profile-") as tmp:
        profile(f"sqlite:///{Path(tmp) / 'pkgcat.db'}", args.scale, args.pyinstrument)


if __name__ == "__main__":
    main()
