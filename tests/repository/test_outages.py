"""Downloads and uploads while the database or the object store is down.

A download whose count cannot be written, or whose file the store cannot give, is
answered 503 with ``Retry-After`` before any byte of the file, and the outage is logged
once, in one warning line without a trace, and once more when it ends; an upload while
the object store is down is code 15 as HTTP 503 within the request's deadline, and
leaves nothing stored. The database is cut through a proxy (PostgreSQL) or held by
another process's write lock (SQLite); the object store (SeaweedFS) is reached through a
proxy the test cuts: the shared services are never stopped.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from pkgcat.app import create_app
from pkgcat.config import Settings
from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import Api, Clock
from tests.debs import build_deb
from tests.functional.test_faults import assert_unavailable, counts_locked
from tests.proxy import Proxy, proxied
from tests.repository.conftest import Publisher, scalar
from tests.repository.test_downloads import _download_url
from tests.repository.test_served import PASSPHRASE, _filenames
from tests.seaweed import S3Server
from tests.servers import downloads_counted, poll

UPLOAD = "/1.0/package/upload.json"
DEB = "application/vnd.debian.binary-package"
SENT = "com.alpha.sent"
TRIES = 5
"""Downloads (or uploads) asked during each outage."""


def _publish(
    pkgcat: Publisher, cli_env: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> bytes:
    assert pkgcat("repo", "key", "create").exit_code == 0
    deb = build_deb(tmp_path, "com.alpha.free", "1.0", payload=secrets.token_hex(40_000))
    assert pkgcat("publish", str(deb), "--source", "Alpha").exit_code == 0
    paid = build_deb(tmp_path, "com.alpha.paid", "2.0")
    assert pkgcat("publish", str(paid), "--source", "Alpha").exit_code == 0
    # The commands configure logging as they do for an operator, which replaces the root
    # logger's handlers: the capture's is put back.
    logging.getLogger().addHandler(caplog.handler)
    return deb.read_bytes()


@contextmanager
def _served(settings: dict[str, Any], clock: Clock, keys: dict[str, str]) -> Iterator[Api]:
    app = create_app(Settings(repository_passphrase=PASSPHRASE, **settings), clock=clock)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Api(http=client, keys=keys, pushed=True)


def _ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("pkgcat")]


def _no_trace(records: list[logging.LogRecord]) -> None:
    assert all(r.exc_info is None and "Traceback" not in r.getMessage() for r in records)


@contextmanager
def _database_down(database_url: str, proxy: Proxy | None) -> Iterator[None]:
    """PostgreSQL cut (connections refused), or SQLite's write lock held by another process."""
    if proxy is None:
        with counts_locked(database_url):
            yield
        return
    proxy.cut()
    try:
        yield
    finally:
        proxy.restore()


def test_a_download_whose_count_cannot_be_written_is_503_before_any_byte_and_logged_once(
    database_url: str,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
    clock: Clock,
    catalogue: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = _publish(pkgcat, cli_env, tmp_path, caplog)
    with proxied(database_url) if database_url.startswith("postgres") else _none() as found:
        proxy, through = found if found is not None else (None, database_url)
        settings = {
            "database_url": through,
            "blob_dir": cli_env["PKGCAT_BLOB_DIR"],
            "request_deadline": 1.0,  # SQLite's lock is waited for this long, then 503
        }
        with _served(settings, clock, catalogue) as api:
            path = "/repo/" + _filenames(api)["com.alpha.free"]
            assert api.http.get(path).content == data
            url = _download_url(api, database_url)
            caplog.clear()
            with (
                _database_down(database_url, proxy),
                caplog.at_level(logging.INFO, logger="pkgcat"),
            ):
                refused = [api.http.get(path) for _ in range(TRIES)]
                if proxy is not None:  # a download URL is claimed in the database first
                    refused.append(api.http.get(url))
                # A range short of the end needs no count: served all the same.
                part = api.http.get(path, headers={"Range": "bytes=0-99"})
                down = list(_ours(caplog))
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="pkgcat"):
                again = api.http.get(path)
            # The indexes' own check (once a second, on a request) may rebuild them now: a
            # line of its own, not the outage's.
            back = [r for r in _ours(caplog) if not r.getMessage().startswith("repository indexes")]
    for answer in refused:
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.headers["content-type"].startswith("text/plain")
        assert answer.text == "this download cannot be counted now; retry shortly\n"
    assert (part.status_code, part.content) == (206, data[:100])
    # One warning for the whole outage, none a download, no trace.
    warned = [r for r in down if r.levelno >= logging.WARNING and r.name == "pkgcat.repository"]
    assert [r.getMessage().split(":")[0] for r in warned] == ["downloads cannot be counted"]
    _no_trace(down)
    assert (again.status_code, again.content) == (200, data)
    assert [r.getMessage().split(",")[0] for r in back] == ["downloads are counted again"]
    assert f"{len(refused)} answered 503 meanwhile" in back[0].getMessage()
    assert downloads_counted(database_url, "com.alpha.free") == 2  # before and after: exact


def test_the_indexes_are_served_as_they_were_while_the_database_is_down_and_logged_once(
    database_url: str,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
    clock: Clock,
    catalogue: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each worker looks for a newer publication, and the publisher builds, every half a
    second: an outage is one warning of the indexes (no trace), and one line at its end."""
    _publish(pkgcat, cli_env, tmp_path, caplog)
    with proxied(database_url) if database_url.startswith("postgres") else _none() as found:
        proxy, through = found if found is not None else (None, database_url)
        settings = {
            "database_url": through,
            "blob_dir": cli_env["PKGCAT_BLOB_DIR"],
            "request_deadline": 1.0,
        }
        with _served(settings, clock, catalogue) as api:
            before = api.http.get("/repo/InRelease")
            assert before.status_code == 200
            answers = []

            def indexes_told() -> list[logging.LogRecord] | None:
                answers.append(api.http.get("/repo/InRelease"))
                return [r for r in _ours(caplog) if "indexes" in r.getMessage()] or None

            caplog.clear()
            with (
                _database_down(database_url, proxy),
                caplog.at_level(logging.INFO, logger="pkgcat"),
            ):
                poll(indexes_told, "the indexes' outage told")
                answers += [api.http.get("/repo/InRelease") for _ in range(TRIES)]
                down = list(_ours(caplog))
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="pkgcat"):

                def back_told() -> list[str] | None:
                    lines = [r.getMessage() for r in _ours(caplog)]
                    return [line for line in lines if "indexes" in line] or None

                back = poll(back_told, "the end of the indexes' outage told")
    # Served as they were the whole time.
    assert {(a.status_code, a.content) for a in answers} == {(200, before.content)}
    _no_trace(down)
    warned = [r for r in down if r.levelno >= logging.WARNING]
    assert [r.getMessage().split(":")[0] for r in warned] == [
        "repository indexes cannot be built or read"
    ]
    assert [line.split(",")[0] for line in back] == ["repository indexes are built and read again"]


@contextmanager
def _none() -> Iterator[None]:
    yield None


@contextmanager
def _s3_through_proxy(server: S3Server) -> Iterator[tuple[Proxy, str]]:
    """A proxy in front of SeaweedFS's S3 port, and the endpoint through it."""
    target = urlsplit(server.endpoint)
    proxy = Proxy(target.hostname or "127.0.0.1", target.port or 80)
    proxy.start()
    try:
        yield proxy, f"http://127.0.0.1:{proxy.port}"
    finally:
        proxy.stop()


def test_an_object_store_down_is_503_with_retry_after_within_the_deadline_and_stores_nothing(
    database_url: str,
    s3_server: S3Server,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    admin: CatalogueAdmin,
    tmp_path: Path,
    clock: Clock,
    catalogue: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = s3_server.settings(f"test-{secrets.token_hex(8)}")
    cli_env.pop("PKGCAT_BLOB_DIR", None)
    cli_env.update({f"PKGCAT_{k.upper()}": v for k, v in store.items()})
    data = _publish(pkgcat, cli_env, tmp_path, caplog)
    key = admin.create_key("Alpha", "alpha-a", ("publish",)).secret_key
    sent = build_deb(tmp_path, SENT, "1.0").read_bytes()
    upload = {"authorization": f"Bearer {key}", "content-type": DEB, "idempotency-key": "k-1"}
    deadline = 2.0
    with _s3_through_proxy(s3_server) as (proxy, endpoint):
        settings = {
            "database_url": database_url,
            **store,
            "s3_endpoint": endpoint,
            "request_deadline": deadline,
        }
        with _served(settings, clock, catalogue) as api:
            path = "/repo/" + _filenames(api)["com.alpha.free"]
            assert api.http.get(path).content == data
            assert api.http.get("/readyz").status_code == 200
            caplog.clear()
            proxy.cut()
            with caplog.at_level(logging.INFO, logger="pkgcat"):
                took, downloads = [], []
                for _ in range(TRIES):
                    started = time.monotonic()
                    downloads.append(api.http.get(path))
                    took.append(time.monotonic() - started)
                started = time.monotonic()
                uploaded = api.http.post(UPLOAD, content=sent, headers=upload)
                took.append(time.monotonic() - started)
                assert_unavailable(uploaded, caplog, "object store")  # one line, no trace
                ready = api.http.get("/readyz")
                down = list(_ours(caplog))
            stored = [
                scalar(database_url, f"SELECT count(*) FROM {table} WHERE package = :p", p=SENT)  # noqa: S608
                for table in ("packages", "package_records", "deb_files")
            ]
            proxy.restore()
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="pkgcat"):
                again = api.http.get(path)
                back = list(_ours(caplog))
            retried = api.http.post(UPLOAD, content=sent, headers=upload)
            ready_again = api.http.get("/readyz")
    for answer in downloads:
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.text == "this download cannot be read from the store now; retry shortly\n"
    # A loose bound, no timing: obstore's own retries held each for 2 to 5 s before.
    assert max(took) < deadline
    assert ready.status_code == 503
    assert ready.json()["reason"] == "object store: BlobsUnavailable"
    warned = [r for r in down if r.levelno >= logging.WARNING]
    store_lines = [r for r in warned if r.name == "pkgcat.repository"]
    assert len(store_lines) == 1
    assert store_lines[0].getMessage().startswith("downloads cannot be read from the store: s3")
    _no_trace(down)
    # Nothing of the upload was kept (no package, record or file row), and its key was given
    # back: the same key publishes once the store is back.
    assert stored == [0, 0, 0]
    assert (again.status_code, again.content) == (200, data)
    assert [r.getMessage().split(",")[0] for r in back] == ["downloads are read again"]
    assert retried.status_code == 200, retried.text
    assert retried.json()["response"]["package"] == SENT
    assert ready_again.status_code == 200
    assert downloads_counted(database_url, "com.alpha.free") == 2


CUTS = 20
"""Download counts whose acknowledgement the test loses, each followed by an outage."""


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_download_count_whose_acknowledgement_was_lost_is_taken_back(
    database_url: str,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
    clock: Clock,
    catalogue: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A download's count, committed before its last byte, reaches PostgreSQL and its reply
    never comes back (the proxy swallows it and cuts every connection until the test
    restores it), twenty times. Each of those downloads ends one byte short, so its client
    asks again; its count is taken back once the database answers: what is counted is
    what went out whole, exactly (before: one download too many a cut)."""
    data = _publish(pkgcat, cli_env, tmp_path, caplog)
    whole = 0
    with proxied(database_url) as (proxy, through):
        settings = {"database_url": through, "blob_dir": cli_env["PKGCAT_BLOB_DIR"]}
        with _served(settings, clock, catalogue) as api:
            path = "/repo/" + _filenames(api)["com.alpha.free"]
            assert api.http.get(path).content == data
            whole += 1
            for _ in range(CUTS):
                fired = proxy.lose(b"com.alpha.free", "reply", down=True)
                cut = api.http.get(path)
                assert fired.is_set()
                assert cut.content == data[:-1]
                proxy.restore()
                # The first settles the lost batch (its take-back follows it), the second
                # goes after that take-back: nothing else is under way for the next trap.
                again = [api.http.get(path).content for _ in range(2)]
                assert again == [data, data]
                whole += len(again)
    assert downloads_counted(database_url, "com.alpha.free") == whole
