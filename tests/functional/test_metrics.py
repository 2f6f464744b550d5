"""``/metrics``: off by default, guarded by a token when one is set, and true to what was served.

The counts are checked against a real ``pkgcat serve`` (prometheus_client's
multiprocess mode, as operators run it), on SQLite with the in-process limiter
and on PostgreSQL with Redis; with two workers, every scrape adds up both.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pkgcat.http.openapi import served
from tests.conftest import AppFactory
from tests.servers import (
    DETAILS,
    Served,
    children,
    environment,
    kill_marked,
    poll,
    running,
    seed,
    serving,
)

USAGE = "/1.0/application/usage.json"
TOKEN = "scrape-" + "t" * 24


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape: (name, labels) to value."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(
    scrape: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    """One sample's value; 0 when the scrape does not have it (no such event yet)."""
    return scrape.get((name, frozenset(labels.items())), 0.0)


def scrape(
    base: str, token: str | None = None
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """GET /metrics over a new connection (any worker may answer) and parse it."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{base}/metrics", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


# Off, and guarded --------------------------------------------------------------------------------


def test_metrics_are_off_by_default_and_the_path_is_then_unknown(make_api: AppFactory) -> None:
    api = make_api()
    response = api.http.get("/metrics")
    assert response.status_code == 404
    assert response.json()["code"] == 1


@pytest.mark.parametrize("metrics", ["off", "on"])
def test_metrics_off_do_not_even_load_the_library(sqlite_url: str, metrics: str) -> None:
    build = (
        "import sys; from pkgcat.app import create_app; from pkgcat.config import Settings; "
        f"create_app(Settings(database_url={sqlite_url!r}, metrics={metrics!r})); "
        "print('prometheus_client' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", build], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == str(metrics == "on")


def test_a_token_guards_the_metrics(make_api: AppFactory) -> None:
    api = make_api(metrics=True, metrics_token=TOKEN)
    assert api.get(DETAILS, api.keys["alpha-a"], package="com.alpha.paid").status_code == 200
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token-of-some-length"},
        {"Authorization": TOKEN},
    ):
        refused = api.http.get("/metrics", headers=headers)
        assert refused.status_code == 401
        assert refused.json()["code"] == 5
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert TOKEN not in refused.text
    allowed = api.http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200
    counted = samples(allowed.text)
    assert (
        value(counted, "pkgcat_requests_total", operation="package/details", status="200", code="0")
        == 1
    )


def test_without_a_token_the_metrics_are_open(make_api: AppFactory) -> None:
    api = make_api(metrics=True)
    assert api.http.get("/metrics").status_code == 200


def test_every_answer_is_counted_under_its_own_status(make_api: AppFactory) -> None:
    """Code 0 comes as 200 and as 304: each status keeps its own count, in either order."""
    api = make_api(metrics=True)
    key = api.keys["alpha-a"]
    tag = api.get(DETAILS, key, package="com.alpha.paid").headers["etag"]
    unchanged = api.http.get(
        DETAILS,
        params={"package": "com.alpha.paid", "secret_key": key},
        headers={"If-None-Match": tag},
    )
    assert unchanged.status_code == 304
    for _ in range(5):
        assert api.get(DETAILS, key, package="com.alpha.paid").status_code == 200
    counted = samples(api.http.get("/metrics").text)
    requests = "pkgcat_requests_total"
    details = "package/details"
    assert value(counted, requests, operation=details, status="200", code="0") == 6
    assert value(counted, requests, operation=details, status="304", code="0") == 1


def test_the_server_error_series_exist_before_the_first_error(make_api: AppFactory) -> None:
    """An alert on the rate of 5xx answers needs their series at 0 before the first one."""
    api = make_api(metrics=True)
    counted = samples(api.http.get("/metrics").text)
    operations = {operation.name for operation in served()}
    labelled = {
        dict(labels)["operation"] for name, labels in counted if name == "pkgcat_requests_total"
    }
    assert labelled == operations  # the table's names, as usage by=operation gives them
    for operation in operations:
        for status in ("500", "503"):
            series = (
                "pkgcat_requests_total",
                frozenset({"operation": operation, "status": status, "code": "15"}.items()),
            )
            assert counted.get(series) == 0, (operation, status)
        latency = (
            "pkgcat_request_duration_seconds_count",
            frozenset({"operation": operation}.items()),
        )
        assert counted.get(latency) == 0, operation


# What a real server counts -----------------------------------------------------------------------


@pytest.fixture
def served_env(request: pytest.FixtureRequest, database_url: str) -> Iterator[dict[str, str]]:
    """A server's environment with metrics on and a limit of 4 a minute.

    On PostgreSQL the limit is kept in Redis, in a namespace of the test's own.
    """
    settings = {"metrics": "on", "rate_limit": "4/minute"}
    if database_url.startswith("postgresql"):
        settings["redis_url"] = request.getfixturevalue("redis_url")
        settings["rate_limit_namespace"] = f"test-{secrets.token_hex(6)}"
    yield environment(database_url, **settings)
    kill_marked(database_url)


def settle(served: Served) -> None:
    """Wait until the worker knows the catalogue's generation, so that its caches are on."""

    def known() -> bool | None:
        ready = httpx.get(f"{served.base}/readyz", timeout=10).json()
        return True if ready["caches"] == "current" else None

    poll(known, "the worker's caches on")


def get(served: Served, path: str, key: str | None, **params: str) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{served.base}{path}", params=params, headers=headers, timeout=10).status_code


@pytest.mark.server
def test_the_counts_match_what_was_served(
    served_env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    apps = seed(served_env)
    app = apps[0]
    with serving(served_env, tmp_path / "server.log", apps=apps) as served:
        settle(served)
        key, package = app["secret_key"], app["paid_package"]
        codes = [get(served, DETAILS, key, package=package) for _ in range(3)]
        codes.append(get(served, DETAILS, "pkc_" + "0" * 40, package=package))
        codes.append(get(served, USAGE, key))
        codes.append(get(served, DETAILS, key, package=package))  # the fifth: over the limit
        assert codes == [200, 200, 200, 401, 200, 429]
        counted = scrape(served.base)

    requests = "pkgcat_requests_total"
    assert value(counted, requests, operation="package/details", status="200", code="0") == 3
    assert value(counted, requests, operation="package/details", status="401", code="5") == 1
    assert value(counted, requests, operation="package/details", status="429", code="13") == 1
    assert value(counted, requests, operation="application/usage", status="200", code="0") == 1
    assert value(counted, "pkgcat_rate_limit_rejections_total") == 1
    latency = "pkgcat_request_duration_seconds_count"
    assert value(counted, latency, operation="package/details") == 5
    assert value(counted, latency, operation="application/usage") == 1
    # Rendered once each (details, usage), then details served from the response cache twice.
    assert value(counted, "pkgcat_cache_misses_total", cache="responses") == 2
    assert value(counted, "pkgcat_cache_hits_total", cache="responses") == 2
    # One commit per counted request (each came alone), none waiting now.
    assert value(counted, "pkgcat_usage_flush_seconds_count") == 4
    assert value(counted, "pkgcat_usage_pending_counts") == 0
    if database_url.startswith("postgresql"):
        assert value(counted, "pkgcat_database_pool_max_connections") == 4
        in_use = value(counted, "pkgcat_database_pool_connections", state="in_use")
        idle = value(counted, "pkgcat_database_pool_connections", state="idle")
        assert in_use == 0
        assert 1 <= idle <= 4


@pytest.mark.server
@pytest.mark.skipif(sys.platform != "linux", reason="finds the workers through /proc")
def test_two_workers_add_up_and_their_files_go_with_the_server(
    served_env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    env = {**served_env, "PKGCAT_RATE_LIMIT": "1000/minute"}
    apps = seed(env)
    app = apps[0]
    with serving(env, tmp_path / "server.log", workers=2, apps=apps) as served:
        workers = poll(
            lambda: found if len(found := children(served.process.pid)) == 2 else None,
            "two workers",
        )
        directories = {worker_directory(worker.pid) for worker in workers}
        assert len(directories) == 1
        directory = directories.pop()
        assert directory.is_dir()
        # Each request on a new connection: the kernel spreads them over both workers
        # (64 connections all on one of two: odds of 2**-63).
        for _ in range(64):
            assert get(served, DETAILS, app["secret_key"], package=app["paid_package"]) == 200
        # Whichever worker answers a scrape, it adds up both workers' counts.
        for _ in range(6):
            counted = scrape(served.base)
            assert (
                value(
                    counted,
                    "pkgcat_requests_total",
                    operation="package/details",
                    status="200",
                    code="0",
                )
                == 64
            )
            assert (
                value(counted, "pkgcat_request_duration_seconds_count", operation="package/details")
                == 64
            )
            assert value(counted, "pkgcat_usage_flush_seconds_count") == 64
        if database_url.startswith("postgresql"):
            # Both workers opened their pool, and each samples its own into the sum.
            poll(
                lambda: (
                    True
                    if value(scrape(served.base), "pkgcat_database_pool_max_connections") == 8
                    else None
                ),
                "both workers' pools in the sum",
            )
    assert not any(running(worker) for worker in workers)
    assert not directory.exists()


def worker_directory(pid: int) -> Path:
    """The metrics directory a worker writes to: where its mapped metric files are."""
    mapped = {
        Path(line.split(maxsplit=5)[5])
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
        if line.rstrip().endswith(f"_{pid}.db")
    }
    assert mapped, f"worker {pid} maps no metric file"
    parents = {path.parent for path in mapped}
    assert len(parents) == 1
    return parents.pop()


@pytest.mark.server
@pytest.mark.skipif(sys.platform != "linux", reason="finds the workers through /proc")
def test_a_killed_workers_counts_stay_and_its_gauges_go(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = environment(
        postgres_url,
        metrics="on",
        redis_url=redis_url,
        rate_limit_namespace=f"test-{secrets.token_hex(6)}",
    )
    apps = seed(env)
    app = apps[0]
    try:
        with serving(env, tmp_path / "server.log", workers=2, apps=apps) as served:
            workers = poll(
                lambda: found if len(found := children(served.process.pid)) == 2 else None,
                "two workers",
            )
            for _ in range(64):  # new connections: both workers serve (see above)
                assert get(served, DETAILS, app["secret_key"], package=app["paid_package"]) == 200
            pools = "pkgcat_database_pool_max_connections"
            poll(
                lambda: True if value(scrape(served.base), pools) == 8 else None,
                "both workers' pools in the sum",
            )
            victim = next(iter(workers))
            os.kill(victim.pid, signal.SIGKILL)
            poll(lambda: True if not running(victim) else None, "the worker dies")
            # The survivor's pool alone (the replacement has served nothing, so has none),
            # and every request still counted, the dead worker's included.
            counted = scrape(served.base)
            assert value(counted, pools) == 4
            requests = "pkgcat_requests_total"
            assert (
                value(counted, requests, operation="package/details", status="200", code="0") == 64
            )
    finally:
        kill_marked(postgres_url)


@pytest.mark.server
def test_a_scrape_while_a_worker_starts_leaves_out_its_unwritten_file(
    served_env: dict[str, str], tmp_path: Path
) -> None:
    """A starting worker's metric file exists, empty, for a moment before its header is
    written: a scrape in that moment (after a killed worker, say) answered 500."""
    apps = seed(served_env)
    with serving(served_env, tmp_path / "server.log", workers=1, apps=apps) as served:
        [worker] = poll(
            lambda: found if len(found := children(served.process.pid)) == 1 else None,
            "the worker",
        )
        directory = worker_directory(worker.pid)
        assert get(served, DETAILS, apps[0]["secret_key"], package=apps[0]["paid_package"]) == 200
        (directory / "counter_4194304.db").touch()  # as a new worker's, before its header
        counted = scrape(served.base)
        requests = "pkgcat_requests_total"
        assert value(counted, requests, operation="package/details", status="200", code="0") == 1
