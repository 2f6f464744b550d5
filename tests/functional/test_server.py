"""A real `pkgcat serve` process on 127.0.0.1, driven over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.server

# The console script installed beside the interpreter running the tests.
PKGCAT = str(Path(sys.executable).with_name("pkgcat"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env["PKGCAT_DATABASE_URL"] = f"sqlite:///{tmp_path / 'served.db'}"
    seeded = subprocess.run(
        [PKGCAT, "demo", "--json"], env=env, capture_output=True, text=True, check=True
    )
    apps = json.loads(seeded.stdout)["applications"]
    port = free_port()
    log = (tmp_path / "server.log").open("w+")
    process = subprocess.Popen(
        [PKGCAT, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
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
        yield {"base": base, "apps": apps, "process": process, "log": log}
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_the_three_operations_over_real_http(server: dict[str, Any]) -> None:
    shape_a = next(a for a in server["apps"] if a["shape"] == "A")
    shape_b = next(a for a in server["apps"] if a["shape"] == "B")
    with httpx.Client(base_url=server["base"], timeout=10) as http:
        usage = http.get(
            "/1.0/application/usage.json", params={"secret_key": shape_a["secret_key"]}
        )
        assert usage.status_code == 200
        assert len(usage.json()["response"]) == 31
        assert usage.headers["ratelimit-limit"] == "3600"
        details = http.get(
            "/1.0/package/details.json",
            params={"package": shape_b["paid_package"]},
            headers={"Authorization": f"Bearer {shape_b['secret_key']}"},
        )
        assert details.json()["response"]["url"].startswith("http://")
        assert "sha256" not in details.json()["response"]
        buyers = http.get(
            "/1.0/package/buyers.json",
            params={"package": shape_a["paid_package"], "secret_key": shape_a["secret_key"]},
        )
        assert int(buyers.json()["response"]["total"]) >= 240
        assert http.get("/2.0/application/usage.json").json()["code"] == 6
        assert http.post("/1.0/package/details.json").status_code == 405
        assert http.get("/openapi.json").json()["openapi"] == "3.1.0"
        missing = http.get(
            "/1.0/package/details.json", params={"secret_key": shape_a["secret_key"]}
        )
        assert (missing.status_code, missing.json()["code"]) == (400, 2)
        unknown = http.get("/1.0/package/buyers.json?package=x&secret_key=" + shape_a["secret_key"])
        assert (unknown.status_code, unknown.json()["code"]) == (404, 8)


def test_the_server_never_logs_keys_and_stops_cleanly(server: dict[str, Any]) -> None:
    key = server["apps"][0]["secret_key"]
    with httpx.Client(base_url=server["base"], timeout=10) as http:
        for path in ("/1.0/application/usage.json", "/1.0/package/details.json", "/nothing"):
            http.get(path, params={"secret_key": key, "package": "x"})
    process: subprocess.Popen[bytes] = server["process"]
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=15) == 0
    server["log"].seek(0)
    output = server["log"].read()
    assert "Listening at: http://127.0.0.1:" in output
    assert key not in output
    assert key[4:] not in output
