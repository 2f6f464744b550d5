"""Where a details request's microseconds go, timed piece by piece in-process.

Seeds a throwaway SQLite database with the demo catalogue, wires the service
as ``pkgcat.app.create_app`` does (SQLite store and counter, ``limits``
fixed-window limiter in memory) and times each step of the request path with
a tight loop, the way ``timeit`` does; then the whole ASGI call without a
server, for the three operations::

    .venv/bin/python bench/profile_details.py
    .venv/bin/python bench/profile_details.py --pyinstrument   # needs pyinstrument in the venv

The store's methods are coroutines that never suspend, so they are driven
here without an event loop (one ``send``), which adds well under a microsecond.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import variants
from pkgcat import keys, shapes
from pkgcat.config import Settings
from pkgcat.domain import Caller
from pkgcat.http import asgi
from pkgcat.http.asgi import ApiApp
from pkgcat.http.auth import presented_key
from pkgcat.http.errors import envelope
from pkgcat.http.routes import ROUTES
from pkgcat.services import CatalogueService, utc_now
from pkgcat.storage import sqlite as sqlite_store
from pkgcat.storage.limiter import WindowLimiter
from pkgcat.storage.sqlite import SqliteCatalogue

T = TypeVar("T")
RATE_LIMIT = "100000000/hour"
DETAILS = "/1.0/package/details.json"
USAGE = "/1.0/application/usage.json"
BUYERS = "/1.0/package/buyers.json"
ABLATIONS: list[tuple[str, str]] = [
    ("as served (no swap)", "none"),
    ("package records cached", "packages"),
    ("key records cached", "keys"),
    ("usage counts batched (1 s)", "batched"),
    ("usage counts group-committed", "group-commit"),
    ("rate limit in a dict", "limiter"),
    ("all four (batched counts)", "packages,keys,batched,limiter"),
]


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


def whole_request_us(app: ApiApp, scope: dict[str, Any], number: int, repeat: int = 5) -> float:
    """One ASGI call of ``app`` (no server), measured inside one event loop."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def loop() -> list[float]:
        await app(scope, _null_receive, send)
        status = sent[0]["status"]
        if status != 200:
            raise RuntimeError(f"{scope['path']}: HTTP {status}: {sent[1]['body'][:200]!r}")
        runs: list[float] = []
        for _ in range(repeat):
            start = time.perf_counter_ns()
            for _ in range(number):
                await app(scope, _null_receive, send)
            runs.append((time.perf_counter_ns() - start) / number / 1000)
            sent.clear()
        return runs

    gc.disable()
    try:
        return statistics.median(asyncio.run(loop()))
    finally:
        gc.enable()


def seed(database_url: str) -> dict[str, Any]:
    env = dict(os.environ, PKGCAT_DATABASE_URL=database_url)
    pkgcat = str(Path(sys.executable).with_name("pkgcat"))
    done = subprocess.run(
        [pkgcat, "demo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pkgcat demo failed:\n{done.stdout}{done.stderr}")
    demo: dict[str, Any] = json.loads(done.stdout)
    return demo


def profile(database_url: str, scale: float, use_pyinstrument: bool) -> None:
    demo = seed(database_url)
    app_info = next(a for a in demo["applications"] if a["shape"] == "A" and a["timezone"] == "UTC")
    key: str = app_info["secret_key"]
    package_id: str = app_info["paid_package"]

    store = SqliteCatalogue(database_url)
    limiter = WindowLimiter(RATE_LIMIT, "memory://")
    service = CatalogueService(store, store, limiter, default_shape="A", default_timezone="UTC")
    app = ApiApp(service, _site)

    details_query = f"package={package_id}".encode()
    scope = http_scope(DETAILS, details_query, key)

    # The intermediate values each step hands the next one.
    query, _ = asgi._parse_query(details_query)
    key_hash = keys.hash_key(key)
    record = drive(store.find_key(key_hash))
    assert record is not None
    caller = Caller(application=record.application, key_id=record.id, shape="A", timezone="UTC")
    app_id = record.application.id
    day = service.today(caller, utc_now())
    decision = limiter.hit(app_id)
    db = store._db  # the store's own connection, to time a bare SELECT on it
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
            "key SELECT (join) + KeyRecord",
            lambda: drive(store.find_key(key_hash)),
            n(50_000),
        ),
        (
            "key",
            "constant-time hash compare + Caller",
            lambda: (
                keys.same_hash(record.key_hash, key_hash),
                Caller(application=record.application, key_id=record.id, shape="A", timezone="UTC"),
            ),
            n(200_000),
        ),
        ("rate", "rate limiter hit (limits, memory)", lambda: limiter.hit(app_id), n(50_000)),
        ("rate", "RateLimit-* headers", lambda: asgi._rate_headers(decision), n(200_000)),
        (
            "count",
            "clock + today in the app's zone",
            lambda: service.today(caller, utc_now()),
            n(100_000),
        ),
        (
            "count",
            "usage UPSERT, autocommit (WAL)",
            lambda: drive(store.increment(app_id, day)),
            n(10_000),
        ),
        (
            "package",
            "package SELECT with its source (fetchone)",
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
    group_totals: dict[str, float] = {}
    for group, _label, us in rows:
        group_totals[group] = group_totals.get(group, 0.0) + us
    admit_us = per_call_us(lambda: drive(service.admit(key)), n(20_000))
    handler_us = per_call_us(lambda: drive(ROUTES[DETAILS](service, caller, query)), n(50_000))

    whole = {
        "details": whole_request_us(app, scope, n(10_000)),
        "usage (days=30)": whole_request_us(app, http_scope(USAGE, b"days=30", key), n(2_000)),
        "buyers (page 1, limit 25)": whole_request_us(
            app,
            http_scope(BUYERS, f"package={package_id}&limit=25&page=1".encode(), key),
            n(1_000),
        ),
    }

    other = {
        "usage: SELECT 31 days + dict": lambda: drive(
            store.usage(app_id, day.fromordinal(day.toordinal() - 30), day)
        ),
        "usage: service.usage (list of UsageDay)": lambda: drive(service.usage(caller, 30)),
        "buyers: count + page SELECT (one read txn)": lambda: drive(
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
    print(f"service.admit (key check, limiter, count, as a whole): {admit_us:.1f} us")
    print(f"details handler (lookup, render, as a whole):         {handler_us:.1f} us")
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

    # The same request with one piece swapped for a cheaper stand-in (bench/variants.py):
    # what a piece costs inside a whole request, rather than alone in a tight loop.
    settings = Settings(database_url=database_url, rate_limit=RATE_LIMIT)
    ablation = [
        (
            label,
            whole_request_us(
                variants.build_app(settings, variants.parse_swaps(swaps)), scope, n(5_000)
            ),
        )
        for label, swaps in ABLATIONS
    ]
    print()
    print("| details, whole ASGI call, with | us | saved us |")
    print("|---|---:|---:|")
    for label, us in ablation:
        print(f"| {label} | {us:.1f} | {ablation[0][1] - us:.1f} |")

    if use_pyinstrument:
        run_pyinstrument(app, scope, n(20_000))
    drive(store.close())


def run_pyinstrument(app: ApiApp, scope: dict[str, Any], number: int) -> None:
    try:
        from pyinstrument import Profiler
    except ImportError:
        raise SystemExit(
            "pyinstrument is not installed: .venv/bin/pip install pyinstrument "
            "(a profiling aid only, not a project dependency)"
        ) from None

    async def send(_message: dict[str, Any]) -> None:
        return None

    async def loop() -> None:
        for _ in range(number):
            await app(scope, _null_receive, send)

    profiler = Profiler(interval=0.0001)
    profiler.start()
    asyncio.run(loop())
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
