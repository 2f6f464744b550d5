"""The published indexes at catalogue scale, on SQLite and on PostgreSQL with S3.

A catalogue of 60,000 packages (each with one stored, unreal .deb: the rows
:func:`bench.repository.write_catalogue` writes, control paragraphs of a typical size), a
signing key, and ``pkgcat serve`` of 2 workers: one host on SQLite with the directory
store, two hosts on one PostgreSQL database with SeaweedFS as the S3 store (started as
the tests start it). Measured:

- **first publication**: from the last host's readiness until every host serves a Release;
- **a change served**: from a change to one package (its row and its stanza) until every
  host serves the new Release (the median of the rounds, and the slowest);
- **memory**: each worker's resident memory at the end, and its peak (``VmHWM``).

    .venv/bin/python -m bench.indexes             # 60,000 packages, 3 rounds (a few minutes)
    .venv/bin/python -m bench.indexes --smoke     # 2,000 packages, 1 round
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from tests.seaweed import seaweedfs
from tests.servers import children as processes

from bench.loadgen import Children, children, fetch, start_server
from bench.postgres import fresh_database
from bench.repository import PKGCAT, write_catalogue
from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for
from pkgcat.storage.migrate import upgrade

WORKERS = 2
PASSPHRASE = "a benchmark passphrase, long enough"  # noqa: S105 - seals a throwaway database
WAIT_S = 600.0
"""How long a step may take before the run is given up."""


def _command(env: dict[str, str], *args: str) -> None:
    subprocess.run([PKGCAT, *args], env=env, check=True, capture_output=True)


@contextmanager
def _database(backend: str, directory: Path, postgres_url: str) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{directory / 'bench.db'}"
        return
    with fresh_database(postgres_url, "pkgcat_bench_indexes") as url:
        yield url


def _released(root: str) -> bytes | None:
    # Release, not InRelease: workers that each sign their own (pkgcat before its indexes
    # were published once) answer InReleases that differ for one catalogue.
    status, body = fetch(f"{root}/repo/Release", timeout=60)
    return body if status == 200 else None


def _until_all(roots: list[str], served: dict[str, bytes | None]) -> float:
    """Seconds until every host serves a Release other than ``served``'s."""
    started = time.perf_counter()
    pending = set(roots)
    while pending:
        for root in list(pending):
            now = _released(root)
            if now is not None and now != served.get(root):
                pending.discard(root)
        if time.perf_counter() - started > WAIT_S:
            raise RuntimeError(f"not served within {WAIT_S:.0f} s")
        time.sleep(0.02)  # polling for the new Release, not timing anything with a sleep
    return time.perf_counter() - started


def _change(database_url: str, package: str, round_: int) -> None:
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            p, d = t.packages, t.deb_files
            db.execute(
                update(p)
                .where(p.c.package == package)
                .values(description=f"changed {round_}", updated_at=int(time.time()) + round_)
            )
            control = db.execute(select(d.c.control).where(d.c.package == package)).scalar_one()
            db.execute(
                update(d)
                .where(d.c.package == package)
                .values(control=control + f"\nTag: changed{round_}")
            )
    finally:
        engine.dispose()


def _analyze(database_url: str) -> None:
    """The planner's statistics of the rows just written, as autovacuum soon has them on a
    running server: without, PostgreSQL read the snapshot by a plan made for empty tables
    (over 90 s a read at 60,000 files, four workers at once)."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()


def _memory(hosts: list[subprocess.Popen[bytes]]) -> list[dict[str, float]]:
    found = []
    for host in hosts:
        for proc in processes(host.pid):
            status = Path(f"/proc/{proc.pid}/status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            found.append(
                {
                    "rss_mb": int(fields["VmRSS"].split()[0]) / 1024,
                    "peak_mb": int(fields["VmHWM"].split()[0]) / 1024,
                }
            )
    return found


def measure(backend: str, files: int, rounds: int, postgres_url: str) -> dict[str, Any]:
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pkgcat-idx-")))
        database_url = stack.enter_context(_database(backend, directory, postgres_url))
        upgrade(database_url)
        source = write_catalogue(database_url, files)
        _analyze(database_url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
        env |= {
            "PKGCAT_DATABASE_URL": database_url,
            "PKGCAT_REPOSITORY_PASSPHRASE": PASSPHRASE,
            "PKGCAT_ACCESS_LOG": "off",
        }
        if backend == "sqlite":
            env["PKGCAT_BLOB_DIR"] = str(directory / "blobs")
            count = 1
        else:
            (directory / "seaweedfs").mkdir()
            server = stack.enter_context(seaweedfs(directory / "seaweedfs"))
            env |= server.settings("bench")
            count = 2
        _command(env, "repo", "key", "create")
        group: Children = stack.enter_context(children())
        roots, hosts = [], []
        for n in range(count):
            host_env = env | {"PKGCAT_INDEX_DIR": str(directory / f"indexes-{n}")}
            root, proc = start_server(
                group,
                [PKGCAT, "serve", "--workers", str(WORKERS)],
                "/readyz",
                host_env,
                directory / f"host-{n}.log",
                None,
            )
            roots.append(root)
            hosts.append(proc)
        first = _until_all(roots, {})
        changes = []
        for round_ in range(1, rounds + 1):
            served = {root: _released(root) for root in roots}
            engine = engine_for(database_url)
            try:
                with engine.connect() as db:
                    d = t.deb_files
                    package = db.execute(
                        select(d.c.package).order_by(d.c.package).offset(7 * round_).limit(1)
                    ).scalar_one()
            finally:
                engine.dispose()
            _change(database_url, package, round_)
            changes.append(_until_all(roots, served))
        packages_bytes = len(fetch(f"{roots[0]}/repo/Packages", timeout=60)[1])
        memory = _memory(hosts)
        group.stop_all()
        print(f"{backend}: {len(changes)} changes served", file=sys.stderr)
        return {
            "backend": backend,
            "source": source,
            "packages": files,
            "hosts": count,
            "workers_per_host": WORKERS,
            "Packages_bytes": packages_bytes,
            "first_publication_s": round(first, 2),
            "change_served_median_s": round(statistics.median(changes), 2),
            "change_served_max_s": round(max(changes), 2),
            "worker_rss_max_mb": round(max(m["rss_mb"] for m in memory), 1),
            "worker_peak_max_mb": round(max(m["peak_mb"] for m in memory), 1),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="2,000 packages, 1 round")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(
            "PKGCAT_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres-s3"), action="append")
    args = parser.parse_args()
    files, rounds = (2_000, 1) if args.smoke else (args.files, args.rounds)
    for backend in args.backend or ("sqlite", "postgres-s3"):
        print(json.dumps(measure(backend, files, rounds, args.postgres_url), indent=2), flush=True)


if __name__ == "__main__":
    main()
