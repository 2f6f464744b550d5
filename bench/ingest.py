"""Import benchmark: a Debian Packages index into a fresh database, against parsing alone.

Measures, in the same run and interleaved round by round:

- ``parse``: python-debian alone parsing the index (decompressed by the same
  code as the import, then every paragraph of ``Deb822.iter_paragraphs``);
- ``import``: ``pkgcat.ingest.import_repository`` into a new database
  (decompression, fingerprints, parsing, mapping, writes, packages refreshed);
- ``import-1``: the same with ``jobs=1`` (one process: the per-core cost);
- ``reimport``: importing the same, unchanged index again;
- ``import-pg`` and ``reimport-pg`` (with ``--postgres-url``): the same two
  into a fresh PostgreSQL database, made and dropped by the run.

Each measurement runs in its own process, so its peak memory (``ru_maxrss``)
is its own; a parallel import also reports its largest worker's peak.

The index is the one apt keeps after ``apt-get update``: by default the
bookworm main amd64 index under ``/var/lib/apt/lists`` (lz4-compressed), or
any Packages file given as the argument. Not part of the test suite.

    .venv/bin/python -m bench.ingest                       # 3 rounds, medians
    .venv/bin/python -m bench.ingest PATH/Packages.xz --rounds 1 --json out.json
    .venv/bin/python -m bench.ingest --postgres-url postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import postgres

APT_LISTS = Path("/var/lib/apt/lists")
DEFAULT_PATTERN = "*_dists_bookworm_main_binary-amd64_Packages*"
STEPS = ("parse", "import", "import-1", "reimport")
POSTGRES_STEPS = ("import-pg", "reimport-pg")


def default_index() -> Path:
    found = sorted(p for p in APT_LISTS.glob(DEFAULT_PATTERN) if not p.name.endswith(".diff_Index"))
    if not found:
        sys.exit(
            f"no {DEFAULT_PATTERN} under {APT_LISTS}: run 'apt-get update' (with bookworm main "
            "in the sources), or give a Packages file"
        )
    return found[0]


def _peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def _pss_mb(pid: int) -> float:
    """Proportional set size: pages shared with another process count half in each."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:  # the process has just ended
        return 0.0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _family(pid: int) -> list[int]:
    """This process and its descendants (worker processes of a parallel import)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            children = task.read_text().split()
        except OSError:
            continue
        for child in children:
            found.extend(_family(int(child)))
    return found


class PssSampler(threading.Thread):
    """Samples the summed PSS of this process and its workers: the import's real footprint."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self.done.wait(0.1):
            self.peak = max(self.peak, sum(_pss_mb(pid) for pid in _family(me)))


def run_step(step: str, index: Path, url: str) -> dict[str, float]:
    """One measurement, in this process (called in a child by :func:`measure`)."""
    from debian.deb822 import Deb822

    from pkgcat.ingest import ImportOptions, import_repository
    from pkgcat.ingest.compression import decompress
    from pkgcat.ingest.workers import default_jobs
    from pkgcat.storage.admin import CatalogueAdmin
    from pkgcat.storage.migrate import upgrade

    if step == "parse":
        start = time.perf_counter()
        data = decompress(index.name, index.read_bytes())
        count = sum(1 for _ in Deb822.iter_paragraphs(io.BytesIO(data)))
        elapsed = time.perf_counter() - start
        return {"seconds": elapsed, "records": count, "peak_mb": _peak_mb(resource.RUSAGE_SELF)}
    upgrade(url)
    admin = CatalogueAdmin(url)
    jobs = 1 if step == "import-1" else default_jobs()
    options = ImportOptions(source="Debian", url="https://deb.debian.org/debian/", jobs=jobs)
    sampler = PssSampler()
    sampler.start()
    start = time.perf_counter()
    summary = import_repository(admin.engine, str(index), options).as_dict()
    elapsed = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    admin.close()
    return {
        "seconds": elapsed,
        "records": summary["records"]["read"],
        "added": summary["records"]["added"],
        "unchanged": summary["records"]["unchanged"],
        "jobs": jobs,
        "peak_mb": _peak_mb(resource.RUSAGE_SELF),
        "worker_peak_mb": _peak_mb(resource.RUSAGE_CHILDREN),
        "peak_pss_mb": sampler.peak,
    }


def measure(step: str, index: Path, url: str) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-m", "bench.ingest", str(index), "--step", step, "--database", url],
        cwd=Path(__file__).resolve().parents[1],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(output)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index", nargs="?", type=Path, help="a Packages file (any compression)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--postgres-url",
        help="also import into a fresh PostgreSQL database made beside this one (and dropped)",
    )
    parser.add_argument("--step", choices=STEPS + POSTGRES_STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--database", help=argparse.SUPPRESS)
    args = parser.parse_args()
    index = args.index or default_index()
    if args.step:
        print(json.dumps(run_step(args.step, index, args.database)))
        return
    steps = STEPS + (POSTGRES_STEPS if args.postgres_url else ())
    rounds: dict[str, list[dict[str, float]]] = {step: [] for step in steps}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(args.rounds):
            for step in ("parse", "import", "import-1"):
                url = f"sqlite:///{Path(scratch) / f'{step}-{n}.db'}"
                rounds[step].append(measure(step, index, url))
                if step == "import":
                    rounds["reimport"].append(measure("reimport", index, url))
            if args.postgres_url:
                with postgres.fresh_database(args.postgres_url, "pkgcat_bench_import") as url:
                    rounds["import-pg"].append(measure("import-pg", index, url))
                    rounds["reimport-pg"].append(measure("reimport-pg", index, url))
    medians = {
        step: {key: statistics.median(r[key] for r in results) for key in results[0]}
        for step, results in rounds.items()
    }
    parse = medians["parse"]["seconds"]
    print(
        f"index: {index} ({index.stat().st_size} bytes), {int(medians['parse']['records'])} records"
    )
    print(
        f"{'step':<10} {'seconds':>8} {'x parse':>8} {'peak RSS MB':>12} "
        f"{'worker RSS MB':>14} {'peak PSS MB (all)':>18}"
    )
    for step in steps:
        m = medians[step]
        print(
            f"{step:<10} {m['seconds']:8.2f} {m['seconds'] / parse:8.2f} {m['peak_mb']:12.0f} "
            f"{m.get('worker_peak_mb', 0):14.0f} {m.get('peak_pss_mb', m['peak_mb']):18.0f}"
        )
    if args.postgres_url:
        ratio = medians["import-pg"]["seconds"] / medians["import"]["seconds"]
        print(f"PostgreSQL import / SQLite import: {ratio:.2f}x (goal: at most 2x)")
    if args.json:
        args.json.write_text(
            json.dumps({"index": str(index), "rounds": rounds, "medians": medians}, indent=2)
        )


if __name__ == "__main__":
    main()
