"""How the load benchmarks address pkgcat: its paths, servers, environment and key rotation."""

from __future__ import annotations

import json
import math
import os
import sys
import uuid
from datetime import date, timedelta
from pathlib import Path

from bench.catalogue import Catalogue, Params
from bench.loadgen import BENCH_DIR, fetch

DETAILS = "/1.0/package/details.json"
USAGE = "/1.0/application/usage.json"
BUYERS = "/1.0/package/buyers.json"
CHECK = "/1.0/package/check.json"
SALES = "/1.0/source/sales.json"
UNLIMITED = "100000000/hour"  # far above what a run sends: only the limited server refuses
SPENT = "1/hour"  # the rate-limited server: one request per worker, then 429
UNKNOWN_KEY = "pkc_" + "0" * 40  # well formed, in no catalogue: code 5
EXPECTED_CODE = {200: 0, 401: 5, 429: 13}
"""The envelope's code for each HTTP status a target expects."""


def buyers_pages(params: Params, limit: int = 100) -> int:
    """The number of pages of the hot package's buyers."""
    return max(1, math.ceil(params.hot_buyers / limit))


def sales_ledger(cat: Catalogue, days: int = 365) -> str:
    """The hot source's sales over the last ``days`` days (the most one ledger spans), 100 a page."""
    today = date.fromisoformat(cat.today)
    start = today - timedelta(days=days - 1)
    return f"{SALES}?start={start.isoformat()}&end={today.isoformat()}&limit=100"


def last_sales_page(api: str, cat: Catalogue) -> tuple[str, int]:
    """The address of the ledger's last page, found by walking its cursors, and its page count."""
    url, pages = api + sales_ledger(cat), 1
    while True:
        status, body = fetch(url, cat.hot_key)
        if status != 200:
            raise RuntimeError(f"{url} answered HTTP {status}: {body[:200]!r}")
        response = json.loads(body)["response"]
        if not response["has_more"]:
            return url, pages
        url = f"{api}{sales_ledger(cat)}&cursor={response['cursor']}"
        pages += 1


def write_rotation(path: Path, cat: Catalogue) -> Path:
    """Details of the sampled online packages, each asked with another application's key."""
    keys = cat.keys
    lines = [
        f"{keys[(n * 7) % len(keys)]} {DETAILS}?package={package}"
        for n, package in enumerate(cat.online_packages)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def serve_env(
    database: Path | str,
    workers: int,
    rate_limit: str,
    redis_url: str | None = None,
    *,
    metrics: bool = False,
) -> dict[str, str]:
    """A server's environment: a SQLite file (a path) or a database URL, and Redis or not."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env |= {
        "PKGCAT_DATABASE_URL": database if isinstance(database, str) else f"sqlite:///{database}",
        "PKGCAT_RATE_LIMIT": rate_limit,
        "PKGCAT_WORKERS": str(workers),
        "PKGCAT_LOG_LEVEL": "warning",
        "PKGCAT_METRICS": "on" if metrics else "off",
        # The "invalid key" target measures a refused key's path (401), counted failure
        # included: an allowance this large never refuses its address with 429.
        "PKGCAT_AUTH_FAILURE_LIMIT": "1000000000/second",
    }
    if redis_url is not None:
        # A namespace per server: each has its own limit, as separate catalogues would.
        env["PKGCAT_REDIS_URL"] = redis_url
        env["PKGCAT_RATE_LIMIT_NAMESPACE"] = f"bench-{uuid.uuid4().hex[:10]}"
    return env


def pkgcat_command(workers: int) -> list[str]:
    return [str(Path(sys.executable).with_name("pkgcat")), "serve", "--workers", str(workers)]


def baseline_command(body_bytes: int, workers: int) -> list[str]:
    return [
        sys.executable,
        str(BENCH_DIR / "baseline_app.py"),
        "--body-bytes",
        str(body_bytes),
        "--workers",
        str(workers),
    ]
