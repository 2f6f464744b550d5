"""Fixtures of the ingestion tests: the real repositories, generated ones, a local http server."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import threading
from collections.abc import Callable, Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
import zstandard
from sqlalchemy import select

from pkgcat.ingest import ImportOptions, ImportSummary, import_repository
from pkgcat.net.addresses import Allowance
from pkgcat.net.fetcher import Policy
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests.backends import unavailable

PROJECT = Path(__file__).resolve().parents[2]
REPOS = PROJECT.parent / "shared" / "fixtures" / "repos"

NEPETA = "Chr0nicT__Nepeta-Mirror"
POOMSMART = "PoomSmart__PoomSmart.github.io"
CHARIZ = "cnstr__apt-parser-ts__chariz"
JULIOVERNE = "julioverne__julioverne.github.io"
PUBLIC_URL = {
    NEPETA: "https://repo.nepeta.me/",
    POOMSMART: "https://poomsmart.github.io/repo/",
    CHARIZ: "https://repo.chariz.com/",
    JULIOVERNE: "https://julioverne.github.io/",
}


LOCAL = Policy(allow=Allowance.parse("127.0.0.1"))
"""The fetch policy of an import from a test's own server on 127.0.0.1: loopback is refused
unless allowed, and an operator allows it the same way (PKGCAT_FETCH_ALLOW=127.0.0.1)."""


def skip_without_repositories() -> None:
    """Skip the calling test module, in one line, when shared/ is not beside the project."""
    if not REPOS.is_dir():
        unavailable(f"real repositories not found at {REPOS} (shared/ beside the project)")


@pytest.fixture(scope="session")
def repos() -> Path:
    """The shared real repositories, read in place, never copied."""
    skip_without_repositories()
    return REPOS


Importer = Callable[..., ImportSummary]


@pytest.fixture
def load(admin: CatalogueAdmin) -> Importer:
    """Import LOCATION into the test database: ``load(location, source=..., **options)``."""

    def run(location: Path | str, source: str = "Repo", **options: Any) -> ImportSummary:
        options.setdefault("jobs", 1)
        return import_repository(
            admin.engine, str(location), ImportOptions(source=source, **options)
        )

    return run


def package_row(admin: CatalogueAdmin, package: str) -> Any:
    with admin.engine.connect() as db:
        return db.execute(select(t.packages).where(t.packages.c.package == package)).one()


def records(admin: CatalogueAdmin, package: str | None = None) -> list[Any]:
    query = select(t.package_records).order_by(t.package_records.c.id)
    if package is not None:
        query = query.where(t.package_records.c.package == package)
    with admin.engine.connect() as db:
        return list(db.execute(query))


def count(admin: CatalogueAdmin, table: Any) -> int:
    with admin.engine.connect() as db:
        return len(db.execute(select(table.c.id)).all())


# Generated repositories ------------------------------------------------------------------------


def stanza(
    package: str, version: str = "1.0", architecture: str = "iphoneos-arm", **fields: str | None
) -> str:
    """One Packages stanza with the required fields; ``fields`` use ``_`` for ``-``, None drops one."""
    md5 = hashlib.md5(f"{package}{version}{architecture}".encode()).hexdigest()  # noqa: S324 - a field of the format
    lines: dict[str, str | None] = {
        "Package": package,
        "Version": version,
        "Architecture": architecture,
        "Filename": f"debs/{package}_{version}_{architecture}.deb",
        "Size": "1234",
        "MD5sum": md5,
    }
    lines.update({name.replace("_", "-"): value for name, value in fields.items()})
    return "".join(f"{name}: {value}\n" for name, value in lines.items() if value is not None)


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".lzma": partial(lzma.compress, format=lzma.FORMAT_ALONE),
    ".zst": zstandard.ZstdCompressor().compress,
    ".lz4": lz4.frame.compress,
}


def release(files: dict[str, bytes], **fields: str) -> bytes:
    """A Release listing ``files`` (name to bytes) with MD5Sum and SHA256 sections."""
    head = {"Origin": "Test Origin", "Label": "Test Label", "Suite": "stable", **fields}
    text = "".join(f"{k}: {v}\n" for k, v in head.items())
    for section, algorithm in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        text += f"{section}:\n"
        for name, data in files.items():
            text += f" {hashlib.new(algorithm, data).hexdigest()} {len(data)} {name}\n"
    return text.encode()


def write_repo(
    root: Path,
    stanzas: list[str] | bytes,
    *,
    compressions: tuple[str, ...] = ("",),
    with_release: bool = True,
) -> Path:
    """A flat repository: the index in each compression, and a Release listing them."""
    root.mkdir(parents=True, exist_ok=True)
    data = stanzas if isinstance(stanzas, bytes) else "\n".join(stanzas).encode()
    files = {f"Packages{ext}": COMPRESSORS[ext](data) for ext in compressions}
    for name, content in files.items():
        (root / name).write_bytes(content)
    if with_release:
        (root / "Release").write_bytes(release(files))
    return root


# A local http server ---------------------------------------------------------------------------


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[Path], str]]:
    """Serve a directory over http on 127.0.0.1 (a free port); returns its address."""
    servers: list[ThreadingHTTPServer] = []

    def start(directory: Path) -> str:
        handler = partial(_QuietHandler, directory=str(directory))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def large_index(root: Path, count: int) -> Path:
    """A deterministic Packages index of ``count`` stanzas, as varied as a real one."""
    stanzas = []
    for n in range(count):
        package = f"org.example.package{n // 3 if n % 7 == 0 else n}"
        stanzas.append(
            stanza(
                package,
                f"{1 + n % 5}.{n % 11}-{n % 3}",
                "amd64" if n % 2 else "all",
                Name=f"Package number {n}",
                Section=("utils", "libs", "net", "devel")[n % 4],
                Maintainer=f"Maintainer {n % 97} <m{n % 97}@example.org>",
                Depends=f"libc6 (>= 2.{n % 30}), libexample{n % 13} | libother",
                Description=f"package {n} of a large index\n a longer description of {n}\n .\n more",
            )
        )
    return write_repo(root, stanzas)
