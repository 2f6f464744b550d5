"""Throughput and latency of the API's request path against a bare ASGI baseline.

Seeds a throwaway SQLite database with the demo catalogue, starts
``pkgcat serve`` and ``bench/baseline_app.py`` (both granian, 1 worker, no
access log) on free ports of 127.0.0.1, then runs wrk against each target in
interleaved rounds and prints the medians::

    .venv/bin/python bench/details.py                 # 3 rounds of 10 s, about 2.2 minutes
    .venv/bin/python bench/details.py --rounds 1 --duration 3   # a quick look
    .venv/bin/python bench/details.py --variants      # also the what-ifs of variants.py

On a machine with two cores or more (and ``taskset``), the servers are pinned
to the first core and wrk to the second, so the two do not compete for one.
Compare ratios measured in one run, never absolute figures across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
HOST = "127.0.0.1"
RATE_LIMIT = "100000000/hour"  # far above what a run can send: nothing is refused
READY_TIMEOUT = 30.0
VARIANTS = [  # cumulative swaps of bench/variants.py, in the order docs/benchmarks.md ranks them
    ("details, packages cached", "packages"),
    ("+ counts group-committed", "packages,group-commit"),
    ("+ keys cached", "packages,group-commit,keys"),
    ("+ limiter in a dict", "packages,group-commit,keys,limiter"),
    ("details, all four, counts batched", "packages,batched,keys,limiter"),
]
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Target:
    """One thing wrk hammers: a label and a URL (all carry the same Bearer key)."""

    name: str
    url: str


@dataclass(frozen=True)
class Round:
    """What one wrk run reported."""

    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int
    bad_responses: int
    socket_errors: int


@dataclass(frozen=True)
class Summary:
    """The medians of a target's rounds."""

    name: str
    body_bytes: int
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    bad_responses: int
    socket_errors: int
    rounds: list[Round]


# --- processes -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def pinned(command: Sequence[str], cpus: str | None) -> list[str]:
    """``command`` under ``taskset -c cpus`` when pinning is on."""
    return ["taskset", "-c", cpus, *command] if cpus is not None else list(command)


class Children:
    """The processes this run started; each is its own process group, stopped at exit."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: dict[subprocess.Popen[bytes], Path] = {}

    def start(
        self, command: Sequence[str], env: dict[str, str], log: Path
    ) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                list(command),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # granian's worker follows its parent's group
            )
        self._procs.append(proc)
        self._logs[proc] = log
        return proc

    def check_alive(self) -> None:
        for proc, log in self._logs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"a server died during the run:\n{log.read_text()}")

    def stop_all(self) -> None:
        for proc in reversed(self._procs):
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=STOP_TIMEOUT)
            # the group may outlive its leader (a worker still shutting down)
            _signal_group(proc, signal.SIGKILL)
        self._procs.clear()


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # run the cleanup in ``finally`` blocks


@contextmanager
def children() -> Iterator[Children]:
    previous = signal.signal(signal.SIGTERM, _terminate)
    group = Children()
    try:
        yield group
    finally:
        group.stop_all()
        signal.signal(signal.SIGTERM, previous)


# --- HTTP ----------------------------------------------------------------------------------


def fetch(url: str, key: str | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    if not url.startswith(f"http://{HOST}:"):
        raise ValueError(f"only http://{HOST} is fetched here, not {url!r}")
    request = urllib.request.Request(url)  # noqa: S310 (checked above: http on loopback)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), bytes(error.read())


def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``url`` until it answers, the process dies, or the deadline passes."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text()}")
        try:
            fetch(url, timeout=1.0)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise RuntimeError(f"{url} not ready after {READY_TIMEOUT:.0f} s:\n{log.read_text()}")


def start_server(
    group: Children,
    command: list[str],
    ready_path: str,
    env: dict[str, str],
    log: Path,
    cpus: str | None,
) -> str:
    """Start a server on a free port of 127.0.0.1, wait until it answers; its root URL."""
    port = free_port()
    proc = group.start(pinned([*command, "--host", HOST, "--port", str(port)], cpus), env, log)
    root = f"http://{HOST}:{port}"
    wait_ready(root + ready_path, proc, log)
    return root


# --- wrk -----------------------------------------------------------------------------------

_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
_PERCENTILE = re.compile(r"^\s*(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_REQUESTS = re.compile(r"^\s*(\d+) requests in ", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_SOCKET = re.compile(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.MULTILINE
)


def parse_wrk(output: str) -> Round:
    """The figures of wrk's ``--latency`` report."""
    percentiles = {
        int(p): float(value) * _UNIT_MS[unit] for p, value, unit in _PERCENTILE.findall(output)
    }
    rps, requests = _RPS.search(output), _REQUESTS.search(output)
    if rps is None or requests is None or 50 not in percentiles or 99 not in percentiles:
        raise RuntimeError(f"cannot read wrk's report:\n{output}")
    bad = _NON_2XX.search(output)
    sockets = _SOCKET.search(output)
    return Round(
        requests_per_second=float(rps.group(1)),
        p50_ms=percentiles[50],
        p99_ms=percentiles[99],
        requests=int(requests.group(1)),
        bad_responses=int(bad.group(1)) if bad else 0,
        socket_errors=sum(int(n) for n in sockets.groups()) if sockets else 0,
    )


def run_wrk(
    wrk: str, target: Target, key: str, args: argparse.Namespace, duration: int, cpus: str | None
) -> Round:
    command = pinned(
        [
            wrk,
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{duration}s",
            "--timeout",
            "5s",
            "--latency",
            "-H",
            f"Authorization: Bearer {key}",
            target.url,
        ],
        cpus,
    )
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=duration + 30, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return parse_wrk(done.stdout)


# --- the run -------------------------------------------------------------------------------


def summarize(name: str, body_bytes: int, rounds: list[Round]) -> Summary:
    return Summary(
        name=name,
        body_bytes=body_bytes,
        requests_per_second=statistics.median(r.requests_per_second for r in rounds),
        p50_ms=statistics.median(r.p50_ms for r in rounds),
        p99_ms=statistics.median(r.p99_ms for r in rounds),
        bad_responses=sum(r.bad_responses for r in rounds),
        socket_errors=sum(r.socket_errors for r in rounds),
        rounds=rounds,
    )


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


def cpu_plan(pin: bool) -> tuple[str | None, str | None]:
    """CPUs for the servers and for wrk (``None``: not pinned)."""
    if not pin or shutil.which("taskset") is None:
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return str(cpus[0]), ",".join(str(c) for c in cpus[1:])


def bench(args: argparse.Namespace) -> list[Summary]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
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

        api_root = start_server(
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

        base_root = start_server(
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

        variant_targets: list[Target] = []
        if args.variants:
            reference = fetch(api_root + paths["details"], key)[1]
            for n, (label, variant) in enumerate(VARIANTS, 1):
                root = start_server(
                    group,
                    [sys.executable, str(BENCH_DIR / "variants.py"), "--variant", variant],
                    "/healthz",
                    env,
                    tmp / f"variant-{n}.log",
                    server_cpus,
                )
                status, body = fetch(root + paths["details"], key)
                if status != 200 or body != reference:
                    raise RuntimeError(f"variant {variant}: answers differently: {body[:300]!r}")
                sizes[label] = len(body)
                variant_targets.append(Target(label, root + paths["details"]))

        targets = [Target("baseline (bare ASGI)", base_root + paths["details"])]
        targets += [Target(name, api_root + path) for name, path in paths.items()]
        targets += variant_targets
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
                run_wrk(wrk, target, key, args, args.warmup, wrk_cpus)
        results: dict[str, list[Round]] = {t.name: [] for t in targets}
        for n in range(1, args.rounds + 1):
            for target in targets:  # interleaved, so drift hits every target alike
                result = run_wrk(wrk, target, key, args, args.duration, wrk_cpus)
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
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also measure details on the what-if servers of bench/variants.py (adds ~3 minutes)",
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
