"""The curves of ``run.py``: how a figure moves with one parameter.

- :func:`latency_by_page_and_days`: buyers latency against the page number and usage
  latency against ``days``, with wrk at one connection (the service time of one
  request, with no queue in front of it), 1 worker.
- :func:`details_by_size`: details req/s (random ids, 64 connections, 1 worker)
  against the number of packages, one server per catalogue size, measured in
  interleaved rounds with the baseline.
- :func:`import_by_size`: ``import_repository`` time against the number of stanzas
  in the index, on the first N stanzas of the Debian index apt keeps (or, when apt
  has none, a synthetic index), each import in a process of its own (``ingest.py``).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import catalogue, ingest
from bench.api import (
    BUYERS,
    DETAILS,
    UNLIMITED,
    USAGE,
    baseline_command,
    buyers_pages,
    pkgcat_command,
    serve_env,
    write_rotation,
)
from bench.catalogue import Params
from bench.loadgen import Children, Target, cpu_plan, fetch, interleave, start_server, summarize


@dataclass(frozen=True)
class CurveRun:
    group: Children
    wrk: str
    tmp: Path
    pin: bool
    rounds: int
    duration: int


def _serve(curve: CurveRun, database: Path, name: str) -> tuple[str, subprocess.Popen[bytes]]:
    server_cpus, _ = cpu_plan(curve.pin)
    return start_server(
        curve.group,
        pkgcat_command(1),
        "/healthz",
        serve_env(database, 1, UNLIMITED),
        curve.tmp / f"serve-{name}.log",
        server_cpus,
    )


def latency_by_page_and_days(
    curve: CurveRun, cat: catalogue.Catalogue, database: Path, pages: list[int], days: list[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Latency at one connection: buyers by page (limit 100), usage by ``days``."""
    api, proc = _serve(curve, database, "latency")
    last = buyers_pages(cat.params)
    pages = sorted({min(p, last) for p in pages})
    targets = [
        Target(
            f"buyers page {p}",
            f"{api}{BUYERS}?package={cat.hot_package}&limit=100&page={p}",
            cat.hot_key,
        )
        for p in pages
    ] + [Target(f"usage days={d}", f"{api}{USAGE}?days={d}", cat.hot_key) for d in days]
    for target in targets:
        status, body = fetch(target.url, target.key, timeout=30.0)
        if status != 200:
            raise RuntimeError(f"{target.name}: HTTP {status}: {body[:200]!r}")
    print("latency curves, 1 worker, wrk at 1 connection", file=sys.stderr)
    results = interleave(
        curve.wrk,
        targets,
        rounds=curve.rounds,
        duration=curve.duration,
        warmup=1,
        connections=1,
        threads=1,
        cpus=cpu_plan(curve.pin)[1],
    )
    curve.group.stop(proc)

    def point(target: Target) -> dict[str, Any]:
        s = summarize(target.name, 0, results[target.name])
        return {"req_per_s": s.requests_per_second, "p50_ms": s.p50_ms, "p99_ms": s.p99_ms}

    by_page = [{"page": p, **point(t)} for p, t in zip(pages, targets, strict=False)]
    by_days = [{"days": d, **point(t)} for d, t in zip(days, targets[len(pages) :], strict=True)]
    return by_page, by_days


def details_by_size(
    curve: CurveRun, params: Params, sizes: list[int], duration: int, connections: int
) -> list[dict[str, Any]]:
    """Details req/s (random ids) for catalogues that differ only in their package count."""
    cats = [catalogue.ensure(replace(params, packages=n)) for n in sizes]
    targets: list[Target] = []
    hot_bytes = 0
    for cat in cats:
        n = cat.params.packages
        database = curve.tmp / f"size-{n}.db"
        shutil.copyfile(cat.path, database)
        api, _ = _serve(curve, database, f"size-{n}")
        rotation = write_rotation(curve.tmp / f"rotation-{n}.txt", cat)
        status, body = fetch(f"{api}{DETAILS}?package={cat.hot_package}", cat.hot_key)
        if status != 200:
            raise RuntimeError(f"details at {n} packages: HTTP {status}: {body[:200]!r}")
        hot_bytes = hot_bytes or len(body)
        targets.append(Target(f"details, {n:,} packages", api, rotation=rotation))
    server_cpus, wrk_cpus = cpu_plan(curve.pin)
    base, _ = start_server(
        curve.group,
        baseline_command(hot_bytes, 1),
        "/",
        dict(os.environ),
        curve.tmp / "baseline-sizes.log",
        server_cpus,
    )
    baseline = Target("baseline (bare ASGI)", base + "/")
    print("details req/s against catalogue size, 1 worker", file=sys.stderr)
    results = interleave(
        curve.wrk,
        [baseline, *targets],
        rounds=curve.rounds,
        duration=duration,
        warmup=1,
        connections=connections,
        threads=2,
        cpus=wrk_cpus,
    )
    curve.group.check_alive()
    base_rps = statistics.median(r.requests_per_second for r in results[baseline.name])
    rows = []
    for cat, target in zip(cats, targets, strict=True):
        s = summarize(target.name, 0, results[target.name])
        rows.append(
            {
                "packages": cat.params.packages,
                "req_per_s": s.requests_per_second,
                "p50_ms": s.p50_ms,
                "p99_ms": s.p99_ms,
                "x_baseline": s.requests_per_second / base_rps,
            }
        )
    curve.group.stop_all()
    return rows


# --- import time ---------------------------------------------------------------------------

IMPORT_SIZES = [1_000, 2_000, 5_000, 10_000, 20_000, 40_000]


def debian_index() -> Path | None:
    found = sorted(
        p for p in ingest.APT_LISTS.glob(ingest.DEFAULT_PATTERN) if "diff_Index" not in p.name
    )
    return found[0] if found else None


def synthetic_stanzas(count: int) -> list[bytes]:
    """Stanzas shaped like a Debian index's (fields, lengths, relations), from a seed."""
    rng = random.Random(catalogue.SEED)
    out = []
    for n in range(count):
        name = f"pkg{n:05d}-{rng.choice(catalogue.WORDS)}"
        depends = ", ".join(
            f"lib{rng.choice(catalogue.WORDS)}{rng.randint(1, 9)} (>= {rng.randint(1, 3)}.{rng.randint(0, 9)})"
            for _ in range(rng.randint(0, 6))
        )
        text = (
            f"Package: {name}\nVersion: {rng.randint(0, 9)}.{rng.randint(0, 30)}-{rng.randint(1, 5)}\n"
            f"Installed-Size: {rng.randint(10, 90000)}\nMaintainer: Team {n % 300} <team{n % 300}@example.org>\n"
            f"Architecture: {rng.choice(['amd64', 'all'])}\n"
            + (f"Depends: {depends}\n" if depends else "")
            + f"Description: the {name} package\n"
            f"Homepage: https://example.org/{name}\n"
            f"Description-md5: {rng.getrandbits(128):032x}\n"
            f"Section: {rng.choice(catalogue.SECTIONS).lower()}\nPriority: optional\n"
            f"Filename: pool/main/p/{name}/{name}_1.0_amd64.deb\nSize: {rng.randint(1000, 9000000)}\n"
            f"MD5sum: {rng.getrandbits(128):032x}\nSHA256: {rng.getrandbits(256):064x}\n"
        )
        out.append(text.encode())
    return out


def import_by_size(tmp: Path, rounds: int) -> list[dict[str, Any]]:
    """Median import time into a fresh database for the first N stanzas of an index."""
    from pkgcat.ingest.compression import decompress

    index = debian_index()
    if index is not None:
        stanzas = [
            s for s in decompress(index.name, index.read_bytes()).split(b"\n\n") if s.strip()
        ]
        origin = "debian bookworm main amd64"
    else:
        stanzas = synthetic_stanzas(60_000)
        origin = "synthetic"
    sizes = [n for n in IMPORT_SIZES if n < len(stanzas)] + [len(stanzas)]
    folder = tmp / "import"
    folder.mkdir()
    slices = {}
    for n in sizes:
        path = folder / f"Packages-{n}"
        path.write_bytes(b"\n\n".join(stanzas[:n]) + b"\n")
        slices[n] = path
    print(f"import time against index size ({origin}, {len(stanzas):,} stanzas)", file=sys.stderr)
    seconds: dict[int, list[float]] = {n: [] for n in sizes}
    for r in range(rounds):
        for n in sizes:
            database = folder / f"import-{n}-{r}.db"
            url = f"sqlite:///{database}"
            seconds[n].append(float(ingest.measure("import", slices[n], url)["seconds"]))
            database.unlink(missing_ok=True)
        print(
            "  round {}: {}".format(
                r + 1, ", ".join(f"{n:,} {s[-1]:.2f} s" for n, s in seconds.items())
            ),
            file=sys.stderr,
        )
    return [
        {"stanzas": n, "seconds": statistics.median(s), "index": origin} for n, s in seconds.items()
    ]
