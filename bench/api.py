"""How the load benchmarks address pkgcat: its paths, servers, environment and key rotation."""

from __future__ import annotations

import math
import os
import sys
import uuid
from pathlib import Path

from catalogue import Catalogue, Params
from loadgen import BENCH_DIR

DETAILS = "/1.0/package/details.json"
USAGE = "/1.0/application/usage.json"
BUYERS = "/1.0/package/buyers.json"
UNLIMITED = "100000000/hour"  # far above what a run sends: only the limited server refuses
SPENT = "1/hour"  # the rate-limited server: one request per worker, then 429
UNKNOWN_KEY = "pkc_" + "0" * 40  # well formed, in no catalogue: code 5
EXPECTED_CODE = {200: 0, 401: 5, 429: 13}
"""The envelope's code for each HTTP status a target expects."""


def buyers_pages(params: Params, limit: int = 100) -> int:
    """The number of pages of the hot package's buyers."""
    return max(1, math.ceil(params.hot_buyers / limit))


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
