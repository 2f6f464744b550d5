"""The soak behind ``make soak``: a long mixed load on one server, its resources sampled each second.

Seeds the demo catalogue into a SQLite file, serves it with ``pkgcat serve``
and sends it a mix of every operation, valid and invalid, in many spellings
(:func:`mix`), with wrk (``rotate.lua``) or, when wrk is missing or
``--client httpx`` is given, from threads with ``httpx``. Once a second it
samples the workers' resident memory (RSS), their open files, and the size of
the database's WAL file; the samples go to a CSV file and a plot. The verdict
compares the peak after the warm-up with the value at its end
(:func:`verdict`): memory, open files and the WAL file must stay flat.

Beside the load, ``--import-stanzas N`` runs ``pkgcat import-repo`` of a
generated N-stanza repository over and over, a large import during load::

    .venv/bin/python -m bench.soak                          # 300,000 requests, about 2 minutes
    .venv/bin/python -m bench.soak --requests 20000 --workers 2 --import-stanzas 20000

The short variant that CI runs is ``tests/functional/test_soak.py``.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers import PKGCAT, children, environment, poll, seed, serving

BENCH_DIR = Path(__file__).resolve().parent

DETAILS = "/1.0/package/details.json"
BUYERS = "/1.0/package/buyers.json"
USAGE = "/1.0/application/usage.json"
UNKNOWN_KEY = "pkc_" + "0" * 40  # well formed, in no catalogue: code 5
MALFORMED_KEY = "pkc_short"  # code 5 before any lookup
MIB = 1024 * 1024
PATHS = {"details": DETAILS, "buyers": BUYERS, "usage": USAGE}

RSS_GROWTH_MIB = 16.0
"""Most the workers' memory may grow after the warm-up, with a bounded set of spellings."""
FD_GROWTH = 4
"""Most the workers' open files may grow after the warm-up."""
WAL_LIMIT_MIB = 32.0
"""The WAL file's documented bound (``docs/reliability.md``): twice the pragma's limit."""


# The mix -------------------------------------------------------------------------------------


def mix(apps: Sequence[dict[str, Any]], spellings: int, seed: int = 10) -> list[tuple[str, str]]:
    """``spellings`` requests as (key, path): every operation, valid and invalid, many spellings.

    About two in three are answered 200. The rest: unknown and offline packages
    (code 8), bad and repeated parameters (2), a package of another source (12),
    unknown and malformed keys (5), unknown endpoints (1) and versions (6). Each
    request also varies in spelling: parameter order, percent-encoding, an
    ignored parameter with a changing value, so the raw queries keep changing.
    """
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []

    def spell(params: list[tuple[str, str]], n: int) -> str:
        params = list(params)
        if n % 3 == 1:
            params.reverse()
        if n % 5 == 2:
            params.append(("_", str(n)))  # ignored by the server; a new raw query each time
        if n % 7 == 3:
            params = [(k, v.replace(".", "%2E")) for k, v in params]
        return "&".join(f"{k}={v}" for k, v in params)

    for n in range(spellings):
        app = apps[n % len(apps)]
        key = app["secret_key"]
        other = apps[(n + len(apps) // 2) % len(apps)]
        kind = rng.random()
        if kind < 0.30:
            package = app["paid_package"] if n % 2 else app["free_package"]
            path = f"{DETAILS}?{spell([('package', package)], n)}"
        elif kind < 0.45:
            page, limit = rng.randint(1, 12), rng.choice(["10", "25", "50", "100"])
            params = [("package", app["paid_package"]), ("page", str(page)), ("limit", limit)]
            path = f"{BUYERS}?{spell(params, n)}"
        elif kind < 0.65:
            days = rng.choice(["", "1", "7", "30", "90", "365", str(rng.randint(1, 365))])
            path = f"{USAGE}?{spell([('days', days)] if days else [], n)}"
        elif kind < 0.70:
            path = f"{DETAILS}?{spell([('package', app['offline_package'])], n)}"
        elif kind < 0.75:
            path = f"{DETAILS}?{spell([('package', f'org.unknown.p{n % 997}')], n)}"
        elif kind < 0.79:
            path = f"{BUYERS}?{spell([('package', app['free_package'])], n)}"  # free: 2
        elif kind < 0.82:
            path = f"{BUYERS}?{spell([('package', other['paid_package'])], n)}"  # 12 or 200
        elif kind < 0.86:
            bad = rng.choice(["0", "366", "ten", "-1", "1e3"])
            path = f"{USAGE}?{spell([('days', bad)], n)}"
        elif kind < 0.88:
            path = f"{DETAILS}?package=a&package=b&_={n}"  # repeated: 2
        elif kind < 0.90:
            path = f"{DETAILS}?_={n}"  # missing package: 2
        elif kind < 0.94:
            key = rng.choice([UNKNOWN_KEY, MALFORMED_KEY])
            path = f"{DETAILS}?{spell([('package', app['paid_package'])], n)}"
        elif kind < 0.97:
            path = f"/1.0/package/nothing{n % 50}.json"  # 1
        else:
            path = f"/2.0/package/details.json?package={app['paid_package']}"  # 6
        out.append((key, path))
    return out


def write_mix(path: Path, requests: Sequence[tuple[str, str]]) -> Path:
    """The ``KEY PATH`` lines that ``rotate.lua`` sends in turn."""
    path.write_text("".join(f"{key} {target}\n" for key, target in requests))
    return path


# Sampling ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    seconds: float
    requests: int
    rss_mib: float
    open_files: int
    wal_mib: float


def worker_pids(server: int) -> list[int]:
    """The pids of a server's workers."""
    return [proc.pid for proc in children(server)]


def rss_mib(pid: int) -> float:
    with suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_files(pid: int) -> int:
    """A process's open file descriptors other than sockets (the load's connections come and go)."""
    found = 0
    with suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with suppress(OSError):
                found += not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return found


def file_mib(path: Path) -> float:
    with suppress(OSError):
        return path.stat().st_size / MIB
    return 0.0


class Sampler:
    """Samples a server's workers and WAL file once a second on a thread, until stopped."""

    def __init__(self, server: int, wal: Path, sent: Callable[[], int], every: float = 1.0):
        self.samples: list[Sample] = []
        self._server, self._wal, self._sent, self._every = server, wal, sent, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def sample(self) -> None:
        pids = worker_pids(self._server)
        self.samples.append(
            Sample(
                seconds=round(time.monotonic() - self._started, 2),
                requests=self._sent(),
                rss_mib=round(sum(rss_mib(pid) for pid in pids), 2),
                open_files=sum(open_files(pid) for pid in pids),
                wal_mib=round(file_mib(self._wal), 3),
            )
        )

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.sample()


@dataclass(frozen=True)
class Verdict:
    rss_growth_mib: float
    open_files_growth: int
    wal_peak_mib: float
    problems: list[str] = field(default_factory=list)


def verdict(
    samples: Sequence[Sample],
    warmup: float = 0.2,
    rss_growth: float = RSS_GROWTH_MIB,
    fd_growth: int = FD_GROWTH,
    wal_limit: float = WAL_LIMIT_MIB,
) -> Verdict:
    """Growth after the warm-up (the first ``warmup`` of the run's time) and the WAL's peak."""
    total = samples[-1].seconds
    warm = [s for s in samples if s.seconds >= warmup * total]
    base = warm[0]
    rss = max(s.rss_mib for s in warm) - base.rss_mib
    fds = max(s.open_files for s in warm) - base.open_files
    wal = max(s.wal_mib for s in samples)
    problems = []
    if rss > rss_growth:
        problems.append(f"memory grew {rss:.1f} MiB after the warm-up (bound {rss_growth} MiB)")
    if fds > fd_growth:
        problems.append(f"open files grew by {fds} after the warm-up (bound {fd_growth})")
    if wal > wal_limit:
        problems.append(f"the WAL file reached {wal:.1f} MiB (bound {wal_limit} MiB)")
    return Verdict(round(rss, 2), fds, round(wal, 3), problems)


# The server and the load -------------------------------------------------------------------


def serve_env(database: Path, **settings: str) -> dict[str, str]:
    """The soak server's environment: its SQLite file, no rate limit to speak of, quiet logs."""
    return environment(
        f"sqlite:///{database}",
        **{"rate_limit": "1000000000/hour", "log_level": "warning", **settings},
    )


class Counter:
    """Requests sent so far and their statuses, shared by the load's threads."""

    def __init__(self) -> None:
        self.sent = 0
        self.statuses: dict[int, int] = {}
        self._lock = threading.Lock()

    def add(self, status: int, n: int = 1) -> None:
        with self._lock:
            self.sent += n
            self.statuses[status] = self.statuses.get(status, 0) + n


def load_httpx(
    base: str, requests: Sequence[tuple[str, str]], total: int, clients: int, counter: Counter
) -> None:
    """``total`` requests from ``clients`` threads, each with a keep-alive client, in turn."""
    import httpx

    def client(number: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            for n in range(number, total, clients):
                key, path = requests[n % len(requests)]
                response = http.get(path, headers={"Authorization": f"Bearer {key}"})
                counter.add(response.status_code)

    with ThreadPoolExecutor(clients) as pool:
        for done in [pool.submit(client, n) for n in range(clients)]:
            done.result()


_WRK_REQUESTS = re.compile(r"^\s*(\d+) requests in ", re.MULTILINE)
_WRK_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_WRK_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+)")


def load_wrk(
    wrk: str,
    base: str,
    rotation: Path,
    total: int,
    clients: int,
    counter: Counter,
    round_seconds: int = 2,
) -> None:
    """wrk rounds of ``round_seconds`` until ``total`` requests were sent (200 and other)."""
    while counter.sent < total:
        command = [wrk, "-t2", f"-c{clients}", f"-d{round_seconds}s", "--timeout", "10s"]
        command += ["-s", str(BENCH_DIR / "rotate.lua"), base, "--", str(rotation)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        sent = _WRK_REQUESTS.search(done.stdout)
        if sent is None:
            raise RuntimeError(f"cannot read wrk's report:\n{done.stdout}{done.stderr}")
        errors = _WRK_SOCKET.search(done.stdout)
        if errors is not None and any(n != "0" for n in errors.groups()):
            raise RuntimeError(f"wrk saw socket errors:\n{done.stdout}")
        other = _WRK_NON_2XX.search(done.stdout)
        non_2xx = int(other.group(1)) if other else 0
        counter.add(200, int(sent.group(1)) - non_2xx)
        counter.add(0, non_2xx)  # wrk tells only that they were not 2xx


def large_repo(root: Path, stanzas: int) -> Path:
    """A flat APT repository whose Packages index has ``stanzas`` packages.

    Each stanza has every field a record requires (MD5sum among them): without it, every
    stanza was skipped and the import wrote nothing beside the load.
    """
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for n in range(stanzas):
        lines.append(
            f"Package: org.example.soak{n}\nVersion: {1 + n % 5}.{n % 11}\n"
            f"Architecture: iphoneos-arm\nName: Soak {n}\nSection: Tweaks\n"
            f"Filename: debs/org.example.soak{n}.deb\nSize: {1000 + n}\nMD5sum: {n:032x}\n"
            f"Description: package {n} of the soak's repository\n"
        )
    (root / "Packages").write_text("\n".join(lines))
    return root


class Importer:
    """``pkgcat import-repo`` of one repository, again and again, until stopped."""

    def __init__(self, env: dict[str, str], repo: Path) -> None:
        self.imports = 0
        self.failures: list[str] = []
        self._env, self._repo = env, repo
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Importer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            # Alternate two versions of the source: every import after the first changes rows.
            url = f"https://soak{n % 2}.example/"
            command = [PKGCAT, "import-repo", str(self._repo), "--source", "Soak", "--url", url]
            done = subprocess.run(command, env=self._env, capture_output=True, text=True)
            if done.returncode != 0:
                self.failures.append(done.stderr.strip()[-500:])
                return
            self.imports += 1
            n += 1


# A run ---------------------------------------------------------------------------------------


@dataclass
class Soak:
    samples: list[Sample]
    statuses: dict[int, int]
    imports: int
    seconds: float


def soak(
    directory: Path,
    *,
    requests: int,
    spellings: int,
    workers: int = 1,
    clients: int = 32,
    client: str = "auto",
    import_stanzas: int = 0,
    settings: dict[str, str] | None = None,
    sample_every: float = 1.0,
    only: str | None = None,
) -> Soak:
    """Serve the demo from ``directory`` and send it ``requests`` of the mix; the samples."""
    database = directory / "soak.db"
    env = serve_env(database, **(settings or {}))
    apps = seed(env)
    wal = Path(f"{database}-wal")
    plan = mix(apps, spellings)
    if only is not None:  # that operation's requests of the mix
        plan = [(key, path) for key, path in plan if path.startswith(f"{PATHS[only]}?")]
    rotation = write_mix(directory / "mix.txt", plan)
    wrk = shutil.which("wrk") if client in ("auto", "wrk") else None
    if client == "wrk" and wrk is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    counter = Counter()
    started = time.monotonic()
    with ExitStack() as stack:
        served = stack.enter_context(serving(env, directory / "server.log", workers=workers))
        base, pid = served.base, served.process.pid
        poll(lambda: len(children(pid)) == workers or None, "every worker started")
        sampler = stack.enter_context(Sampler(pid, wal, lambda: counter.sent, sample_every))
        importer = None
        if import_stanzas:
            repo = large_repo(directory / "repo", import_stanzas)
            importer = stack.enter_context(Importer(env, repo))
        if wrk is not None:
            load_wrk(wrk, base, rotation, requests, clients, counter)
        else:
            load_httpx(base, plan, requests, clients, counter)
    if importer is not None and importer.failures:
        raise RuntimeError(f"an import failed: {importer.failures[0]}")
    imports = importer.imports if importer is not None else 0
    return Soak(sampler.samples, counter.statuses, imports, time.monotonic() - started)


def write_csv(path: Path, samples: Sequence[Sample]) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["seconds", "requests", "rss_mib", "open_files", "wal_mib"])
        for s in samples:
            writer.writerow([s.seconds, s.requests, s.rss_mib, s.open_files, s.wal_mib])


def plot(path: Path, samples: Sequence[Sample], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [s.seconds for s in samples]
    figure, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    for axis, values, label in (
        (axes[0], [s.rss_mib for s in samples], "workers' RSS (MiB)"),
        (axes[1], [s.wal_mib for s in samples], "WAL file (MiB)"),
        (axes[2], [s.open_files for s in samples], "open files"),
    ):
        axis.plot(x, values)
        axis.set_ylabel(label)
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
    axes[2].set_xlabel("seconds since the load started")
    axes[0].set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300_000)
    parser.add_argument("--spellings", type=int, default=100_000, help="distinct requests")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--client", choices=["auto", "wrk", "httpx"], default="auto")
    parser.add_argument("--import-stanzas", type=int, default=0, help="import during load")
    parser.add_argument("--only", choices=["details", "buyers", "usage"], help="one operation")
    parser.add_argument("--out", type=Path, help="CSV and PNG as OUT.csv and OUT.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pkgcat-soak-") as tmp:
        run = soak(
            Path(tmp),
            requests=args.requests,
            spellings=args.spellings,
            workers=args.workers,
            clients=args.clients,
            client=args.client,
            import_stanzas=args.import_stanzas,
            only=args.only,
        )
    found = verdict(run.samples)
    sent = run.samples[-1].requests
    print(
        f"{sent:,} requests in {run.seconds:.0f} s ({sent / run.seconds:,.0f}/s), "
        f"{args.workers} worker(s), {args.spellings:,} spellings, {run.imports} imports beside"
    )
    print(f"statuses: {dict(sorted(run.statuses.items()))} (0: not 2xx, as wrk reports)")
    first, last = run.samples[0], run.samples[-1]
    print(
        f"RSS {first.rss_mib:.1f} -> {last.rss_mib:.1f} MiB "
        f"(growth after warm-up {found.rss_growth_mib:.1f}); open files {first.open_files} -> "
        f"{last.open_files} (growth {found.open_files_growth}); WAL peak {found.wal_peak_mib:.1f} MiB"
    )
    if args.out is not None:
        write_csv(args.out.with_suffix(".csv"), run.samples)
        title = (
            f"Soak: {sent:,} mixed requests, {args.workers} worker(s), {sent / run.seconds:,.0f}/s"
        )
        plot(args.out.with_suffix(".png"), run.samples, title)
        print(f"wrote {args.out.with_suffix('.csv')} and {args.out.with_suffix('.png')}")
    for problem in found.problems:
        print(f"FAIL: {problem}")
    sys.exit(1 if found.problems else 0)


if __name__ == "__main__":
    main()
