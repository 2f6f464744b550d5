"""The load benchmark behind ``make bench``: the table, the curves and the plots.

Generates (or reuses) the seeded catalogue of ``catalogue.py``, then, for 1 and
for 2 workers, serves it with ``pkgcat serve`` and serves ``baseline_app.py``
(a bare ASGI app answering a fixed body of the size of a details response) with
the same worker count, and drives both with wrk on 127.0.0.1: 64 connections,
interleaved rounds, medians. Then the curves: details req/s against catalogue
size, buyers latency against page number, usage latency against ``days``, and
import time against index size. Figures go to ``docs/bench-*.csv`` and
``docs/bench-*.png``; the table and the goals are printed::

    .venv/bin/python -m bench.run            # everything, about 10 minutes
    .venv/bin/python -m bench.run --smoke    # tiny catalogue, 1 s per target: does it work?

The smoke checks that every target answers with its expected status; it writes
no files outside a temporary directory. Exit status 1 when a target answered
otherwise (wrong status or socket errors). Every run then sets its 1-worker
ratios (and p99 ratios) beside those recorded in docs/benchmarks.md and prints a
``WARNING:`` line when one fell more than 15% below (``reference.py``): a
warning only, never a failure, since the smoke's figures are rough.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import catalogue, curves, defaults, postgres, reference
from bench.api import (
    BUYERS,
    CHECK,
    DETAILS,
    EXPECTED_CODE,
    SPENT,
    UNKNOWN_KEY,
    UNLIMITED,
    USAGE,
    baseline_command,
    buyers_pages,
    last_sales_page,
    pkgcat_command,
    sales_ledger,
    serve_env,
    write_rotation,
)
from bench.catalogue import Catalogue, Params
from bench.loadgen import (
    BENCH_DIR,
    Children,
    Summary,
    Target,
    answered_as_expected,
    children,
    cpu_plan,
    fetch,
    find_wrk,
    interleave,
    run_wrk,
    start_server,
    summarize,
)

ROOT = BENCH_DIR.parent
DOCS = ROOT / "docs"
RAW = BENCH_DIR / "results" / "raw"
SMOKE = Params(
    packages=200, sources=4, purchases=3000, hot_buyers=1000, applications=20, usage_days=30
)
SMOKE_WARMED = (reference.BASELINE, "details (hot id)", "details (random ids)")
"""Warmed up 1 s each by the smoke: unwarmed, a first second's p99 came out up to 2x the next's."""


@dataclass
class Settings:
    """How this run measures (the command line, after ``--smoke`` is applied)."""

    rounds: int
    duration: int
    warmup: int
    connections: int
    threads: int
    workers: list[int]
    pin: bool
    curves: bool
    curve_duration: int
    smoke: bool = False
    warm_only: tuple[str, ...] = ()
    """When not empty, only these targets get the warm-up (the smoke, to stay short)."""
    backend: str = "sqlite"
    postgres_url: str | None = None
    redis_url: str | None = None
    metrics: bool = False
    """Serve with PKGCAT_METRICS on, to measure what metrics cost."""
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    """A line of the table."""

    workers: int
    target: str
    status: int
    summary: Summary
    ratio: float
    same_size_ratio: float
    """Over the bare server serving a body of this target's size (see :data:`SIZE_MATCHED`)."""


SIZE_MATCHED = 1.25
"""A target whose body is more than this many times the details body gets a baseline of its own
size: the bare server moves 27 KB at less than half its 1 KB rate, and that cost is the
server's, not pkgcat's."""


def check_answer(target: Target, key: str | None, url: str, settings: Settings) -> int:
    """Fetch once before measuring: the status and envelope code must be the expected ones."""
    status, body = fetch(url, key, timeout=30.0)
    code = json.loads(body).get("code") if body.startswith(b"{") else None
    if status != target.expect or code != EXPECTED_CODE[target.expect]:
        settings.failures.append(
            f"{target.name}: HTTP {status}, code {code}, expected HTTP {target.expect}: {body[:200]!r}"
        )
    return len(body)


def table_run(
    group: Children,
    wrk: str,
    cat: Catalogue,
    database: Path | str,
    tmp: Path,
    workers: int,
    s: Settings,
) -> list[Row]:
    """Every endpoint of the table, and the baseline, under ``workers`` workers."""
    # One worker: servers on one core, wrk on the other. Two workers need both cores.
    server_cpus, wrk_cpus = cpu_plan(s.pin and workers == 1)
    api, api_proc = start_server(
        group,
        pkgcat_command(workers),
        "/healthz",
        serve_env(database, workers, UNLIMITED, s.redis_url, metrics=s.metrics),
        tmp / f"serve-{workers}.log",
        server_cpus,
    )
    limited, limited_proc = start_server(
        group,
        pkgcat_command(workers),
        "/healthz",
        serve_env(database, workers, SPENT, s.redis_url, metrics=s.metrics),
        tmp / f"serve-limited-{workers}.log",
        server_cpus,
    )
    hot = f"{DETAILS}?package={cat.hot_package}"
    last = buyers_pages(cat.params)
    page = min(1000, last)
    sales_last, sales_pages = last_sales_page(api, cat)
    targets = [
        Target("details (hot id)", api + hot, cat.hot_key),
        Target("details (random ids)", api, rotation=write_rotation(tmp / "rotation.txt", cat)),
        Target("usage (days=30)", f"{api}{USAGE}?days=30", cat.hot_key),
        Target("usage (days=365)", f"{api}{USAGE}?days=365", cat.hot_key),
        Target(
            "buyers (page 1)",
            f"{api}{BUYERS}?package={cat.hot_package}&limit=100&page=1",
            cat.hot_key,
        ),
        Target(
            f"buyers (page {page:,})",
            f"{api}{BUYERS}?package={cat.hot_package}&limit=100&page={page}",
            cat.hot_key,
        ),
        Target(
            "check (owned)",
            f"{api}{CHECK}?package={cat.hot_package}&nickname={cat.hot_buyer}",
            cat.hot_key,
        ),
        Target("sales (first page)", api + sales_ledger(cat), cat.hot_key),
        Target(f"sales (page {sales_pages:,})", sales_last, cat.hot_key),
        Target("invalid key", api + hot, UNKNOWN_KEY, expect=401),
        Target("rate-limited key", limited + hot, cat.limited_key, expect=429),
    ]
    sizes: dict[str, int] = {}
    for target in targets:
        if target.rotation is not None:
            first = target.rotation.read_text().splitlines()[:20]
            for line in first:
                key, path = line.split()
                sizes[target.name] = check_answer(target, key, api + path, s)
        elif target.expect == 429:
            # Spend the one request each worker allows: the kernel hands each new connection
            # to any worker, so send enough that none is left out (20 each: 2^-39 odds for 2).
            for _ in range(20 * workers):
                fetch(target.url, target.key)
            sizes[target.name] = check_answer(target, target.key, target.url, s)
        else:
            sizes[target.name] = check_answer(target, target.key, target.url, s)
    details_size = sizes["details (hot id)"]
    # The bare server at the details body's size, and at each larger size a target has
    # (targets within 10% of one another, such as buyers pages, share the smallest's).
    base_sizes = [details_size]
    for size in sorted(n for n in sizes.values() if n > SIZE_MATCHED * details_size):
        if size > 1.1 * base_sizes[-1]:
            base_sizes.append(size)
    baselines: list[Target] = []
    base_procs = []
    for size in base_sizes:
        base_url, base_proc = start_server(
            group,
            baseline_command(size, workers),
            "/",
            dict(os.environ),
            tmp / f"baseline-{workers}-{size}.log",
            server_cpus,
        )
        base_procs.append(base_proc)
        name = reference.BASELINE if size == details_size else f"bare ASGI, {size:,} bytes"
        baselines.append(Target(name, base_url + "/"))
        sizes[name] = len(fetch(base_url + "/")[1])
    baseline = baselines[0]

    def same_size(name: str) -> str:
        if sizes[name] <= SIZE_MATCHED * details_size:
            return baseline.name
        return next(b.name for b in reversed(baselines) if sizes[b.name] <= sizes[name])

    pin_note = f"servers on CPU {server_cpus}, wrk on CPU {wrk_cpus}" if server_cpus else "unpinned"
    print(f"{workers} worker(s), {pin_note}", file=sys.stderr)
    all_targets = [*baselines, *targets]
    load = {"connections": s.connections, "threads": s.threads, "cpus": wrk_cpus}
    for target in all_targets:
        if s.warmup > 0 and target.name in s.warm_only:
            run_wrk(wrk, target, duration=s.warmup, **load)
    results = interleave(
        wrk,
        all_targets,
        rounds=s.rounds,
        duration=s.duration,
        warmup=0 if s.warm_only else s.warmup,
        connections=s.connections,
        threads=s.threads,
        cpus=wrk_cpus,
    )
    group.check_alive()
    for proc in (*base_procs, limited_proc, api_proc):
        group.stop(proc)
    rows: list[Row] = []
    rps = {b.name: summarize(b.name, 0, results[b.name]).requests_per_second for b in baselines}
    for target in all_targets:
        summary = summarize(target.name, sizes[target.name], results[target.name])
        for n, result in enumerate(results[target.name], 1):
            if not answered_as_expected(target, result, workers):
                s.failures.append(
                    f"{workers} worker(s), {target.name}, round {n}: {result.requests} answers, "
                    f"{result.bad_responses} non-2xx, {result.socket_errors} socket errors "
                    f"(expected HTTP {target.expect})"
                )
        ratio = summary.requests_per_second / rps[baseline.name]
        own_size = summary.requests_per_second / rps[same_size(target.name)]
        rows.append(Row(workers, target.name, target.expect, summary, ratio, own_size))
    return rows


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "| workers | target | HTTP | body bytes | req/s | p50 ms | p99 ms | x baseline "
        "| x same-size baseline |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r.summary
        lines.append(
            f"| {r.workers} | {r.target} | {r.status} | {s.body_bytes:,} | "
            f"{s.requests_per_second:,.0f} | {s.p50_ms:.2f} | {s.p99_ms:.2f} | {r.ratio:.2f} | "
            f"{r.same_size_ratio:.2f} |"
        )
    return "\n".join(lines)


def write_table_csv(rows: list[Row], path: Path) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "workers",
                "target",
                "http_status",
                "body_bytes",
                "req_per_s",
                "p50_ms",
                "p99_ms",
                "x_baseline",
                "req_per_s_rounds",
                "timeouts",
                "x_same_size_baseline",
            ]
        )
        for r in rows:
            s = r.summary
            writer.writerow(
                [
                    r.workers,
                    r.target,
                    r.status,
                    s.body_bytes,
                    f"{s.requests_per_second:.0f}",
                    f"{s.p50_ms:.2f}",
                    f"{s.p99_ms:.2f}",
                    f"{r.ratio:.3f}",
                    " ".join(f"{x.requests_per_second:.0f}" for x in s.rounds),
                    s.timeouts,
                    f"{r.same_size_ratio:.3f}",
                ]
            )


def measure_round_trips(
    group: Children, wrk: str, cat: Catalogue, database: str, tmp: Path, s: Settings
) -> dict[str, float]:
    """What one details request costs in PostgreSQL transactions and Redis reads (1 worker).

    A server of its own, a warm-up, then one wrk run of ``s.duration`` seconds between
    two readings of the databases' counters, each taken once their figures have settled.
    """
    assert s.redis_url is not None
    server_cpus, wrk_cpus = cpu_plan(s.pin)
    api, proc = start_server(
        group,
        pkgcat_command(1),
        "/healthz",
        serve_env(database, 1, UNLIMITED, s.redis_url),
        tmp / "serve-round-trips.log",
        server_cpus,
    )
    target = Target("details (hot id)", f"{api}{DETAILS}?package={cat.hot_package}", cat.hot_key)
    load = {"connections": s.connections, "threads": s.threads, "cpus": wrk_cpus}
    run_wrk(wrk, target, duration=max(1, int(s.warmup)), **load)
    time.sleep(postgres.STATS_SETTLE_S)
    before = postgres.round_trips(database, s.redis_url)
    measured = run_wrk(wrk, target, duration=s.duration, **load)
    time.sleep(postgres.STATS_SETTLE_S)
    after = postgres.round_trips(database, s.redis_url)
    group.stop(proc)
    requests = max(1, measured.requests)
    figures = {
        "requests": measured.requests,
        "req_per_s": measured.requests_per_second,
        "postgres_transactions_per_request": (after[0] - before[0]) / requests,
        "redis_reads_per_request": (after[1] - before[1]) / requests,
    }
    print(
        f"round trips per details request (1 worker, {s.connections} connections): "
        f"PostgreSQL {figures['postgres_transactions_per_request']:.3f}, "
        f"Redis {figures['redis_reads_per_request']:.3f}",
        file=sys.stderr,
    )
    return figures


def goals(rows: list[Row], sizes: list[dict[str, Any]], backend: str = "sqlite") -> list[str]:
    """Each goal of the issues, met or not, with the measured figure (1 worker)."""
    one = {r.target: r for r in rows if r.workers == 1}
    out: list[str] = []

    def goal(ok: bool, text: str) -> None:
        out.append(f"{'met    ' if ok else 'NOT met'}  {text}")

    d = one["details (hot id)"]
    if backend == "postgres":
        goal(d.ratio >= 0.25, f"details on PostgreSQL + Redis >= 0.25x: {d.ratio:.2f}x")
        goal(d.ratio >= 0.30, f"details on PostgreSQL + Redis >= 0.30x: {d.ratio:.2f}x")
        return out
    goal(d.ratio >= 0.45, f"details >= 0.45x baseline req/s: {d.ratio:.2f}x")
    tail = d.summary.p99_ms / one[reference.BASELINE].summary.p99_ms
    goal(tail <= 3, f"details p99 <= 3x the baseline's p99: {tail:.1f}x")
    for name in ("usage (days=30)", "usage (days=365)", "buyers (page 1)"):
        r = one[name]
        goal(
            r.same_size_ratio >= 0.8 * d.same_size_ratio,
            f"{name} within 20% of details, each over a baseline of its own body size: "
            f"{r.same_size_ratio:.2f}x vs {d.same_size_ratio:.2f}x",
        )
    goal(d.summary.p99_ms < 10, f"details p99 < 10 ms at 64 connections: {d.summary.p99_ms:.2f} ms")
    u = one["usage (days=30)"]
    goal(u.ratio >= 0.20, f"usage (days=30) >= 0.20x: {u.ratio:.2f}x")
    b1 = one["buyers (page 1)"]
    goal(b1.ratio >= 0.15, f"buyers page 1 >= 0.15x: {b1.ratio:.2f}x")
    far = next(r for r in one.values() if r.target.startswith("buyers (page") and r is not b1)
    factor = far.summary.p50_ms / b1.summary.p50_ms
    goal(factor <= 2, f"{far.target} p50 within 2x of page 1 (64 connections): {factor:.1f}x")
    check = one["check (owned)"]
    goal(
        check.ratio >= 0.9 * d.ratio,
        f"check within 10% of details: {check.ratio:.2f}x vs {d.ratio:.2f}x",
    )
    first = one["sales (first page)"]
    end = next(r for r in one.values() if r.target.startswith("sales (page"))
    factor = end.summary.p50_ms / first.summary.p50_ms
    goal(factor <= 2, f"{end.target} p50 within 2x of the first page: {factor:.1f}x")
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        change = large["req_per_s"] / small["req_per_s"] - 1
        goal(
            abs(change) <= 0.10 or change > 0,
            f"details req/s at {large['packages']:,} packages within 10% of "
            f"{small['packages']:,}: {change:+.1%}",
        )
    return out


def compare_with_docs(rows: list[Row], s: Settings) -> list[str]:
    """This run's 1-worker ratios beside docs/benchmarks.md's, and a warning if one dropped."""
    if s.backend != "sqlite":
        return [f"no comparison: docs/benchmarks.md's table is SQLite's, this run {s.backend}'s"]
    measured = [
        reference.Measured(
            r.workers, r.target, r.ratio, r.summary.p99_ms, r.summary.requests_per_second
        )
        for r in rows
    ]
    return reference.report(measured, DOCS / "benchmarks.md", smoke=s.smoke)


def parse_args() -> Settings | defaults.Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="what users get: pkgcat serve's defaults on the demo, SQLite then PostgreSQL + "
        "Redis (--backend sqlite: SQLite only), against bare granian's defaults (defaults.py)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny catalogue, 1 s per target (and 1 s of warm-up for the baseline and details)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="wrk runs per target (median)")
    parser.add_argument("--duration", type=int, default=5, help="whole seconds per wrk run")
    parser.add_argument("--warmup", type=int, default=1, help="seconds of warm-up per target")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument("--curve-duration", type=int, default=3, help="seconds per curve point")
    parser.add_argument("--no-curves", dest="curves", action="store_false")
    parser.add_argument("--no-pin", dest="pin", action="store_false")
    postgres.add_backend_arguments(parser)
    parser.add_argument(
        "--metrics", action="store_true", help="serve pkgcat with PKGCAT_METRICS on (its cost)"
    )
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    if args.rounds < 1 or args.duration < 1 or args.warmup < 0 or not workers:
        parser.error("--rounds and --duration must be at least 1, --warmup at least 0")
    if args.defaults:
        return defaults.Options(
            rounds=args.rounds,
            duration=args.duration,
            warmup=args.warmup,
            pin=args.pin,
            postgres=args.backend != "sqlite",
            postgres_url=args.postgres_url,
            redis_url=args.redis_url,
        )
    args.backend = args.backend or "sqlite"
    backend = {
        "metrics": args.metrics,
        "backend": args.backend,
        "postgres_url": args.postgres_url if args.backend == "postgres" else None,
        "redis_url": args.redis_url if args.backend == "postgres" else None,
    }
    if args.smoke:
        return Settings(
            rounds=1,
            duration=1,
            warmup=1,
            connections=args.connections,
            threads=args.threads,
            workers=[1],
            pin=args.pin,
            curves=False,
            curve_duration=1,
            smoke=True,
            warm_only=SMOKE_WARMED,
            **backend,
        )
    return Settings(
        args.rounds,
        args.duration,
        args.warmup,
        args.connections,
        args.threads,
        workers,
        args.pin,
        args.curves and args.backend == "sqlite",
        args.curve_duration,
        **backend,
    )


def run(s: Settings) -> int:
    started = time.monotonic()
    wrk = find_wrk()
    smoke = s.smoke
    params = SMOKE if smoke else Params()
    cat = catalogue.ensure(params)
    results: dict[str, Any] = {"settings": asdict(s), "params": asdict(params)}
    with (
        tempfile.TemporaryDirectory(prefix="pkgcat-bench-") as tmp_name,
        children() as group,
        ExitStack() as stack,
    ):
        tmp = Path(tmp_name)
        database: Path | str = tmp / "catalogue.db"
        shutil.copyfile(cat.path, database)  # the cached file stays as generated
        if s.postgres_url is not None:
            database = stack.enter_context(postgres.catalogue_database(cat.path, s.postgres_url))
        print(f"backend: {s.backend}", file=sys.stderr)
        rows: list[Row] = []
        for workers in s.workers:
            rows += table_run(group, wrk, cat, database, tmp, workers, s)
        if isinstance(database, str):
            results["round_trips"] = measure_round_trips(group, wrk, cat, database, tmp, s)
        sizes: list[dict[str, Any]] = []
        if s.curves:
            curve = curves.CurveRun(group, wrk, tmp, s.pin, s.rounds, s.curve_duration)
            assert isinstance(database, Path)  # the curves run on SQLite only
            pages, days = curves.latency_by_page_and_days(
                curve, cat, database, [1, 10, 100, 1000], [1, 30, 90, 365]
            )
            sizes = curves.details_by_size(
                curve, params, [1_000, 10_000, 100_000, 1_000_000], s.duration, s.connections
            )
            imports = curves.import_by_size(tmp, rounds=s.rounds)
            results |= {"pages": pages, "days": days, "sizes": sizes, "imports": imports}
    print()
    print(markdown_table(rows))
    print()
    for line in compare_with_docs(rows, s):
        print(line)
    sys.stdout.flush()  # before the lines on stderr
    results["table"] = [
        {
            "workers": r.workers,
            "target": r.target,
            "ratio": r.ratio,
            "same_size_ratio": r.same_size_ratio,
            **asdict(r.summary),
        }
        for r in rows
    ]
    if not smoke:
        suffix = "" if s.backend == "sqlite" else f"-{s.backend}"
        write_table_csv(rows, DOCS / f"bench-table{suffix}.csv")
        if s.curves:
            from bench import plots

            plots.write_all(results, DOCS)
        print()
        for line in goals(rows, sizes, s.backend):
            print(line)
        RAW.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        (RAW / f"run-{stamp}.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(f"\nwall time {time.monotonic() - started:.0f} s", file=sys.stderr)
    for failure in s.failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if s.failures else 0


def main() -> None:
    settings = parse_args()
    try:
        if isinstance(settings, defaults.Options):
            raise SystemExit(defaults.run(settings))
        raise SystemExit(run(settings))
    except KeyboardInterrupt:  # the servers are stopped by then
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
