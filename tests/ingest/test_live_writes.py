"""An import that waits on the network never holds the write lock meanwhile.

The server commits its counts with a short busy timeout and gives up after a
bounded wait (code 15). This test plays the server's part with its own
``sqlite3`` connection committing to ``usage_days`` while an import waits on a
slow depiction server. A large import beside a real serving server, on both
backends, is in ``tests/functional/test_under_load.py``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pkgcat.ingest import ImportSummary
from pkgcat.storage.admin import CatalogueAdmin
from tests.ingest.conftest import LOCAL, Importer, package_row, stanza, write_repo

BUSY_TIMEOUT_MS = 1000
"""The counting connection's patience: a commit that needs more fails, as the server's would."""


@pytest.fixture
def database_url(sqlite_url: str) -> str:
    """SQLite only: one write lock for the whole database is SQLite's; PostgreSQL locks rows."""
    return sqlite_url


def _counting_connection(admin: CatalogueAdmin) -> sqlite3.Connection:
    """A connection set up like the server's: WAL, no checkpoint of its own, a bounded wait."""
    database = admin.engine.url.database
    assert database is not None
    connection = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return connection


def _application(admin: CatalogueAdmin) -> int:
    """An application of a source of its own, whose usage the counting connection writes."""
    admin.add_source("Counting", "https://counting.example/")
    return admin.create_application("Counting", "storefront").application.id


def _count_once(connection: sqlite3.Connection, application_id: int) -> float:
    """Commit one usage count as the server's group commit does; the seconds it took."""
    started = time.perf_counter()
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute(
            "INSERT INTO usage_days (application_id, day, count) VALUES (?, '2024-03-31', 1) "
            "ON CONFLICT (application_id, day) DO UPDATE SET count = usage_days.count + 1",
            (application_id,),
        )
        connection.execute("COMMIT")
    finally:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
    return time.perf_counter() - started


class _Importing(threading.Thread):
    """Runs one import on a thread of its own, keeping its summary or its error."""

    def __init__(self, load: Importer, location: str, **options: Any) -> None:
        super().__init__(daemon=True)
        self._run = partial(load, location, **options)
        self.summary: ImportSummary | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.summary = self._run()
        except BaseException as error:
            self.error = error


# (a) The network is read before the first write ------------------------------------------------


class _HeldDepictions(SimpleHTTPRequestHandler):
    """Serves a directory, but holds every depiction back until the test lets it go."""

    asked: threading.Event
    release: threading.Event

    def do_GET(self) -> None:
        if self.path.startswith("/sileo/"):
            self.asked.set()
            self.release.wait(timeout=20)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_count_commits_while_the_import_waits_on_depictions(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    depiction = {
        "class": "DepictionScreenshotsView",
        "screenshots": [{"url": "shots/1.png"}],
    }
    (tmp_path / "sileo").mkdir()
    for name in ("a", "b"):
        (tmp_path / "sileo" / f"{name}.json").write_text(json.dumps(depiction))
    write_repo(
        tmp_path,
        [
            stanza("com.example.a", SileoDepiction="./sileo/a.json"),
            stanza("com.example.b", SileoDepiction="./sileo/b.json"),
        ],
    )
    application_id = _application(admin)
    counting = _counting_connection(admin)
    asked, release = threading.Event(), threading.Event()
    handler = type("Handler", (_HeldDepictions,), {"asked": asked, "release": release})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(tmp_path)))
    serving = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    serving.start()
    address = f"http://127.0.0.1:{server.server_address[1]}/"
    importing = _Importing(load, address, source="Served", fetch=LOCAL)
    try:
        importing.start()
        assert asked.wait(timeout=20), "the import never asked for a depiction"
        # The import is now blocked on the network: the count must not wait for it.
        waited = _count_once(counting, application_id)
        assert waited < BUSY_TIMEOUT_MS / 1000
    finally:
        release.set()
        importing.join(timeout=30)
        server.shutdown()
        server.server_close()
        serving.join(timeout=5)
        counting.close()
    assert not importing.is_alive()
    assert importing.error is None, importing.error
    assert importing.summary is not None
    assert importing.summary.as_dict()["records"]["added"] == 2
    assert json.loads(package_row(admin, "com.example.b").screenshots) == [
        f"{address}sileo/shots/1.png"
    ]
