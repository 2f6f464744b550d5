"""What every load benchmark here shares: servers on 127.0.0.1, wrk, and its figures.

- :class:`Children` starts servers in their own process groups and stops them
  all when the run ends, also on error, Ctrl-C or SIGTERM (:func:`children`).
- :func:`start_server` puts a server on a free port of 127.0.0.1 and waits until
  it answers.
- :func:`run_wrk` runs one bounded wrk measurement of a :class:`Target` and
  reads its ``--latency`` report; a target either sends one fixed request or
  rotates over a file of requests with ``rotate.lua``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from tests.servers import free_port

BENCH_DIR = Path(__file__).resolve().parent
ROTATE_LUA = BENCH_DIR / "rotate.lua"
HOST = "127.0.0.1"
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
WRK_TIMEOUT_S = 10  # a request slower than this counts as a wrk timeout


@dataclass(frozen=True)
class Target:
    """One thing wrk hammers.

    Either one fixed ``url`` sent with ``key`` as a Bearer token, or, with
    ``rotation``, the requests listed in that file (``KEY PATH`` per line) sent
    in turn to the server at ``url``. ``expect`` is the HTTP status every
    answer should have.
    """

    name: str
    url: str
    key: str | None = None
    rotation: Path | None = None
    expect: int = 200


@dataclass(frozen=True)
class Round:
    """What one wrk run reported."""

    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int
    bad_responses: int
    """Answers with a status outside 2xx and 3xx."""
    socket_errors: int
    """Connect, read and write errors (timeouts apart)."""
    timeouts: int


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
    timeouts: int
    rounds: list[Round]


def summarize(name: str, body_bytes: int, rounds: list[Round]) -> Summary:
    return Summary(
        name=name,
        body_bytes=body_bytes,
        requests_per_second=statistics.median(r.requests_per_second for r in rounds),
        p50_ms=statistics.median(r.p50_ms for r in rounds),
        p99_ms=statistics.median(r.p99_ms for r in rounds),
        bad_responses=sum(r.bad_responses for r in rounds),
        socket_errors=sum(r.socket_errors for r in rounds),
        timeouts=sum(r.timeouts for r in rounds),
        rounds=rounds,
    )


# --- processes -----------------------------------------------------------------------------


def pinned(command: Sequence[str], cpus: str | None) -> list[str]:
    """``command`` under ``taskset -c cpus`` when pinning is on."""
    return ["taskset", "-c", cpus, *command] if cpus is not None else list(command)


def cpu_plan(pin: bool) -> tuple[str | None, str | None]:
    """CPUs for the servers and for wrk (``None``: not pinned)."""
    if not pin or shutil.which("taskset") is None:
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return str(cpus[0]), ",".join(str(c) for c in cpus[1:])


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
                start_new_session=True,  # granian's workers follow their parent's group
            )
        self._procs.append(proc)
        self._logs[proc] = log
        return proc

    def check_alive(self) -> None:
        for proc, log in self._logs.items():
            if proc in self._procs and proc.poll() is not None:
                raise RuntimeError(f"a server died during the run:\n{log.read_text()}")

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        """Stop one process group and wait for it."""
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT)
        _signal_group(proc, signal.SIGKILL)  # the group may outlive its leader
        if proc in self._procs:
            self._procs.remove(proc)

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
) -> tuple[str, subprocess.Popen[bytes]]:
    """Start a server on a free port of 127.0.0.1, wait until it answers; its root URL."""
    port = free_port()
    proc = group.start(pinned([*command, "--host", HOST, "--port", str(port)], cpus), env, log)
    root = f"http://{HOST}:{port}"
    wait_ready(root + ready_path, proc, log)
    return root, proc


# --- wrk -----------------------------------------------------------------------------------

_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
_PERCENTILE = re.compile(r"^\s*(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_REQUESTS = re.compile(r"^\s*(\d+) requests in ", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")


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
    connect, read, write, timeout = (int(n) for n in sockets.groups()) if sockets else (0,) * 4
    return Round(
        requests_per_second=float(rps.group(1)),
        p50_ms=percentiles[50],
        p99_ms=percentiles[99],
        requests=int(requests.group(1)),
        bad_responses=int(bad.group(1)) if bad else 0,
        socket_errors=connect + read + write,
        timeouts=timeout,
    )


def find_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    return wrk


def run_wrk(
    wrk: str,
    target: Target,
    *,
    duration: int,
    connections: int,
    threads: int,
    cpus: str | None,
) -> Round:
    """One wrk run of ``duration`` whole seconds against ``target``."""
    threads = min(threads, connections)
    command = [
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{duration}s",
        "--timeout",
        f"{WRK_TIMEOUT_S}s",
        "--latency",
    ]
    if target.key is not None:
        command += ["-H", f"Authorization: Bearer {target.key}"]
    if target.rotation is not None:
        command += ["-s", str(ROTATE_LUA), target.url, "--", str(target.rotation)]
    else:
        command.append(target.url)
    done = subprocess.run(
        pinned(command, cpus),
        capture_output=True,
        text=True,
        timeout=duration + WRK_TIMEOUT_S + 30,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return parse_wrk(done.stdout)


def answered_as_expected(target: Target, result: Round, workers: int) -> bool:
    """Whether every answer of a run had the target's status (wrk counts non-2xx only).

    A rate-limited target may let through the one request each worker allows
    before its own count is spent.
    """
    if result.socket_errors or result.requests == 0:
        return False
    if target.expect < 300:
        return result.bad_responses == 0
    return result.requests - result.bad_responses <= workers


def interleave(
    wrk: str,
    targets: Sequence[Target],
    *,
    rounds: int,
    duration: int,
    warmup: int,
    connections: int,
    threads: int,
    cpus: str | None,
) -> dict[str, list[Round]]:
    """Warm each target up, then run ``rounds`` rounds of every target in turn.

    Interleaving spreads the drift of a shared machine over every target alike.
    """
    for target in targets:
        if warmup > 0:
            run_wrk(
                wrk, target, duration=warmup, connections=connections, threads=threads, cpus=cpus
            )
    results: dict[str, list[Round]] = {t.name: [] for t in targets}
    for n in range(1, rounds + 1):
        for target in targets:
            result = run_wrk(
                wrk, target, duration=duration, connections=connections, threads=threads, cpus=cpus
            )
            results[target.name].append(result)
            print(
                f"  round {n} {target.name:<32} {result.requests_per_second:>9,.0f} req/s  "
                f"p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms",
                file=sys.stderr,
            )
    return results
