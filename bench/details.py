"""Throughput and latency of the API's request path against a bare ASGI baseline.

Seeds a throwaway SQLite database with the demo catalogue, starts
``pkgcat serve`` and ``bench/baseline_app.py`` (both granian, 1 worker, no
access log) on free ports of 127.0.0.1, then runs wrk against each target in
interleaved rounds and prints the medians::

    .venv/bin/python -m bench.details                 # 3 rounds of 10 s, about 2.2 minutes
    .venv/bin/python -m bench.details --rounds 1 --duration 3   # a quick look

On a machine with two cores or more (and ``taskset``), the servers are pinned
to the first core and wrk to the second, so the two do not compete for one.
Compare ratios measured in one run, never absolute figures across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.loadgen import (
    BENCH_DIR,
    Round,
    Summary,
    Target,
    children,
    cpu_plan,
    fetch,
    find_wrk,
    run_wrk,
    start_server,
    summarize,
)

RATE_LIMIT = "100000000/hour"  # far above what a run can send: nothing is refused


def table(summaries: list[Summary], baseline: Summary) -> str:
    lines = [
        "| target | body bytes | req/s | p50 ms | p99 ms | x baseline |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        ratio = s.requests_per_second / baseline.requests_per_second
        lines.append(
            f"| {s.name} | {s.body_bytes:,} | {s.requests_per_second:,.0f} | {s.p50_ms:.2f} "
            f"| {s.p99_ms:.2f} | {ratio:.2f} |"
        )
    return "\n".join(lines)


def seed(pkgcat: str, env: dict[str, str]) -> dict[str, Any]:
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


def measure(
    wrk: str, target: Target, args: argparse.Namespace, duration: int, cpus: str | None
) -> Round:
    return run_wrk(
        wrk,
        target,
        duration=duration,
        connections=args.connections,
        threads=args.threads,
        cpus=cpus,
    )


def bench(args: argparse.Namespace) -> list[Summary]:
    wrk = find_wrk()
    pkgcat = str(Path(sys.executable).with_name("pkgcat"))
    server_cpus, wrk_cpus = cpu_plan(args.pin)
    with tempfile.TemporaryDirectory(prefix="pkgcat-bench-") as tmp_name, children() as group:
        tmp = Path(tmp_name)
        env = dict(os.environ)
        env |= {
            "PKGCAT_DATABASE_URL": f"sqlite:///{tmp / 'pkgcat.db'}",
            "PKGCAT_RATE_LIMIT": RATE_LIMIT,
            "PKGCAT_RATE_LIMIT_STORAGE": "memory://",
            "PKGCAT_WORKERS": "1",
        }
        demo = seed(pkgcat, env)
        app = next(a for a in demo["applications"] if a["shape"] == "A" and a["timezone"] == "UTC")
        key, package = app["secret_key"], app["paid_package"]

        api_root, _ = start_server(
            group, [pkgcat, "serve"], "/healthz", env, tmp / "serve.log", server_cpus
        )

        paths = {
            "details": f"/1.0/package/details.json?package={package}",
            "usage (days=30)": "/1.0/application/usage.json?days=30",
            "buyers (page 1, limit 25)": f"/1.0/package/buyers.json?package={package}&limit=25&page=1",
        }
        sizes: dict[str, int] = {}
        for name, path in paths.items():
            status, body = fetch(api_root + path, key)
            if status != 200:
                raise RuntimeError(f"{name}: HTTP {status}: {body[:300]!r}")
            sizes[name] = len(body)

        base_root, _ = start_server(
            group,
            [
                sys.executable,
                str(BENCH_DIR / "baseline_app.py"),
                "--body-bytes",
                str(sizes["details"]),
            ],
            "/",
            env,
            tmp / "baseline.log",
            server_cpus,
        )
        sizes["baseline (bare ASGI)"] = len(fetch(base_root + "/", key)[1])

        targets = [Target("baseline (bare ASGI)", base_root + paths["details"], key)]
        targets += [Target(name, api_root + path, key) for name, path in paths.items()]
        pin_note = (
            f"servers on CPU {server_cpus}, wrk on CPU {wrk_cpus}" if server_cpus else "unpinned"
        )
        print(
            f"wrk -t{args.threads} -c{args.connections}, {args.rounds} x {args.duration} s "
            f"per target after a {args.warmup} s warm-up; {pin_note}",
            file=sys.stderr,
        )
        for target in targets:
            if args.warmup > 0:
                measure(wrk, target, args, args.warmup, wrk_cpus)
        results: dict[str, list[Round]] = {t.name: [] for t in targets}
        for n in range(1, args.rounds + 1):
            for target in targets:  # interleaved, so drift hits every target alike
                result = measure(wrk, target, args, args.duration, wrk_cpus)
                results[target.name].append(result)
                print(
                    f"round {n} {target.name:<34} {result.requests_per_second:>10,.0f} req/s  "
                    f"p50 {result.p50_ms:.2f} ms  p99 {result.p99_ms:.2f} ms",
                    file=sys.stderr,
                )
        group.check_alive()
        return [summarize(t.name, sizes[t.name], results[t.name]) for t in targets]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="wrk runs per target (median)")
    parser.add_argument("--duration", type=int, default=10, help="whole seconds per wrk run")
    parser.add_argument(
        "--warmup", type=int, default=2, help="whole seconds of warm-up per target (0: none)"
    )
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false", help="do not pin servers and wrk to CPUs"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.rounds < 1 or args.duration < 1 or args.warmup < 0:
        parser.error("--rounds and --duration must be at least 1, --warmup at least 0")

    try:
        summaries = bench(args)
    except KeyboardInterrupt:  # the servers are stopped by then
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    baseline = summaries[0]
    print()
    print(table(summaries, baseline))
    problems = [s for s in summaries if s.bad_responses or s.socket_errors]
    for s in problems:
        print(
            f"warning: {s.name}: {s.bad_responses} non-2xx responses, "
            f"{s.socket_errors} socket errors",
            file=sys.stderr,
        )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "target": s.name,
                        "body_bytes": s.body_bytes,
                        "requests_per_second": s.requests_per_second,
                        "p50_ms": s.p50_ms,
                        "p99_ms": s.p99_ms,
                        "ratio": s.requests_per_second / baseline.requests_per_second,
                        "rounds": [r.__dict__ for r in s.rounds],
                    }
                    for s in summaries
                ],
                indent=2,
            )
            + "\n"
        )
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
