"""Shared fixtures: a real SQLite file per test, the app in-process, OpenAPI checks on every response."""

from __future__ import annotations

import functools
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from sqlalchemy import insert, select, text
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pkgcat.access_log import flush as flush_access_logs
from pkgcat.app import create_app
from pkgcat.cli import app as cli
from pkgcat.config import Settings
from pkgcat.http.openapi import openapi_document
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from pkgcat.storage.migrate import upgrade
from tests import factories as f
from tests.backends import POSTGRES_VARIABLE, REDIS_VARIABLE, PostgresDatabases, service_url
from tests.seaweed import S3Server, seaweedfs
from tests.servers import logging_kept

OPENAPI = openapi_document()
REPOSITORY_PASSPHRASE = "a test passphrase of some length"
"""What seals the repository's keys in the tests' settings (tests/repository/conftest.py)."""

pytest_plugins = ("tests.hostile",)  # the hostile servers' fixture, for every test directory


class Clock:
    """A clock the test sets; the service reads it for 'today' and for stored times."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def check_against_openapi(path: str, response: httpx.Response, method: str = "get") -> None:
    """Fail unless the response is one the OpenAPI document declares for this path."""
    operation = OPENAPI["paths"][path][method]
    declared = operation["responses"].get(str(response.status_code))
    assert declared is not None, f"{path} answered {response.status_code}, not in the document"
    for header, what in declared.get("headers", {}).items():
        if what.get("required"):
            assert header.lower() in response.headers, f"{header} missing on {path}"
    if "content" not in declared:  # a 304: no body, and none declared
        assert response.content == b""
        return
    # What jsonschema.validate does, with the schema checked and its validator made once a
    # process: checking the schema cost twice the validation, at every response.
    error = jsonschema.exceptions.best_match(
        _validator(path, method, str(response.status_code)).iter_errors(response.json())
    )
    if error is not None:
        raise error
    assert response.headers["content-type"] == "application/json"


@functools.cache
def _validator(path: str, method: str, status: str) -> jsonschema.Draft202012Validator:
    """The validator of one declared answer's JSON body, its schema checked first."""
    declared = OPENAPI["paths"][path][method]["responses"][status]
    schema = {
        **declared["content"]["application/json"]["schema"],
        "components": OPENAPI["components"],
    }
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def checked(response: httpx.Response) -> None:
    """A response hook: an answer to an API path must be one the document declares."""
    response.read()
    path = response.request.url.path
    method = response.request.method.lower()
    if path in OPENAPI["paths"] and method in OPENAPI["paths"][path]:
        check_against_openapi(path, response, method)


@dataclass
class Api:
    """The app in-process, plus the keys of the test catalogue."""

    http: TestClient
    keys: dict[str, str] = field(default_factory=dict)
    pushed: bool = False
    """Whether changes reach the app by notification (PostgreSQL) rather than on read."""

    def get(self, path: str, key: str | None = None, **params: Any) -> httpx.Response:
        """GET an API path with ``key`` in the query (the spec's way); checks the document."""
        query = {k: v for k, v in params.items() if v is not None}
        if key is not None:
            query["secret_key"] = key
        if self.pushed:
            self.settle()
        # Starlette types its client against httpx2; the one installed answers httpx's Response.
        response: httpx.Response = self.http.get(path, params=query)  # checked by the hook
        return response

    def settle(self, timeout: float = 5.0) -> None:
        """Wait until the app has heard of every change committed so far (``/readyz`` says).

        Tests change the catalogue and read it back at once; a notification
        takes a moment to arrive, and a test must not race it.
        """
        deadline = time.monotonic() + timeout
        while True:
            ready = self.http.get("/readyz").json()
            if ready["caches"] == "current":
                return
            assert time.monotonic() < deadline, f"changes not seen within {timeout} s: {ready}"
            time.sleep(0.005)  # polling for a notification, not timing anything


BACKENDS = ("sqlite", "postgres")


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test's access lines are written within its own captured output.

    The access log writes from a thread, in batches: left to it, the lines of a test's last
    requests could be printed between tests, while pytest is not capturing. ``trylast``
    makes this the innermost wrapper, so the flush runs while the call is still captured.
    """
    try:
        return (yield)
    finally:
        flush_access_logs()


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Iterator[None]:
    """Test modules are imported with their asserts rewritten, cached as bytecode of their own.

    pytest writes that cache only where bytecode may be written: under
    ``PYTHONDONTWRITEBYTECODE`` each process (each xdist worker, each nested run) rewrote
    every test module again, some 5 s of CPU. ``make bytecode`` writes the plain bytecode of
    the same files; the rewritten one is written here, while the modules are collected.
    """
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = saved


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The lanes hold: a test that asserts on wall-clock time (``alone``) is ``slow`` too."""
    unmarked = [
        i.nodeid
        for i in items
        if i.get_closest_marker("alone") and not i.get_closest_marker("slow")
    ]
    if unmarked:
        raise pytest.UsageError(f"marked alone but not slow: {', '.join(unmarked)}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per reason for skipping, with how many tests it skipped, not one per test."""
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        if isinstance(report.longrepr, tuple):
            reasons[str(report.longrepr[2]).removeprefix("Skipped: ")] += 1
    for reason, count in reasons.items():
        terminalreporter.write_line(f"skipped {count} test(s): {reason}", yellow=True)


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[PostgresDatabases]:
    """The session's migrated PostgreSQL template (skips, or fails in CI, without one)."""
    databases = PostgresDatabases(service_url(POSTGRES_VARIABLE, "PostgreSQL"))
    yield databases
    databases.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3 server (SeaweedFS) on 127.0.0.1 for the session; tests keep to their own prefix."""
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once a test process, that each test's own file is copied from.

    Migrating takes some 0.15 s, a copy a millisecond; the migrations themselves are
    tested from an empty database in tests/unit/test_migrations.py."""
    path = tmp_path_factory.mktemp("migrated") / "pkgcat.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, migrated_sqlite: Path) -> str:
    """A migrated SQLite file of the test's own."""
    path = tmp_path / "pkgcat.db"
    shutil.copyfile(migrated_sqlite, path)
    return f"sqlite:///{path}"


@pytest.fixture
def postgres_url(postgres_databases: PostgresDatabases) -> Iterator[str]:
    """A migrated PostgreSQL database of the test's own, emptied for the next (tests/backends.py)."""
    with postgres_databases.database() as url:
        yield url


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest) -> str:
    """A migrated database of the test's own, once on each backend."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
def redis_url() -> str:
    """The test Redis (skips, or fails in CI, without one)."""
    return service_url(REDIS_VARIABLE, "Redis")


def stored_count(database_url: str, application_id: int) -> int:
    """The application's counted requests as another process reads them from the database."""
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            total = db.execute(
                text("SELECT coalesce(sum(count), 0) FROM usage_days WHERE application_id = :a"),
                {"a": application_id},
            ).scalar_one()
    finally:
        engine.dispose()
    return int(total)


@pytest.fixture
def admin(database_url: str) -> Iterator[CatalogueAdmin]:
    handle = CatalogueAdmin(database_url)
    yield handle
    handle.close()


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2024, 3, 31, 12, 0, tzinfo=UTC))


@pytest.fixture
def catalogue(admin: CatalogueAdmin, clock: Clock) -> dict[str, str]:
    """Two sources; apps in both shapes and in Europe/Paris; paid, free and offline packages.

    Returns the secret key of each application, by name.
    """
    issued = admin.load(
        sources=[f.source(1, "Alpha"), f.source(2, "Beta")],
        applications=[
            f.application(1, 1, "alpha-a"),
            f.application(2, 1, "alpha-b", shape="B"),
            f.application(3, 2, "beta-a"),
            f.application(4, 2, "beta-paris", timezone="Europe/Paris"),
        ],
        packages=[
            f.package(1, 1, "com.alpha.paid"),
            f.package(2, 1, "com.alpha.free", price="0.00"),
            f.package(3, 1, "com.alpha.offline", online=False),
            f.package(4, 1, "com.alpha.other", price="4.99"),
            f.package(5, 2, "com.beta.paid", price="2.50", currency="EUR"),
        ],
        purchases=[
            f.purchase(1, 1, clock.now - timedelta(days=3), txn_id="P-OLD"),
            f.purchase(1, 1, clock.now - timedelta(days=1), txn_id="P-NEW"),
            f.purchase(1, None, clock.now - timedelta(days=2), txn_id="S-MID", total="9.00"),
            f.purchase(1, 4, clock.now - timedelta(days=5), txn_id="O-OTHER"),
            f.purchase(2, 5, clock.now - timedelta(days=1), txn_id="B-1", currency="EUR"),
        ],
    )
    names = {1: "alpha-a", 2: "alpha-b", 3: "beta-a", 4: "beta-paris"}
    return {names[app_id]: key.secret_key for app_id, key in issued.items()}


AppFactory = Callable[..., Api]


@pytest.fixture
def make_api(database_url: str, clock: Clock, catalogue: dict[str, str]) -> Iterator[AppFactory]:
    """Build the app with settings overrides; each built client is closed after the test."""
    clients: list[TestClient] = []

    def build(**settings: Any) -> Api:
        app = create_app(Settings(database_url=database_url, **settings), clock=clock)
        client = TestClient(app, raise_server_exceptions=False)
        # Every answer to an API path, whichever way a test sends it, must match the document.
        client.event_hooks = {"response": [checked]}
        client.__enter__()
        clients.append(client)
        return Api(http=client, keys=catalogue, pushed=database_url.startswith("postgres"))

    yield build
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def api(make_api: AppFactory) -> Api:
    return make_api()


@pytest.fixture(autouse=True)
def _clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tests see only the settings they give, never the developer's PKGCAT_* variables.

    Nor the developer's ``pkgcat client`` config file: the user's configuration folder
    is an empty one of the test's own.
    """
    import os

    for name in list(os.environ):
        if name.startswith("PKGCAT_") and not name.startswith("PKGCAT_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(autouse=True)
def _logging_left_as_found() -> Iterator[None]:
    """A command run in-process sets up the process's logging: undo it after each test."""
    with logging_kept():
        yield


@pytest.fixture(scope="session")
def made_signing_key(
    tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path
) -> dict[str, Any]:
    """One signing key made by `pkgcat repo key create` for the process, sealed with
    :data:`REPOSITORY_PASSPHRASE`: its stored row.

    Making a key costs a test some 60 ms of CPU (sealing it is a deliberately slow password
    encryption); the tests that only need the repository signed share this one, each in its
    own database (:func:`signing_key`). tests/repository/test_keys.py makes its own.
    """
    path = tmp_path_factory.mktemp("signing-key") / "pkgcat.db"
    shutil.copyfile(migrated_sqlite, path)
    env = {
        "PKGCAT_DATABASE_URL": f"sqlite:///{path}",
        "PKGCAT_REPOSITORY_PASSPHRASE": REPOSITORY_PASSPHRASE,
    }
    made = CliRunner().invoke(cli, ["repo", "key", "create"], env=env, catch_exceptions=False)
    assert made.exit_code == 0, made.output
    engine = engine_for(env["PKGCAT_DATABASE_URL"])
    try:
        with engine.connect() as db:
            (row,) = db.execute(select(t.repository_keys)).mappings().all()
    finally:
        engine.dispose()
    return dict(row)


@pytest.fixture
def signing_key(made_signing_key: dict[str, Any]) -> Callable[[str], None]:
    """``signing_key(database_url)``: the shared key stored there, as `repo key create` stores it."""

    def store(database_url: str) -> None:
        engine = engine_for(database_url)
        try:
            with engine.begin() as db:
                db.execute(insert(t.repository_keys).values(**made_signing_key))
        finally:
            engine.dispose()

    return store


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, migrated_sqlite: Path) -> Any:
    """The ``pkgcat`` command in-process on a new, empty catalogue; ``run.url`` names its file."""
    shutil.copyfile(migrated_sqlite, tmp_path / "cli.db")  # as migrating it would leave it
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("PKGCAT_DATABASE_URL", url)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(cli, list(args), catch_exceptions=False)

    invoke.url = url  # type: ignore[attr-defined]  # tests that open the app need the file
    return invoke
