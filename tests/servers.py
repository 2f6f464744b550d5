"""A real ``pkgcat serve`` process over a freshly seeded demo catalogue, on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

# The console script installed beside the interpreter running the tests.
PKGCAT = str(Path(sys.executable).with_name("pkgcat"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Served:
    base: str
    port: int
    apps: list[dict[str, Any]]
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log: IO[str]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a ``pkgcat serve`` as Ctrl-C would (SIGINT); kill it if it is still there after 15 s."""
    process.send_signal(signal.SIGINT)  # does nothing if it has exited already
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def demo_server(directory: Path, *, workers: int = 1, args: Sequence[str] = ()) -> Iterator[Served]:
    """Seed the demo into ``directory``, serve it, and stop the server (SIGINT) at the end.

    ``workers`` and any further ``args`` go to ``pkgcat serve``. The server counts as
    started once one worker answers; with several, the others may still be starting.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env["PKGCAT_DATABASE_URL"] = f"sqlite:///{directory / 'served.db'}"
    seeded = subprocess.run(
        [PKGCAT, "demo", "--json"], env=env, capture_output=True, text=True, check=True
    )
    apps = json.loads(seeded.stdout)["applications"]
    port = free_port()
    log = (directory / "server.log").open("w+")
    process = subprocess.Popen(
        [PKGCAT, "serve", "--port", str(port), "--workers", str(workers), *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            assert process.poll() is None, "the server exited while starting"
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer within 30 s"
                time.sleep(0.05)  # polling for readiness, not timing anything
        yield Served(base=base, port=port, apps=apps, env=env, process=process, log=log)
    finally:
        stop(process)
        log.close()
