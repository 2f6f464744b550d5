"""The access log of a real ``pkgcat serve``: written in batches off the request path, yet in
order, whole, within its interval, and complete at a stop, in both formats; and never forged
by what a client sends."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pkgcat.access_log import FLUSH_INTERVAL
from tests.functional.test_logs import TEXT_RECORD, text_records
from tests.servers import PKGCAT, children, environment, free_port, kill_marked, poll, seed, serving

pytestmark = pytest.mark.server

DETAILS = "/1.0/package/details.json"
UNLIMITED = "1000000/hour"
ACCESS_MESSAGE = (
    r"(?P<method>\S+) (?P<path>\S+) (?P<operation>\S+) status=(?P<status>\d+) "
    r"code=(?P<code>\d+|-) duration_ms=(?P<duration>\d+\.\d{3}) application=(?P<application>\d+|-)"
)


def records(output: str, log_format: str) -> list[dict[str, Any]]:
    """Every record of a server's output (each JSON line must parse; a text trace is kept aside)."""
    if log_format == "json":
        return [json.loads(line) for line in output.splitlines()]
    return text_records(output)


def access_ids(output: str, log_format: str) -> list[str]:
    """The request ids of the access lines, in the order of the output."""
    return [r["request_id"] for r in records(output, log_format) if r["logger"] == "pkgcat.access"]


@pytest.fixture
def sqlite_env(sqlite_url: str) -> Iterator[dict[str, str]]:
    yield environment(sqlite_url, rate_limit=UNLIMITED)
    kill_marked(sqlite_url)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_lines_reach_the_file_in_order_within_the_interval_while_the_server_runs(
    sqlite_env: dict[str, str], tmp_path: Path, log_format: str
) -> None:
    env = sqlite_env | {"PKGCAT_LOG_FORMAT": log_format}
    app = seed(env)[0]
    log = tmp_path / "serve.log"
    ids = [f"in-order.{n}" for n in range(60)]
    with serving(env, log) as served, httpx.Client(base_url=served.base) as http:
        for request_id in ids:
            answer = http.get(
                DETAILS,
                params={"package": app["paid_package"]},
                headers={
                    "Authorization": f"Bearer {app['secret_key']}",
                    "X-Request-Id": request_id,
                },
            )
            assert answer.status_code == 200
        # Nothing else happens on the server: the lines come by themselves, within a few
        # intervals (the bound is for a loaded machine; the writer's period is 0.1 s).
        written = poll(
            lambda: (
                found if ids[-1] in (found := access_ids(log.read_text(), log_format)) else None
            ),
            "the last access line",
            within=max(5.0, 50 * FLUSH_INTERVAL),
        )
        assert served.process.poll() is None  # written while serving, not at the stop
    assert [i for i in written if i.startswith("in-order.")] == ids
    line = next(r for r in records(log.read_text(), log_format) if r.get("request_id") == ids[0])
    if log_format == "json":
        assert {k: line[k] for k in ("level", "operation", "status", "code")} == {
            "level": "INFO",
            "operation": "package/details",
            "status": 200,
            "code": 0,
        }
        assert set(line) == {
            "level",
            "logger",
            "message",
            "operation",
            "status",
            "code",
            "duration_ms",
            "application_id",
            "request_id",
            "timestamp",
        }
    assert line["message"].startswith(f"GET {DETAILS} package/details status=200 code=0 ")


def _pipe(capacity: int) -> tuple[int, int]:
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, capacity)
    return read, write


def test_a_log_reader_that_stops_reading_holds_up_no_answer(
    sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    """The server's output is a pipe of one page that nobody reads while 1,200 requests
    are answered: far more lines than the pipe holds. Then every line comes, whole."""
    env = sqlite_env
    app = seed(env)[0]
    read, write = _pipe(4096)
    port = free_port()
    server = subprocess.Popen(
        [PKGCAT, "serve", "--port", str(port)], env=env, stdout=write, stderr=write
    )
    os.close(write)
    output = bytearray()

    def drain() -> None:
        with os.fdopen(read, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                output.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    ids = [f"unread.{n}" for n in range(1200)]
    try:
        base = f"http://127.0.0.1:{port}"
        poll(lambda: True if _answers(base) else None, "the server", within=30)
        with httpx.Client(base_url=base, timeout=10) as http:
            for request_id in ids:  # answered while the pipe is full: nothing waits for it
                headers = {
                    "Authorization": f"Bearer {app['secret_key']}",
                    "X-Request-Id": request_id,
                }
                answer = http.get(DETAILS, params={"package": app["paid_package"]}, headers=headers)
                assert answer.status_code == 200
        reader.start()  # the reader catches up: every line comes, in order
        poll(lambda: True if ids[-1].encode() in output else None, "the last line", within=30)
    finally:
        if reader.ident is None:  # failed before: let the server write what it holds, and stop
            reader.start()
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        reader.join(timeout=30)
    text = output.decode()
    lines = [line for line in text.splitlines() if "pkgcat.access" in line]
    assert all(TEXT_RECORD.fullmatch(line) for line in lines)  # whole lines, none mixed
    written = [i for i in access_ids(text, "text") if i.startswith("unread.")]
    assert written == ids


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.parametrize(
    ("log_format", "backend"), [("text", "sqlite"), ("json", "sqlite"), ("json", "postgres")]
)
def test_a_stop_under_load_leaves_no_answer_without_its_line(
    request: pytest.FixtureRequest, tmp_path: Path, log_format: str, backend: str
) -> None:
    """SIGTERM to a two-worker server while 16 clients send requests: each answer a client
    got has exactly one access line, whole, and no line names a request never sent."""
    database_url: str = request.getfixturevalue(f"{backend}_url")
    env = environment(database_url, rate_limit=UNLIMITED, log_format=log_format)
    app = seed(env)[0]
    log = tmp_path / "serve.log"
    answered: list[str] = []
    sent: list[str] = []
    lock = threading.Lock()
    stop_after, bound = 400, 400  # answers before the stop; requests per client at most
    try:
        with serving(env, log, workers=2) as served:
            poll(
                lambda: True if len(children(served.process.pid)) == 2 else None,
                "the server's two workers",
            )
            stopped = threading.Event()

            def client(n: int) -> None:
                headers = {"Authorization": f"Bearer {app['secret_key']}"}
                with httpx.Client(base_url=served.base, headers=headers, timeout=30) as http:
                    for k in range(bound):
                        request_id = f"load.{n}.{k}"
                        with lock:
                            sent.append(request_id)
                        try:
                            answer = http.get(
                                DETAILS,
                                params={"package": app["paid_package"]},
                                headers={"X-Request-Id": request_id},
                            )
                        except httpx.TransportError:
                            if stopped.is_set():
                                return
                            continue
                        assert answer.status_code == 200
                        with lock:
                            answered.append(request_id)
                            if len(answered) == stop_after:
                                served.process.send_signal(signal.SIGTERM)
                                stopped.set()

            threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            assert served.process.wait(timeout=60) == 0
    finally:
        kill_marked(database_url)
    assert len(answered) >= stop_after
    logged = [i for i in access_ids(log.read_text(), log_format) if i.startswith("load.")]
    assert len(logged) == len(set(logged))  # one line each
    assert set(answered) <= set(logged) <= set(sent)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_client_cannot_forge_a_line_nor_write_a_nul(
    sqlite_env: dict[str, str], tmp_path: Path, log_format: str
) -> None:
    env = sqlite_env | {"PKGCAT_LOG_FORMAT": log_format}
    seed(env)
    log = tmp_path / "serve.log"
    forged = (
        "2026-11-26T00:00:00.000Z%20INFO%20%20%20%20pkgcat.access%20%5Bforged-1%5D%20"
        "GET%20/1.0/package/details.json%20package/details%20status=200%20code=0%20"
        "duration_ms=1.000%20application=1"
    )
    hostile = [
        f"/1.0/x%0A{forged}",  # LF: a second line naming another application
        f"/1.0/x%0D{forged}",  # CR: the same, on a terminal
        f"/x%0A{forged}",  # off the API, to the site
        "/1.0/x%00y%1B%5B2Jz%E2%80%A8w%C2%85v",  # NUL, ESC[2J, U+2028, NEL
        "/1.0/x%20status=200%20code=0%5Cx0a",  # a space and a backslash: a field's end, an escape
    ]
    with serving(env, log) as served, httpx.Client(base_url=served.base) as http:
        for n, path in enumerate(hostile):
            # The raw target as written: httpx must not re-encode it.
            answer = http.get(f"{served.base}{path}", headers={"X-Request-Id": f"hostile.{n}"})
            assert answer.status_code == 404
    raw = log.read_bytes()
    assert b"\x00" not in raw
    assert b"\r" not in raw
    ids = [r.get("request_id") for r in records(raw.decode(), log_format)]
    assert "forged-1" not in ids
    output = raw.decode()
    lines = output.splitlines()
    assert len(lines) == len(output.split("\n")) - 1  # no line break but LF anywhere
    if log_format == "text":
        # A record, a line under one (indented), or the banner's first line.
        assert all(
            TEXT_RECORD.fullmatch(line) or line.startswith(("  ", "pkgcat ")) for line in lines
        )
    access = {
        r["request_id"]: r for r in records(output, log_format) if r["logger"] == "pkgcat.access"
    }
    messages = [access[f"hostile.{n}"]["message"] for n in range(len(hostile))]
    assert messages[0].startswith("GET /1.0/x\\x0a2026-11-26T00:00:00.000Z\\x20INFO\\x20")
    assert messages[1].startswith("GET /1.0/x\\x0d2026")
    assert messages[2].startswith("GET /x\\x0a2026")
    assert messages[3].startswith("GET /1.0/x\\x00y\\x1b[2Jz\\u2028w\\x85v - status=404 code=1 ")
    assert messages[4].startswith("GET /1.0/x\\x20status=200\\x20code=0\\x5cx0a - status=404 ")
    for message in messages:
        assert re.fullmatch(ACCESS_MESSAGE, message), message
