"""The server's log: an access line per request, the request id on every line of a request,
and never a key, in both formats, in-process and from a real ``pkgcat serve``."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from starlette.testclient import TestClient

from pkgcat.app import create_app
from pkgcat.config import Settings
from pkgcat.http.routes import ROUTES
from pkgcat.logs import configure_logging
from pkgcat.storage import schema
from pkgcat.storage.engine import engine_for
from tests.conftest import AppFactory
from tests.servers import PKGCAT, environment, poll, seed, serving

DETAILS = "/1.0/package/details.json"

TEXT_RECORD = re.compile(
    r"(?P<timestamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<level>[A-Z]+) +"
    r"(?P<logger>\S+) \[(?P<request_id>\S+)\] (?P<message>.*)"
)


def json_records(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines()]


def text_records(output: str) -> list[dict[str, Any]]:
    """Each text record, its continuation lines (a trace) in ``exc_info``; other lines left out."""
    records: list[dict[str, Any]] = []
    for line in output.splitlines():
        found = TEXT_RECORD.fullmatch(line)
        if found:
            records.append({**found.groupdict(), "exc_info": ""})
        elif records:
            records[-1]["exc_info"] += line + "\n"
    return records


def access_lines(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The access lines by request id."""
    return {r["request_id"]: r for r in records if r["logger"] == "pkgcat.access"}


# In-process, on both databases -------------------------------------------------------------------


def _access_output(capfd: pytest.CaptureFixture[str], last_id: str) -> str:
    """What the app wrote to stderr, once the access line of ``last_id`` is there."""
    output = ""

    def written() -> str | None:
        nonlocal output
        output += capfd.readouterr().err
        return output if f'"request_id":"{last_id}"' in output else None

    return poll(written, f"the access line of {last_id}")


def test_one_access_line_per_request_with_its_application(
    make_api: AppFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    api = make_api(rate_limit="2/minute", log_format="json")
    configure_logging(Settings(log_format="json"))
    key = api.keys["alpha-b"]  # application 2
    ok = api.http.get(
        DETAILS,
        params={"package": "com.alpha.paid", "secret_key": key},
        headers={"X-Request-Id": "trace-1"},
    )
    missing = api.http.get(DETAILS, headers={"Authorization": f"Bearer {key}"})
    limited = api.http.get(DETAILS, headers={"Authorization": f"Bearer {key}"})
    refused = api.http.get(DETAILS, params={"package": "com.alpha.paid", "secret_key": "pkc_x"})
    site = api.http.get("/healthz", headers={"X-Request-Id": "last"})
    output = _access_output(capfd, "last")
    lines = access_lines(json_records(output))
    fields = ("operation", "status", "code", "application_id")
    assert {rid: tuple(line[f] for f in fields) for rid, line in lines.items()} == {
        "trace-1": ("package/details", 200, 0, 2),
        missing.headers["x-request-id"]: ("package/details", 400, 2, 2),
        limited.headers["x-request-id"]: ("package/details", 429, 13, 2),
        refused.headers["x-request-id"]: ("package/details", 401, 5, None),
        site.headers["x-request-id"]: (None, 200, None, None),
    }
    assert ok.headers["x-request-id"] == "trace-1"
    assert all(line["duration_ms"] >= 0 for line in lines.values())
    assert lines["trace-1"]["message"].startswith(
        f"GET {DETAILS} package/details status=200 code=0 duration_ms="
    )
    assert "secret_key" not in output
    assert key[12:] not in output


def test_the_access_line_names_each_operation_as_usage_counts_it(
    make_api: AppFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    """One name per operation: the table's (``source/packages``), in the log as in usage."""
    api = make_api(log_format="json")
    key = api.keys["alpha-a"]
    ids = {f"operation.{n}": path for n, path in enumerate(ROUTES)}
    for request_id, path in ids.items():  # answered or refused for their parameters: counted
        api.http.get(path, headers={"Authorization": f"Bearer {key}", "X-Request-Id": request_id})
    api.http.get("/healthz", headers={"X-Request-Id": "last"})
    lines = access_lines(json_records(_access_output(capfd, "last")))
    logged = {lines[request_id]["operation"] for request_id in ids}
    usage = api.http.get(
        "/1.0/application/usage.json",
        params={"days": 1, "by": "operation"},
        headers={"Authorization": f"Bearer {key}"},
    ).json()["response"]
    counted = {name for day in usage for name in day.get("operations", {})}
    assert logged == counted - {"-"}
    assert "source/packages" in logged


def test_a_request_id_a_line_would_redact_is_replaced(make_api: AppFactory) -> None:
    """A client's id goes into every line as it came: one that looks like a secret does not."""
    api = make_api()
    for given in ("secret_key=abc", "Authorization:xyz", "pkc_abc"):
        answer = api.http.get("/healthz", headers={"X-Request-Id": given})
        assert answer.headers["x-request-id"] != given
    assert api.http.get("/healthz", headers={"X-Request-Id": "a.b=c"}).headers["x-request-id"] == (
        "a.b=c"
    )


@pytest.mark.parametrize(
    "settings",
    [{"access_log": False}, {"log_level": "warning"}, {"log_level": "error"}],
    ids=["off", "warning", "error"],
)
def test_the_access_log_is_off_when_turned_off_or_above_info(
    database_url: str,
    catalogue: dict[str, str],
    settings: dict[str, Any],
    capfd: pytest.CaptureFixture[str],
) -> None:
    app = create_app(Settings(database_url=database_url, **settings))
    with TestClient(app) as http:  # its stop writes whatever lines it holds
        answer = http.get(
            DETAILS, params={"package": "com.alpha.paid", "secret_key": catalogue["alpha-a"]}
        )
        assert answer.status_code == 200
        assert http.get("/healthz").status_code == 200
    assert "pkgcat.access" not in capfd.readouterr().err


def test_the_access_log_is_on_by_default(
    database_url: str, catalogue: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    app = create_app(Settings(database_url=database_url))
    with TestClient(app) as http:
        assert http.get("/healthz").status_code == 200
    assert "pkgcat.access" in capfd.readouterr().err


# A real server, at debug level ------------------------------------------------------------------


def _application_ids(database_url: str) -> dict[str, int]:
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            rows = db.execute(select(schema.applications.c.name, schema.applications.c.id))
            return {row.name: row.id for row in rows}
    finally:
        engine.dispose()


def _break_package(database_url: str, name: str) -> None:
    """A row the server cannot decode (a broken screenshots list): its details fail inside."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(
                update(schema.packages)
                .where(schema.packages.c.package == name)
                .values(screenshots="{")
            )
    finally:
        engine.dispose()


@pytest.mark.server
@pytest.mark.parametrize(
    ("log_format", "backend"), [("json", "sqlite"), ("json", "postgres"), ("text", "sqlite")]
)
def test_a_debug_log_holds_request_ids_and_never_a_key(
    request: pytest.FixtureRequest, tmp_path: Path, log_format: str, backend: str
) -> None:
    database_url: str = request.getfixturevalue(f"{backend}_url")
    env = environment(database_url, log_level="debug", log_format=log_format)
    apps = seed(env)
    app = apps[0]
    key: str = app["secret_key"]
    application_id = _application_ids(database_url)[app["name"]]
    _break_package(database_url, app["paid_package"])
    free = {"package": app["free_package"]}
    almost = key[:-1] + ("y" if key.endswith("x") else "x")  # another key, one character off
    log_file = tmp_path / "server.log"
    with serving(env, log_file, apps=apps) as served, httpx.Client(base_url=served.base) as http:
        answers = {
            "query": http.get(
                DETAILS, params={**free, "secret_key": key}, headers={"X-Request-Id": "client.7"}
            ),
            "bearer": http.get(DETAILS, params=free, headers={"Authorization": f"Bearer {key}"}),
            "bad key": http.get(DETAILS, params={**free, "secret_key": almost}),
            "bad scheme": http.get(DETAILS, params=free, headers={"Authorization": f"Basic {key}"}),
            "two keys": http.get(
                DETAILS,
                params={**free, "secret_key": key},
                headers={"Authorization": f"Bearer {almost}"},
            ),
            "unknown endpoint": http.get("/1.0/nothing", params={"secret_key": key}),
            "unknown path": http.get("/nothing", params={"secret_key": key}),
            "post": http.post(DETAILS, params={"secret_key": key}),
            "internal": http.get(
                DETAILS, params={"package": app["paid_package"], "secret_key": key}
            ),
            "key as id": http.get("/healthz", headers={"X-Request-Id": key}),
        }

        # Requests served side by side (they wait together for one commit of their counts)
        # each keep their own id.
        def concurrent(n: int) -> int:
            with httpx.Client(base_url=served.base) as own:
                answer = own.get(
                    DETAILS,
                    params={**free, "secret_key": key},
                    headers={"X-Request-Id": f"side-by-side-{n}"},
                )
                return answer.status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(concurrent, range(16))) == {200}
    output = log_file.read_text()

    assert key[12:-1] not in output  # the key, and the almost-key, past the display prefix
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {
        "query": 200,
        "bearer": 200,
        "bad key": 401,
        "bad scheme": 401,
        "two keys": 401,
        "unknown endpoint": 404,
        "unknown path": 404,
        "post": 405,
        "internal": 500,
        "key as id": 200,
    }
    ids = {name: answer.headers["x-request-id"] for name, answer in answers.items()}
    assert ids["query"] == "client.7"
    assert key[12:] not in ids["key as id"]

    if log_format == "json":
        records = json_records(output)  # every line is one JSON object
        for record in records:
            assert {"timestamp", "level", "logger", "message"} <= record.keys(), record
    else:
        records = text_records(output)
    lines = access_lines(records)
    assert set(ids.values()) <= lines.keys()  # one access line per request, under its id
    side_by_side = [
        r["request_id"] for r in records if r.get("request_id", "").startswith("side-by-side")
    ]
    assert sorted(side_by_side) == sorted(f"side-by-side-{n}" for n in range(16))
    assert f"application={application_id}" in lines[ids["query"]]["message"]
    assert f"application={application_id}" in lines[ids["bearer"]]["message"]
    assert "application=-" in lines[ids["bad key"]]["message"]
    assert "status=500 code=15" in lines[ids["internal"]]["message"]
    if log_format == "json":
        assert lines[ids["query"]]["application_id"] == application_id
        assert (lines[ids["unknown path"]]["status"], lines[ids["post"]]["code"]) == (404, 7)
    failed = [r for r in records if r["level"] == "ERROR"]
    assert [r["request_id"] for r in failed] == [ids["internal"]]
    assert "Traceback" in failed[0]["exc_info"]


# The commands -----------------------------------------------------------------------------------


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_command_logs_its_warnings_with_level_and_logger(
    sqlite_url: str, log_format: str
) -> None:
    # Several workers without Redis is worth a warning; a taken port then stops the command
    # before it serves.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [PKGCAT, "serve", "--workers", "2", "--port", str(port)],
            env=environment(sqlite_url, log_format=log_format),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    warning = next(line for line in done.stderr.splitlines() if "PKGCAT_REDIS_URL" in line)
    record = json.loads(warning) if log_format == "json" else TEXT_RECORD.fullmatch(warning)
    assert record is not None
    assert (record["level"], record["logger"]) == ("WARNING", "pkgcat.cli")
