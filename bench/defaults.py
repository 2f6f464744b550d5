"""What users get: ``pkgcat serve`` with its defaults against bare granian with its defaults.

The configuration docs/benchmarks.md shows first (``make bench-defaults``, that is
``bench/run.py --defaults``), measured as a new operator would run the server:

- the demo catalogue (``pkgcat demo``), one worker, ``pkgcat serve`` with no setting but
  the database (and Redis), so its access log is on, its output going to a file;
- beside it, the same server with ``PKGCAT_ACCESS_LOG=false``: what the access log costs;
- the same on PostgreSQL + Redis (the demo copied row for row, ``postgres.py``);
- beside it, the same PostgreSQL database without Redis (the rate limit in the worker's
  memory), details only: what Redis costs, and what PostgreSQL's count costs over SQLite's;
- the baseline: a bare ASGI app answering the very bytes of the details answer
  (``baseline_app.py --body-file``) under ``granian --interface asgi`` with granian's own
  defaults (its default loop choice takes uvloop, which the server extra installs, as
  ``pkgcat serve`` does);
- servers pinned to CPU 0, ``wrk -t1 -c64 -d5s`` pinned to CPU 1, every target in turn
  in each round (interleaved), medians of 3 rounds (PostgreSQL and Redis, being the
  machine's services, are not pinned).

Two settings differ from the defaults, or the run would measure refusals:
``PKGCAT_RATE_LIMIT`` (3,600 an hour is spent in the first second) and
``PKGCAT_AUTH_FAILURE_LIMIT`` (the unknown key's target would get 429 after 20 tries).

It prints the table, the goals (met or not) and the machine's load average at the start
and the end, and writes ``docs/bench-defaults.csv`` and every figure to
``bench/results/raw/defaults-<time>.json``.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import postgres
from bench.api import DETAILS, EXPECTED_CODE, UNKNOWN_KEY, USAGE
from bench.details import seed
from bench.loadgen import (
    BENCH_DIR,
    Summary,
    Target,
    answered_as_expected,
    children,
    cpu_plan,
    fetch,
    find_wrk,
    interleave,
    start_server,
    summarize,
)

DOCS = BENCH_DIR.parent / "docs"
RAW = BENCH_DIR / "results" / "raw"
RATE_LIMIT = "100000000/hour"
AUTH_FAILURE_LIMIT = "1000000000/second"
BASELINE = "bare granian (defaults)"
SQLITE = "SQLite, defaults"
NO_ACCESS_LOG = "SQLite, PKGCAT_ACCESS_LOG=false"
POSTGRES = "PostgreSQL + Redis, defaults"
POSTGRES_ALONE = "PostgreSQL, no PKGCAT_REDIS_URL"
"""The same database with the rate limit in the worker's memory: what Redis costs, and what
PostgreSQL's count costs over SQLite's (the floor of the PostgreSQL + Redis goal)."""


@dataclass(frozen=True)
class Options:
    rounds: int
    duration: int
    warmup: int
    pin: bool
    postgres: bool
    postgres_url: str
    redis_url: str


@dataclass(frozen=True)
class Row:
    configuration: str
    target: str
    status: int
    summary: Summary
    ratio: float
    """req/s over the baseline's."""
    p99_ratio: float
    """p99 over the baseline's p99."""


def user_env(database_url: str, redis_url: str | None = None, **settings: str) -> dict[str, str]:
    """``pkgcat serve``'s environment as a user sets it: the database (and Redis), no more,
    but the two limits that would otherwise refuse the load."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env |= {
        "PKGCAT_DATABASE_URL": database_url,
        "PKGCAT_RATE_LIMIT": RATE_LIMIT,
        "PKGCAT_AUTH_FAILURE_LIMIT": AUTH_FAILURE_LIMIT,
    }
    if redis_url is not None:
        env["PKGCAT_REDIS_URL"] = redis_url
        env["PKGCAT_RATE_LIMIT_NAMESPACE"] = f"bench-{uuid.uuid4().hex[:10]}"
    return env | {f"PKGCAT_{name.upper()}": value for name, value in settings.items()}


def online_packages(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT package FROM packages WHERE online ORDER BY package")
        return [row[0] for row in rows]


def rotation(path: Path, demo: dict[str, Any], packages: list[str]) -> Path:
    """Details of every online package of the demo, each asked with the applications' keys in turn."""
    keys = [a["secret_key"] for a in demo["applications"]]
    lines = [f"{keys[n % len(keys)]} {DETAILS}?package={p}" for n, p in enumerate(packages)]
    path.write_text("\n".join(lines) + "\n")
    return path


def pkgcat_serve() -> list[str]:
    return [str(Path(sys.executable).with_name("pkgcat")), "serve"]


def bare_granian() -> list[str]:
    """The baseline under granian's command with its defaults (interface aside)."""
    return [
        str(Path(sys.executable).with_name("granian")),
        "--interface",
        "asgi",
        "--factory",
        "--working-dir",
        str(BENCH_DIR),
        "baseline_app:create_app",
    ]


def check(target: Target, failures: list[str], key: str | None, url: str) -> int:
    """Fetch once: the status and envelope code must be the expected ones; the body's size."""
    status, body = fetch(url, key, timeout=30.0)
    code = json.loads(body).get("code") if body.startswith(b"{") else None
    if status != target.expect or code != EXPECTED_CODE[target.expect]:
        failures.append(f"{target.name}: HTTP {status}, code {code}: {body[:200]!r}")
    return len(body)


def server_targets(
    configuration: str, root: str, key: str, package: str, rotate: Path, *, full: bool = True
) -> list[Target]:
    named = f"{configuration}: "
    targets = [Target(named + "details (hot id)", f"{root}{DETAILS}?package={package}", key)]
    if full:
        targets += [
            Target(named + "details (random ids)", root, rotation=rotate),
            Target(
                named + "invalid key", f"{root}{DETAILS}?package={package}", UNKNOWN_KEY, expect=401
            ),
            Target(named + "usage (days=30)", f"{root}{USAGE}?days=30", key),
        ]
    return targets


def measure(options: Options, failures: list[str]) -> tuple[list[Row], dict[str, Any]]:
    wrk = find_wrk()
    server_cpus, wrk_cpus = cpu_plan(options.pin)
    with (
        tempfile.TemporaryDirectory(prefix="pkgcat-defaults-") as tmp_name,
        children() as group,
        ExitStack() as stack,
    ):
        tmp = Path(tmp_name)
        database = tmp / "pkgcat.db"
        demo = seed(pkgcat_serve()[0], user_env(f"sqlite:///{database}"))
        app = next(a for a in demo["applications"] if a["shape"] == "A" and a["timezone"] == "UTC")
        key, package = app["secret_key"], app["paid_package"]
        rotate = rotation(tmp / "rotation.txt", demo, online_packages(database))
        servers: list[tuple[str, dict[str, str], bool]] = [
            (SQLITE, user_env(f"sqlite:///{database}"), True),
            (NO_ACCESS_LOG, user_env(f"sqlite:///{database}", access_log="false"), False),
        ]
        if options.postgres:
            url = stack.enter_context(postgres.catalogue_database(database, options.postgres_url))
            servers.append((POSTGRES, user_env(url, options.redis_url), True))
            servers.append((POSTGRES_ALONE, user_env(url), False))
        targets: list[Target] = []
        sizes: dict[str, int] = {}
        body = b""
        for n, (name, env, full) in enumerate(servers):
            log = tmp / f"serve-{n}.log"  # the access log's file, as a user's would be
            root, _ = start_server(group, pkgcat_serve(), "/healthz", env, log, server_cpus)
            found = server_targets(name, root, key, package, rotate, full=full)
            for target in found:
                if target.rotation is not None:
                    for line in target.rotation.read_text().splitlines()[:20]:
                        rotated_key, path = line.split()
                        sizes[target.name] = check(target, failures, rotated_key, root + path)
                else:
                    sizes[target.name] = check(target, failures, target.key, target.url)
            body = body or fetch(found[0].url, key)[1]
            targets += found
        body_file = tmp / "details.json"
        body_file.write_bytes(body)
        env = dict(os.environ) | {"PKGCAT_BENCH_BODY_FILE": str(body_file)}
        base_root, _ = start_server(
            group, bare_granian(), "/", env, tmp / "baseline.log", server_cpus
        )
        baseline = Target(BASELINE, base_root + "/")
        sizes[BASELINE] = len(fetch(baseline.url)[1])
        if fetch(baseline.url)[1] != body:
            failures.append("the baseline does not answer the details bytes")
        targets.insert(0, baseline)
        pin = f"servers on CPU {server_cpus}, wrk on CPU {wrk_cpus}" if server_cpus else "unpinned"
        load = os.getloadavg()
        print(f"{pin}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", file=sys.stderr)
        results = interleave(
            wrk,
            targets,
            rounds=options.rounds,
            duration=options.duration,
            warmup=options.warmup,
            connections=64,
            threads=1,
            cpus=wrk_cpus,
        )
        group.check_alive()
        after = os.getloadavg()
    base = summarize(BASELINE, sizes[BASELINE], results[BASELINE])
    rows: list[Row] = []
    for target in targets:
        summary = summarize(target.name, sizes[target.name], results[target.name])
        for n, result in enumerate(results[target.name], 1):
            if not answered_as_expected(target, result, 1):
                failures.append(
                    f"{target.name}, round {n}: {result.requests} answers, "
                    f"{result.bad_responses} non-2xx, {result.socket_errors} socket errors"
                )
        configuration, _, name = target.name.rpartition(": ")
        rows.append(
            Row(
                configuration or "baseline",
                name,
                target.expect,
                summary,
                summary.requests_per_second / base.requests_per_second,
                summary.p99_ms / base.p99_ms,
            )
        )
    machine = {"pinning": pin, "load_average_before": load, "load_average_after": after}
    return rows, machine


def markdown(rows: list[Row]) -> str:
    lines = [
        "| configuration | target | HTTP | req/s | p50 ms | p99 ms | x baseline | p99 x baseline's |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r.summary
        lines.append(
            f"| {r.configuration} | {r.target} | {r.status} | {s.requests_per_second:,.0f} "
            f"| {s.p50_ms:.2f} | {s.p99_ms:.2f} | {r.ratio:.2f} | {r.p99_ratio:.1f} |"
        )
    return "\n".join(lines)


def goals(rows: list[Row]) -> Iterator[str]:
    """Each goal of this configuration, met or not, with its figure."""
    by = {(r.configuration, r.target): r for r in rows}

    def goal(ok: bool, text: str) -> str:
        return f"{'met    ' if ok else 'NOT met'}  {text}"

    on, off = by.get((SQLITE, "details (hot id)")), by.get((NO_ACCESS_LOG, "details (hot id)"))
    if on is not None and off is not None:
        share = on.ratio / off.ratio
        yield goal(share >= 0.90, f"details, access log on >= 0.90x of off: {share:.2f}x")
    wanted = [
        (SQLITE, "details (hot id)", 0.50),
        (SQLITE, "details (random ids)", 0.45),
        (SQLITE, "invalid key", 0.50),
        (SQLITE, "usage (days=30)", 0.45),
        (POSTGRES, "details (hot id)", 0.40),
    ]
    for configuration, target, floor in wanted:
        row = by.get((configuration, target))
        if row is not None:
            yield goal(
                row.ratio >= floor, f"{configuration}, {target} >= {floor:.2f}x: {row.ratio:.2f}x"
            )
    for configuration in (SQLITE, POSTGRES):
        row = by.get((configuration, "details (hot id)"))
        if row is not None:
            yield goal(
                row.p99_ratio <= 3,
                f"{configuration}, details p99 <= 3x the baseline's: {row.p99_ratio:.1f}x",
            )


def write_csv(rows: list[Row], path: Path) -> None:
    figures = [
        {
            "configuration": r.configuration,
            "target": r.target,
            "http_status": r.status,
            "req_per_s": round(r.summary.requests_per_second),
            "p50_ms": r.summary.p50_ms,
            "p99_ms": r.summary.p99_ms,
            "x_baseline": round(r.ratio, 3),
            "p99_x_baseline": round(r.p99_ratio, 2),
            "req_per_s_rounds": " ".join(f"{x.requests_per_second:.0f}" for x in r.summary.rounds),
        }
        for r in rows
    ]
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(figures[0]))
        writer.writeheader()
        writer.writerows(figures)


def run(options: Options) -> int:
    started = time.monotonic()
    failures: list[str] = []
    rows, machine = measure(options, failures)
    print()
    print(markdown(rows))
    print()
    for line in goals(rows):
        print(line)
    before, after = machine["load_average_before"], machine["load_average_after"]
    print(
        f"\nload average (1, 5, 15 min): {before[0]:.2f} {before[1]:.2f} {before[2]:.2f} at the "
        f"start, {after[0]:.2f} {after[1]:.2f} {after[2]:.2f} at the end; {machine['pinning']}"
    )
    sys.stdout.flush()
    write_csv(rows, DOCS / "bench-defaults.csv")
    RAW.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RAW / f"defaults-{stamp}.json").write_text(
        json.dumps(
            {"options": asdict(options), "machine": machine, "rows": [asdict(r) for r in rows]},
            indent=1,
            default=str,
        )
        + "\n"
    )
    print(f"\nwall time {time.monotonic() - started:.0f} s", file=sys.stderr)
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0
