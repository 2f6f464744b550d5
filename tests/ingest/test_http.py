"""Importing over http from a server on 127.0.0.1, as from a repository's public address."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pkgcat.ingest import FetchError
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests.ingest.conftest import (
    LOCAL,
    Importer,
    count,
    package_row,
    stanza,
    write_repo,
)


def test_the_address_is_the_source_url_and_missing_candidates_are_skipped(
    tmp_path: Path, serve: Callable[[Path], str], load: Importer, admin: CatalogueAdmin
) -> None:
    # No Release, only a .bz2 index: InRelease, Release, .zst, .xz and .lzma answer 404 first.
    write_repo(
        tmp_path,
        [stanza("com.example.a", Icon="icons/a.png")],
        compressions=(".bz2",),
        with_release=False,
    )
    address = serve(tmp_path)
    summary = load(address, source="Served", fetch=LOCAL)
    assert summary.source_created
    assert summary.url == address
    assert summary.as_dict()["indexes"][0]["name"] == "Packages.bz2"
    assert package_row(admin, "com.example.a").icon == f"{address}icons/a.png"
    with admin.engine.connect() as db:
        assert db.execute(t.sources.select()).one().url == address


def test_a_single_index_address(
    tmp_path: Path, serve: Callable[[Path], str], load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")], compressions=(".gz",))
    address = serve(tmp_path)
    summary = load(f"{address}Packages.gz", source="Served", fetch=LOCAL)
    assert summary.as_dict()["indexes"] == [
        {"name": "Packages.gz", "bytes": len(stanza("com.example.a")), "verified": "SHA256"}
    ]
    assert count(admin, t.packages) == 1


class _Failing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(500)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def failing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/repo/"
    server.shutdown()
    server.server_close()


def test_a_server_error_is_reported_with_its_status(
    failing_server: str, load: Importer, admin: CatalogueAdmin
) -> None:
    with pytest.raises(FetchError, match=r"InRelease: the server answered HTTP 500"):
        load(failing_server, source="Broken", fetch=LOCAL)
    assert count(admin, t.sources) == 0


def test_an_unreachable_server_is_reported(load: Importer) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        FetchError, match=rf"http://127\.0\.0\.1:{port}/InRelease: cannot be fetched"
    ):
        load(f"http://127.0.0.1:{port}/", source="Nowhere", fetch=LOCAL)


def test_importing_from_a_mirror_keeps_the_sources_public_address(
    tmp_path: Path, serve: Callable[[Path], str], load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a", Icon="icons/a.png")])
    load(tmp_path, source="Public", url="https://public.example/repo/")
    mirror = serve(tmp_path)
    summary = load(mirror, source="Public", refresh=True, fetch=LOCAL)
    assert (summary.source_created, summary.url) == (False, "https://public.example/repo/")
    assert package_row(admin, "com.example.a").icon == "https://public.example/repo/icons/a.png"
    with admin.engine.connect() as db:
        assert db.execute(t.sources.select()).one().url == "https://public.example/repo/"
