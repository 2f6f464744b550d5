"""The served repository against a static file server, and the cost of an index rebuild.

Three goals, measured in one run (ratios, never absolute figures):

- ``Packages.gz`` of a large catalogue (63,436 files by default, the size of Debian
  main) served by ``pkgcat serve`` at >= 0.8x the req/s of granian serving the same
  file from disk (``--static-path-mount``), both with one worker pinned to the first CPU;
- a 5 MB .deb (directory store) at >= 0.8x of the same static server, in bytes per
  second (the same file, so req/s x size), as served by default (streamed, its count
  committed before its last byte) and with ``PKGCAT_DOWNLOAD_ZERO_COPY=true`` (sent
  from disk by the server in one message);
- after one package changes, the time until a worker serves the new signed indexes,
  and what each compression of ``Packages`` costs in that rebuild.

With ``--s3`` the same .deb is also stored in SeaweedFS (``weed server -s3``, started as
the tests start it, pinned to the servers' CPU) and downloaded from the S3 store: streamed
through ``pkgcat serve``, and with ``PKGCAT_DOWNLOAD_REDIRECT=true`` (pkgcat's ``302``
answers per second, and wrk fetching the presigned object from SeaweedFS directly, at the
``Location`` of one redirect, taken once: its lifetime bounds the run).

The catalogue is written straight into a SQLite file (rows of ``packages`` and
``deb_files`` with control paragraphs of a typical size), so the indexes are those
of a real catalogue without storing 63,436 files; the one .deb that is downloaded
is published with ``pkgcat publish``. wrk runs on the other CPU.

    .venv/bin/python -m bench.repository               # about 2 minutes
    .venv/bin/python -m bench.repository --smoke       # the harness on 2,000 files, 1 s rounds
    .venv/bin/python -m bench.repository --s3          # also the S3 store (SeaweedFS)
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from contextlib import ExitStack
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update
from tests.seaweed import S3Server, seaweedfs

from bench.baseline_app import PATHSEND_FILE_ENV
from bench.loadgen import (
    BENCH_DIR,
    Target,
    children,
    cpu_plan,
    fetch,
    find_wrk,
    pinned,
    run_wrk,
    start_server,
)
from pkgcat.http.repository import REDIRECT_SECONDS
from pkgcat.repository.indexes import Identity, build, stanza
from pkgcat.repository.pieces import FORMATS, cut, join
from pkgcat.storage import schema as t
from pkgcat.storage.blobs import file_sha256
from pkgcat.storage.engine import engine_for
from pkgcat.storage.served import read_served

PKGCAT = str(Path(sys.executable).with_name("pkgcat"))
GRANIAN = str(Path(sys.executable).with_name("granian"))
GOAL = 0.8
REBUILD_GOAL_S = 10.0
LARGE_BUFFER = 417_792
"""PKGCAT_CONNECTION_BUFFER_BYTES of the third pkgcat server: granian's own default."""
DEPENDS = "libc6 (>= 2.34), libgcc-s1 (>= 3.0), libstdc++6 (>= 11), zlib1g (>= 1:1.2.0)"


def _digest(name: str, n: int, size: int) -> str:
    return hashlib.new(name, f"{n}".encode()).hexdigest()[: size * 2]


def write_catalogue(database_url: str, files: int) -> str:
    """``files`` packages of a source of their own, each with one stored (unreal) .deb."""
    engine = engine_for(database_url)
    now = int(time.time())
    try:
        with engine.begin() as db:
            source_id = db.execute(
                insert(t.sources).values(name="Large", url="https://large.example/", created_at=now)
            ).inserted_primary_key[0]
            packages, debs = [], []
            for n in range(files):
                package = f"org.large.pkg{n:06d}"
                version = f"1.{n % 97}.{n % 13}-{n % 5 + 1}"
                description = f"package number {n} of a large catalogue"
                control = "\n".join(
                    [
                        f"Package: {package}",
                        "Source: large-sources",
                        f"Version: {version}",
                        f"Installed-Size: {100 + n % 9000}",
                        "Maintainer: Large Catalogue Maintainers <maint@large.example>",
                        "Architecture: amd64",
                        f"Depends: {DEPENDS}",
                        f"Description: {description}",
                        " This is the long description of the package, a paragraph of about",
                        " the length Debian's records have, over three lines of text, so that",
                        " the index is as large per record as a real one.",
                        "Homepage: https://large.example/",
                        "Section: utils",
                        "Priority: optional",
                    ]
                )
                packages.append(
                    {
                        "package": package,
                        "source_id": source_id,
                        "name": package,
                        "version": version,
                        "architecture": "amd64",
                        "description": description,
                        "price": "0.00",
                        "released_at": now,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
                debs.append(
                    {
                        "sha256": _digest("sha256", n, 32),
                        "source_id": source_id,
                        "package": package,
                        "version": version,
                        "architecture": "amd64",
                        "size": 50_000 + n,
                        "md5sum": _digest("md5", n, 16),
                        "sha1": _digest("sha1", n, 20),
                        "sha512": _digest("sha512", n, 64),
                        "control": control,
                        "stored_at": now,
                    }
                )
            db.execute(insert(t.packages), packages)
            db.execute(insert(t.deb_files), debs)
    finally:
        engine.dispose()
    return "Large"


def make_deb(directory: Path, megabytes: int) -> Path:
    """A .deb of about ``megabytes`` MB of incompressible data, stored uncompressed."""
    root = directory / "big"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr" / "share" / "big").mkdir(parents=True)
    (root / "usr" / "share" / "big" / "data.bin").write_bytes(os.urandom(megabytes * 1_000_000))
    (root / "DEBIAN" / "control").write_text(
        "Package: com.example.big\nVersion: 1.0\nArchitecture: all\n"
        "Maintainer: Bench <bench@example.com>\nDescription: a large file\n"
    )
    deb = directory / "com.example.big_1.0_all.deb"
    subprocess.run(
        ["dpkg-deb", "-Znone", "--root-owner-group", "--build", str(root), str(deb)],
        check=True,
        capture_output=True,
    )
    return deb


def store_in_s3(server: S3Server, prefix: str, deb: Path) -> None:
    """The .deb as a blob of the S3 store under ``prefix``, where ``pkgcat serve`` reads it."""
    from pkgcat.storage.s3 import S3Blobs

    async def put() -> None:
        blobs = S3Blobs(
            server.bucket,
            endpoint=server.endpoint,
            prefix=prefix,
            access_key_id=server.access_key_id,
            secret_access_key=server.secret_access_key,
        )
        try:
            await blobs.put(deb, file_sha256(deb))
        finally:
            await blobs.close()

    asyncio.run(put())


def check_download(url: str, deb: Path) -> None:
    status, body = fetch(url, timeout=60)
    if status != 200 or body != deb.read_bytes():
        raise RuntimeError(f"{url}: {status}, {len(body)} bytes, not the .deb")


def redirect_location(url: str) -> str:
    """Where a GET of ``url`` is redirected (the answer must be a ``302``)."""
    parts = urllib.parse.urlsplit(url)
    connection = HTTPConnection(parts.netloc, timeout=60)
    try:
        connection.request("GET", parts.path)
        response = connection.getresponse()
        response.read()
        location = response.getheader("Location")
    finally:
        connection.close()
    if response.status != 302 or location is None:
        raise RuntimeError(f"{url}: {response.status}, not a redirect")
    return location


def rebuild_costs(database_url: str) -> dict[str, float]:
    """Seconds of each step of a build, in this process: the read, each compression of the
    whole catalogue's ``Packages`` (in pieces, as a build makes them, and in one stream
    for comparison), a whole build (unsigned), and a build after one package changed."""
    engine = engine_for(database_url)
    try:
        started = time.perf_counter()
        snapshot = read_served(engine)
        costs = {"read": time.perf_counter() - started}
    finally:
        engine.dispose()
    identity = Identity(label="bench", valid_seconds=0, depictions=None)
    started = time.perf_counter()
    built = build(snapshot, identity, None)
    costs["build"] = time.perf_counter() - started
    text = built.files["Packages"].body
    costs["Packages bytes"] = float(len(text))
    stanzas = [(file.sha256, stanza(file, identity.depictions).encode()) for file in snapshot.files]
    started = time.perf_counter()
    parts = cut(stanzas)
    costs["cut"] = time.perf_counter() - started
    costs["pieces"] = float(len(parts))
    for suffix, form in FORMATS.items():
        started = time.perf_counter()
        compressed = [form.piece(part) for part in parts]
        costs[f"Packages{suffix} pieces"] = time.perf_counter() - started
        started = time.perf_counter()
        joined = join(suffix, compressed, text)
        costs[f"Packages{suffix} join"] = time.perf_counter() - started
        costs[f"Packages{suffix} bytes"] = float(len(joined))
        started = time.perf_counter()
        costs[f"Packages{suffix} whole bytes"] = float(len(form.whole(text)))
        costs[f"Packages{suffix} whole"] = time.perf_counter() - started
    # One package changed: its stanza, as time_to_serve_a_change changes it.
    first = snapshot.files[7]
    changed = dataclasses.replace(first, control=first.control + "\nTag: changed")
    files = [changed if f is first else f for f in snapshot.files]
    later = dataclasses.replace(snapshot, files=files, generation=snapshot.generation + 1)
    started = time.perf_counter()
    build(later, identity, None, previous=built)
    costs["rebuild"] = time.perf_counter() - started
    return costs


def time_to_serve_a_change(database_url: str, root: str, package: str) -> float:
    """Seconds from a change to one package until the served Release says so (its ETag)."""
    _, before = fetch(f"{root}/repo/Release")
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(
                update(t.packages)
                .where(t.packages.c.package == package)
                .values(description="changed", updated_at=int(time.time()) + 1)
            )
            d = t.deb_files
            control = db.execute(select(d.c.control).where(d.c.package == package)).scalar_one()
            db.execute(
                update(d).where(d.c.package == package).values(control=control + "\nTag: changed")
            )
        changed = time.perf_counter()
    finally:
        engine.dispose()
    deadline = changed + 1800
    while time.perf_counter() < deadline:
        status, now = fetch(f"{root}/repo/Release", timeout=60)
        if status == 200 and now != before:
            return time.perf_counter() - changed
        time.sleep(0.05)  # polling for the new index, not timing anything with a sleep
    raise RuntimeError("the change was not served within 1800 s")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    wrk = find_wrk()
    server_cpus, wrk_cpus = cpu_plan(not args.no_pin)
    results: dict[str, Any] = {"files": args.files, "deb_megabytes": args.deb_mb}
    with tempfile.TemporaryDirectory(prefix="pkgcat-bench-repo-") as tmp_name:
        tmp = Path(tmp_name)
        database_url = f"sqlite:///{tmp / 'repo.db'}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
        env |= {
            "PKGCAT_DATABASE_URL": database_url,
            "PKGCAT_BLOB_DIR": str(tmp / "blobs"),
            "PKGCAT_REPOSITORY_PASSPHRASE": "a passphrase for the benchmark only",
            "PKGCAT_ACCESS_LOG": "false",
        }
        subprocess.run([PKGCAT, "init"], env=env, check=True, capture_output=True)
        source = write_catalogue(database_url, args.files)
        deb = make_deb(tmp, args.deb_mb)
        subprocess.run(
            [PKGCAT, "publish", str(deb), "--source", source],
            env=env,
            check=True,
            capture_output=True,
        )
        if not args.serving_only:
            results["rebuild"] = rebuild_costs(database_url)
        static = tmp / "static"
        static.mkdir()
        with ExitStack() as stack:
            group = stack.enter_context(children())
            s3_env: dict[str, str] | None = None
            if args.s3:
                (tmp / "seaweedfs").mkdir()
                server = stack.enter_context(
                    seaweedfs(tmp / "seaweedfs", wrap=pinned([], server_cpus))
                )
                store_in_s3(server, "bench", deb)
                s3_env = {k: v for k, v in env.items() if k != "PKGCAT_BLOB_DIR"}
                s3_env |= {f"PKGCAT_{k.upper()}": v for k, v in server.settings("bench").items()}
            root, _ = start_server(
                group, [PKGCAT, "serve"], "/readyz", env, tmp / "pkgcat.log", server_cpus
            )
            zero_copy_env = env | {"PKGCAT_DOWNLOAD_ZERO_COPY": "true"}
            zero_root, _ = start_server(
                group,
                [PKGCAT, "serve"],
                "/readyz",
                zero_copy_env,
                tmp / "pkgcat-zero-copy.log",
                server_cpus,
            )
            # Zero copy with the HTTP server's own connection buffer (408 KiB, where pkgcat's
            # default of 72 KiB also caps what an answer queues for the socket at once).
            buffered_root, _ = start_server(
                group,
                [PKGCAT, "serve"],
                "/readyz",
                zero_copy_env | {"PKGCAT_CONNECTION_BUFFER_BYTES": str(LARGE_BUFFER)},
                tmp / "pkgcat-zero-copy-buffer.log",
                server_cpus,
            )
            s3_roots: list[str] = []
            if s3_env is not None:
                for name, extra in (
                    ("s3", {}),
                    ("s3-redirect", {"PKGCAT_DOWNLOAD_REDIRECT": "true"}),
                ):
                    s3_roots.append(
                        start_server(
                            group,
                            [PKGCAT, "serve"],
                            "/readyz",
                            s3_env | extra,
                            tmp / f"pkgcat-{name}.log",
                            server_cpus,
                        )[0]
                    )
            if not args.serving_only:
                print(report_rebuild(results["rebuild"]), flush=True)
            # The first request of a worker waits for its first build: every server's now.
            started = time.perf_counter()
            status, packages_gz = fetch(f"{root}/repo/Packages.gz", timeout=1800)
            assert status == 200, status
            results["first build served after (s)"] = time.perf_counter() - started
            for other in (zero_root, buffered_root, *s3_roots):
                assert fetch(f"{other}/repo/Packages.gz", timeout=1800)[0] == 200
            (static / "Packages.gz").write_bytes(packages_gz)
            _, index = fetch(f"{root}/repo/Packages", timeout=120)
            (filename,) = [
                line.split(b": ", 1)[1].decode()
                for line in index.splitlines()
                if line.startswith(b"Filename: ") and b"com.example.big" in line
            ]
            shutil.copyfile(deb, static / deb.name)
            granian_root, _ = start_server(
                group,
                [
                    GRANIAN,
                    "--interface",
                    "asgi",
                    "--factory",
                    "--workers",
                    "1",
                    "--static-path-mount",
                    str(static),
                    "--static-path-route",
                    "/static",
                    "--static-path-expires",
                    "0",
                    "--working-dir",
                    str(BENCH_DIR),
                    "baseline_app:create_app",
                ],
                "/static/Packages.gz",
                env | {PATHSEND_FILE_ENV: str(static / deb.name)},
                tmp / "granian.log",
                server_cpus,
            )
            targets = {
                "Packages.gz, pkgcat": (Target("pkgcat", f"{root}/repo/Packages.gz"), 64),
                "Packages.gz, pkgcat, large buffer": (
                    Target("pkgcat, large buffer", f"{buffered_root}/repo/Packages.gz"),
                    64,
                ),
                "Packages.gz, static": (
                    Target("static", f"{granian_root}/static/Packages.gz"),
                    64,
                ),
                f"{args.deb_mb} MB .deb, pkgcat": (Target("pkgcat", f"{root}/repo/{filename}"), 8),
                f"{args.deb_mb} MB .deb, pkgcat zero copy": (
                    Target("zero copy", f"{zero_root}/repo/{filename}"),
                    8,
                ),
                f"{args.deb_mb} MB .deb, pkgcat zero copy, large buffer": (
                    Target("zero copy, large buffer", f"{buffered_root}/repo/{filename}"),
                    8,
                ),
                f"{args.deb_mb} MB .deb, bare app, pathsend": (
                    Target("bare pathsend", f"{granian_root}/deb"),
                    8,
                ),
                f"{args.deb_mb} MB .deb, static": (
                    Target("static", f"{granian_root}/static/{deb.name}"),
                    8,
                ),
            }
            presigned_at = 0.0
            if s3_roots:
                s3_root, redirect_root = s3_roots
                check_download(f"{s3_root}/repo/{filename}", deb)
                # One presigned address for every round: it must outlive them.
                needed = args.rounds * (len(targets) + 3) * (args.duration + 1)
                if needed >= REDIRECT_SECONDS:
                    raise SystemExit(
                        f"--rounds x --duration take about {needed} s; a presigned address "
                        f"lasts {REDIRECT_SECONDS} s: fewer rounds or shorter ones with --s3"
                    )
                presigned = redirect_location(f"{redirect_root}/repo/{filename}")
                presigned_at = time.monotonic()
                check_download(presigned, deb)
                targets |= {
                    f"{args.deb_mb} MB .deb, pkgcat S3": (
                        Target("S3", f"{s3_root}/repo/{filename}"),
                        8,
                    ),
                    f"{args.deb_mb} MB .deb, pkgcat S3 redirect": (
                        Target("S3 redirect", f"{redirect_root}/repo/{filename}", expect=302),
                        8,
                    ),
                    f"{args.deb_mb} MB .deb, presigned object": (
                        Target("presigned", presigned),
                        8,
                    ),
                }
            rounds: dict[str, list[float]] = {name: [] for name in targets}
            for _ in range(args.rounds):  # interleaved: a busy moment hits both sides
                for name, (target, connections) in targets.items():
                    if target.name == "presigned" and (
                        time.monotonic() - presigned_at + args.duration >= REDIRECT_SECONDS
                    ):
                        raise RuntimeError("the presigned address would expire during the round")
                    found = run_wrk(
                        wrk,
                        target,
                        duration=args.duration,
                        connections=connections,
                        threads=1,
                        cpus=wrk_cpus,
                    )
                    if found.bad_responses or found.socket_errors:
                        raise RuntimeError(f"{name}: answers other than 200: {found}")
                    rounds[name].append(found.requests_per_second)
                    group.check_alive()
            results["req/s"] = {name: statistics.median(r) for name, r in rounds.items()}
            results["Packages.gz bytes"] = len(packages_gz)
            results["deb bytes"] = deb.stat().st_size
            results["s3"] = bool(s3_roots)
            if not args.serving_only:
                results["change served after (s)"] = time_to_serve_a_change(
                    database_url, root, "org.large.pkg000007"
                )
    return results


def report(results: dict[str, Any]) -> str:
    rps = results["req/s"]
    mb = results["deb_megabytes"]
    index = rps["Packages.gz, pkgcat"] / rps["Packages.gz, static"]
    index_buffered = rps["Packages.gz, pkgcat, large buffer"] / rps["Packages.gz, static"]
    static = rps[f"{mb} MB .deb, static"]
    deb = rps[f"{mb} MB .deb, pkgcat"] / static
    zero = rps[f"{mb} MB .deb, pkgcat zero copy"] / static
    buffered = rps[f"{mb} MB .deb, pkgcat zero copy, large buffer"] / static
    bare = rps[f"{mb} MB .deb, bare app, pathsend"] / static
    megabytes = results["deb bytes"] / 1e6
    rebuild = results.get("rebuild")
    lines = [
        f"catalogue of {results['files']:,} files; Packages.gz {results['Packages.gz bytes']:,} bytes; "
        f".deb {results['deb bytes']:,} bytes",
        "",
        "| target | pkgcat | static (granian) | ratio | goal |",
        "|---|---|---|---|---|",
        f"| Packages.gz, req/s | {rps['Packages.gz, pkgcat']:,.0f} | "
        f"{rps['Packages.gz, static']:,.0f} | {index:.2f}x | >= {GOAL}x: "
        f"{'met' if index >= GOAL else 'not met'} |",
        f"| Packages.gz, req/s, PKGCAT_CONNECTION_BUFFER_BYTES={LARGE_BUFFER} | "
        f"{rps['Packages.gz, pkgcat, large buffer']:,.0f} | "
        f"{rps['Packages.gz, static']:,.0f} | {index_buffered:.2f}x | >= {GOAL}x: "
        f"{'met' if index_buffered >= GOAL else 'not met'} |",
        f"| {mb} MB .deb, MB/s | {rps[f'{mb} MB .deb, pkgcat'] * megabytes:,.0f} | "
        f"{rps[f'{mb} MB .deb, static'] * megabytes:,.0f} | {deb:.2f}x | >= {GOAL}x: "
        f"{'met' if deb >= GOAL else 'not met'} |",
        f"| {mb} MB .deb, MB/s, PKGCAT_DOWNLOAD_ZERO_COPY=true | "
        f"{rps[f'{mb} MB .deb, pkgcat zero copy'] * megabytes:,.0f} | "
        f"{static * megabytes:,.0f} | {zero:.2f}x | >= {GOAL}x: "
        f"{'met' if zero >= GOAL else 'not met'} |",
        f"| {mb} MB .deb, MB/s, zero copy and PKGCAT_CONNECTION_BUFFER_BYTES={LARGE_BUFFER} | "
        f"{rps[f'{mb} MB .deb, pkgcat zero copy, large buffer'] * megabytes:,.0f} | "
        f"{static * megabytes:,.0f} | {buffered:.2f}x | >= {GOAL}x: "
        f"{'met' if buffered >= GOAL else 'not met'} |",
        f"| {mb} MB .deb, MB/s, a bare app's pathsend (the most pathsend gives) | "
        f"{rps[f'{mb} MB .deb, bare app, pathsend'] * megabytes:,.0f} | "
        f"{static * megabytes:,.0f} | {bare:.2f}x | |",
    ]
    if results.get("s3"):
        lines += report_s3(results, static)
    if rebuild is None:
        return "\n".join(lines)
    lines += ["", report_rebuild(rebuild)]
    served = results["change served after (s)"]
    lines += [
        "",
        f"a worker's first build, served after {results['first build served after (s)']:.1f} s; "
        f"one package changed: the new signed Release served after {served:.1f} s "
        f"(goal <= {REBUILD_GOAL_S:.0f} s: {'met' if served <= REBUILD_GOAL_S else 'not met'})",
    ]
    return "\n".join(lines)


def report_s3(results: dict[str, Any], static: float) -> list[str]:
    """The S3 store's rows: streamed, redirected, and the presigned object fetched directly."""
    rps = results["req/s"]
    mb = results["deb_megabytes"]
    megabytes = results["deb bytes"] / 1e6
    streamed = rps[f"{mb} MB .deb, pkgcat S3"]
    redirects = rps[f"{mb} MB .deb, pkgcat S3 redirect"]
    direct = rps[f"{mb} MB .deb, presigned object"]
    # A download by redirect costs the one CPU a 302 and the object's send.
    both = 1 / (1 / redirects + 1 / direct)

    def goal(ratio: float) -> str:
        return f">= {GOAL}x: {'met' if ratio >= GOAL else 'not met'}"

    return [
        f"| {mb} MB .deb, MB/s, S3 store, streamed through pkgcat | {streamed * megabytes:,.0f} | "
        f"{static * megabytes:,.0f} | {streamed / static:.2f}x | {goal(streamed / static)} |",
        f"| {mb} MB .deb, S3 store, PKGCAT_DOWNLOAD_REDIRECT=true: 302 answers/s "
        f"(static: downloads/s) | {redirects:,.0f} | {static:,.0f} | {redirects / static:.2f}x | |",
        f"| {mb} MB .deb, MB/s, the presigned object from SeaweedFS directly | "
        f"{direct * megabytes:,.0f} | {static * megabytes:,.0f} | {direct / static:.2f}x | "
        f"{goal(direct / static)} |",
        f"| {mb} MB .deb, MB/s, redirect then object, both on the one CPU (1/(1/a+1/b)) | "
        f"{both * megabytes:,.0f} | {static * megabytes:,.0f} | {both / static:.2f}x | "
        f"{goal(both / static)} |",
    ]


def report_rebuild(rebuild: dict[str, float]) -> str:
    pieces = int(rebuild["pieces"])
    lines = [
        "| step of a build (whole catalogue, in-process) | seconds | bytes |",
        "|---|---|---|",
        f"| read the snapshot | {rebuild['read']:.2f} | |",
        f"| cut the text into {pieces} pieces | {rebuild['cut']:.2f} | "
        f"{rebuild['Packages bytes']:,.0f} (Packages) |",
    ]
    for suffix in FORMATS:
        lines.append(
            f"| compress Packages{suffix}: every piece, one CPU, then join | "
            f"{rebuild[f'Packages{suffix} pieces']:.2f} + {rebuild[f'Packages{suffix} join']:.2f}"
            f" | {rebuild[f'Packages{suffix} bytes']:,.0f} |"
        )
        lines.append(
            f"| (the same in one stream of the whole text) | "
            f"{rebuild[f'Packages{suffix} whole']:.2f} | "
            f"{rebuild[f'Packages{suffix} whole bytes']:,.0f} |"
        )
    lines += [
        f"| build every file of every repository (unsigned) | {rebuild['build']:.2f} | |",
        f"| build again after one package changed (unsigned) | {rebuild['rebuild']:.2f} | |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=63_436)
    parser.add_argument("--deb-mb", type=int, default=5)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument(
        "--serving-only", action="store_true", help="no rebuild costs, no change served"
    )
    parser.add_argument("--smoke", action="store_true", help="2,000 files, 1 round of 1 s")
    parser.add_argument(
        "--s3", action="store_true", help="also the .deb from SeaweedFS's S3 (streamed, redirected)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.smoke:
        args.files, args.duration, args.rounds = 2_000, 1, 1
    results = measure(args)
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
