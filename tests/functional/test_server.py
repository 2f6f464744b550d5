"""A real `pkgcat serve` process on 127.0.0.1, driven over HTTP."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import demo_server

pytestmark = pytest.mark.server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with demo_server(tmp_path) as served:
        yield {
            "base": served.base,
            "apps": served.apps,
            "process": served.process,
            "log": served.log,
        }


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
