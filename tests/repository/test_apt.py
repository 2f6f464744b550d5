"""Debian's own apt-get against a real `pkgcat serve`: the judge of the served repository.

apt runs in a private root (``-o Dir::...``: its own lists, cache, status file
and sources list, the repository's exported key as ``signed-by``), as root
without its sandbox user, so nothing of the machine's own apt is read or
changed. It runs on SQLite with the directory store, and on PostgreSQL with
the .deb files in SeaweedFS.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pysequoia as pgp
import pytest

from pkgcat.client import Client
from tests.backends import PostgresDatabases, unavailable
from tests.debs import build_deb
from tests.seaweed import S3Server
from tests.servers import PKGCAT, Served, command, downloads_counted, environment, serving

ARCH = "iphoneos-arm64"
PASSPHRASE = "an apt test passphrase, long enough"

pytestmark = [pytest.mark.server, pytest.mark.slow]


def pkgcat(env: dict[str, str], *args: str) -> str:
    """What the repository is made with (in-process: these tests are about apt and the server)."""
    return command(env, *args)


@pytest.fixture(scope="module", params=("sqlite-directory", "postgres-s3"))
def repository(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Served, Path]]:
    """A served repository with a free and a paid package; the server and the exported key.

    One per backend for the module (making the key, publishing and starting the server take
    most of a test's time): each test reads what it did relative to where it began.
    """
    if shutil.which("apt-get") is None:
        unavailable("the apt tests need Debian's apt-get")
    folder = tmp_path_factory.mktemp(f"apt-{request.param}")
    settings: dict[str, str] = {"repository_passphrase": PASSPHRASE}
    with ExitStack() as stack:
        if request.param == "postgres-s3":
            databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
            database_url = stack.enter_context(databases.database())
            server: S3Server = request.getfixturevalue("s3_server")
            settings |= server.settings(folder.name)
            # A free file's download is redirected to its object, which apt follows.
            settings["download_redirect"] = "true"
        else:
            database_url = f"sqlite:///{folder / 'repo.db'}"
            settings["blob_dir"] = str(folder / "blobs")
        env = environment(database_url, **settings)
        if request.param == "postgres-s3":
            pkgcat(env, "repo", "key", "create")
        else:
            assert "signing key" in pkgcat(env, "init")  # init makes the key when it can seal it
        pkgcat(env, "source", "add", "Alpha", "--url", "https://alpha.example/")
        for deb in (
            build_deb(folder, "com.alpha.tool", "1.2-1", ARCH, payload="tool"),
            build_deb(folder, "com.alpha.paid", "1.0", ARCH, Tag="cydia::commercial"),
        ):
            pkgcat(env, "publish", str(deb), "--source", "Alpha")
        key = folder / "pkgcat.asc"
        pkgcat(env, "repo", "key", "export", "--output", str(key))
        with serving(env, folder / "server.log") as served:
            yield served, key


class Apt:
    """apt-get in a root of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for folder in ("etc/sources.list.d", "etc/preferences.d", "etc/trusted.gpg.d",
                       "state/lists/partial", "cache/archives/partial", "downloads"):  # fmt: skip
            (root / folder).mkdir(parents=True, exist_ok=True)
        (root / "status").write_text("")

    def source(self, url: str, key: Path) -> None:
        (self.root / "etc/sources.list").write_text(f"deb [signed-by={key}] {url} ./\n")

    def run(self, *args: str, program: str = "apt-get") -> subprocess.CompletedProcess[str]:
        root = self.root
        options = {
            "Dir": str(root),
            "Dir::State": str(root / "state"),
            "Dir::State::status": str(root / "status"),
            "Dir::Cache": str(root / "cache"),
            "Dir::Etc": str(root / "etc"),
            "Dir::Etc::sourcelist": str(root / "etc/sources.list"),
            "Dir::Etc::sourceparts": str(root / "etc/sources.list.d"),
            "Dir::Etc::trusted": str(root / "etc/trusted.gpg"),
            "Dir::Etc::trustedparts": str(root / "etc/trusted.gpg.d"),
            "Dir::Etc::preferencesparts": str(root / "etc/preferences.d"),
            "Dir::Log": str(root),
            "APT::Architecture": ARCH,
            "APT::Architectures": ARCH,
            "APT::Sandbox::User": "root",
            "Debug::NoLocking": "1",
            "Acquire::Languages": "none",
            "Acquire::Retries": "0",
            "Acquire::http::Proxy": "DIRECT",
        }
        command = [program, "-q", *(f"-o{k}={v}" for k, v in options.items()), *args]
        return subprocess.run(
            command, capture_output=True, text=True, cwd=root / "downloads", timeout=120
        )


def log_size(served: Served) -> int:
    """Where the server's log ends now: a test reads its own lines from there."""
    served.log.flush()
    return Path(served.log.name).stat().st_size


def written_log(served: Served, last: str, since: int = 0) -> str:
    """The server's output from ``since`` once it holds ``last``: the access log reaches its
    file from a writer thread, in batches, within 0.1 s of each request."""
    deadline = time.monotonic() + 10
    while True:
        served.log.flush()
        with Path(served.log.name).open("rb") as file:
            file.seek(since)
            log = file.read().decode("utf-8", "replace")
        if last in log:
            return log
        assert time.monotonic() < deadline, f"no {last!r} in the log within 10 s:\n{log}"
        time.sleep(0.05)  # polling for the writer thread, not timing it


def test_apt_verifies_the_signature_and_every_hash_and_downloads_a_free_package(
    repository: tuple[Served, Path], tmp_path: Path
) -> None:
    served, key = repository
    began = log_size(served)
    counted = downloads_counted(served.env["PKGCAT_DATABASE_URL"], "com.alpha.tool")
    apt = Apt(tmp_path / "apt")
    apt.source(f"{served.base}/repo/", key)
    update = apt.run("update")
    assert update.returncode == 0, update.stdout + update.stderr
    assert "W:" not in update.stderr, update.stderr
    assert "E:" not in update.stderr, update.stderr
    download = apt.run("download", "com.alpha.tool")
    assert download.returncode == 0, download.stdout + download.stderr
    [fetched] = (apt.root / "downloads").glob("com.alpha.tool_*.deb")
    # Counted once, before apt had the whole file.
    assert downloads_counted(served.env["PKGCAT_DATABASE_URL"], "com.alpha.tool") == counted + 1
    served_bytes = httpx.get(f"{served.base}/repo/Packages").text
    [stanza] = [s for s in served_bytes.split("\n\n") if "Package: com.alpha.tool" in s]
    assert f"SHA256: {hashlib.sha256(fetched.read_bytes()).hexdigest()}" in stanza
    log = written_log(served, "GET /repo/Packages - status", since=began)
    assert re.search(r"GET /repo/(\./)?InRelease - status=200", log), log
    # apt took the index by hash (by its strongest digest), never by name.
    assert re.search(r"GET /repo/(\./)?by-hash/SHA512/[0-9a-f]{128} - status=200", log), log
    assert not re.search(r"GET /repo/(\./)?Packages", log.split("GET /repo/Packages - status")[0])
    if served.env.get("PKGCAT_DOWNLOAD_REDIRECT") == "true":  # apt followed it to the object
        assert re.search(r"GET /repo/pool/\S+\.deb - status=302", log), log


def test_apt_cannot_download_a_paid_package_without_a_url(
    repository: tuple[Served, Path], tmp_path: Path
) -> None:
    served, key = repository
    apt = Apt(tmp_path / "apt")
    apt.source(f"{served.base}/repo/sources/Alpha/", key)
    assert apt.run("update").returncode == 0
    paid = apt.run("download", "com.alpha.paid")
    assert paid.returncode != 0
    assert "402" in paid.stdout + paid.stderr
    assert downloads_counted(served.env["PKGCAT_DATABASE_URL"], "com.alpha.paid") == 0


def test_apt_refuses_a_repository_signed_by_another_key(
    repository: tuple[Served, Path], tmp_path: Path
) -> None:
    served, _ = repository
    stranger = tmp_path / "stranger.asc"
    stranger.write_text(str(pgp.Tsk.generate("someone else").extract_certificate()))
    apt = Apt(tmp_path / "apt")
    apt.source(f"{served.base}/repo/", stranger)
    update = apt.run("update")
    assert update.returncode != 0
    assert "NO_PUBKEY" in update.stderr or "not signed" in update.stderr, update.stderr
    assert not list((apt.root / "state/lists").glob("*Packages*"))


@contextmanager
def tampering(upstream: str) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 passing requests to ``upstream``, with every index damaged."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = httpx.get(upstream + self.path)
            body = answer.content
            if answer.status_code == 200 and ("Packages" in self.path or "by-hash" in self.path):
                body = body[:-1] + bytes(
                    [body[-1] ^ 0xFF]
                )  # one bit of one byte, and its size kept
            self.send_response(answer.status_code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_apt_refuses_a_tampered_index(repository: tuple[Served, Path], tmp_path: Path) -> None:
    served, key = repository
    with tampering(served.base) as address:
        apt = Apt(tmp_path / "apt")
        apt.source(f"{address}/repo/", key)
        update = apt.run("update")
    assert update.returncode != 0
    assert "Hash Sum mismatch" in update.stderr or "hash" in update.stderr.lower(), update.stderr
    assert apt.run("download", "com.alpha.tool").returncode != 0


def test_a_package_uploaded_through_the_api_reaches_apt(
    repository: tuple[Served, Path], tmp_path: Path
) -> None:
    """The typed client and `pkgcat client upload` over real HTTP; apt-get then finds both."""
    served, key = repository
    env = served.env
    pkgcat(env, "app", "create", "--source", "Alpha", "--name", "ci")
    issued = json.loads(
        pkgcat(
            env, "key", "create", "--source", "Alpha", "--app", "ci", "--scope", "publish", "--json"
        )
    )
    assert issued["scopes"] == ["read", "publish"]
    first = build_deb(tmp_path, "com.alpha.uploaded", "2.0", ARCH, payload="up")
    with Client(served.base, issued["secret_key"], max_retries=0) as client:
        package = client.upload(first, idempotency_key="ci-2.0")
        assert (package.package, package.version) == ("com.alpha.uploaded", "2.0")
        # The same key and file again: the first answer, no second publish.
        assert client.upload(first.read_bytes(), idempotency_key="ci-2.0") == package
    second = build_deb(tmp_path, "com.alpha.bycli", "1.0", ARCH, payload="cli")
    done = subprocess.run(
        [PKGCAT, "client", "upload", str(second), "--json"],
        env={**env, "PKGCAT_SECRET_KEY": issued["secret_key"], "PKGCAT_BASE_URL": served.base},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["package"] == "com.alpha.bycli"
    # The indexes are rebuilt off the request path: wait (bounded) until they list both.
    deadline = time.monotonic() + 30
    while True:
        listed = httpx.get(f"{served.base}/repo/Packages").text
        if "Package: com.alpha.uploaded" in listed and "Package: com.alpha.bycli" in listed:
            break
        assert time.monotonic() < deadline, "the uploads never reached the index"
        time.sleep(0.1)  # polling the rebuild, not timing anything
    apt = Apt(tmp_path / "apt")
    apt.source(f"{served.base}/repo/", key)
    update = apt.run("update")
    assert update.returncode == 0, update.stdout + update.stderr
    download = apt.run("download", "com.alpha.uploaded", "com.alpha.bycli")
    assert download.returncode == 0, download.stdout + download.stderr
    [fetched] = (apt.root / "downloads").glob("com.alpha.uploaded_*.deb")
    assert fetched.read_bytes() == first.read_bytes()


def test_apt_sees_no_other_candidate_after_a_takeover_by_case_or_by_version_spelling(
    repository: tuple[Served, Path], tmp_path: Path
) -> None:
    """Another source's COM.ALPHA.TOOL, and 0:1.2-1 with other bytes, are both refused.

    apt would read either as com.alpha.tool: its cache finds a package's group by a hash
    of the name in lower case (apt-pkg/pkgcache.cc, pkgCache::sHash, tolower_ascii_unsafe
    of each character; pkgCache::FindGrp), and dpkg's version order finds 0:1.2-1 equal to
    1.2-1 (lib/dpkg/version.c, dpkg_version_compare: a missing epoch is 0).
    """
    served, key = repository
    env = served.env
    subprocess.run([PKGCAT, "source", "add", "Intruder", "--url", "https://i.example/"], env=env)
    attempts = {
        "upper case": build_deb(tmp_path, "COM.ALPHA.TOOL", "3.0", ARCH, payload="theirs"),
        "epoch spelt": build_deb(tmp_path, "com.alpha.tool", "0:1.2-1", ARCH, payload="theirs"),
    }
    for source in ("Intruder", "Alpha"):
        for name, deb in attempts.items():
            done = subprocess.run(
                [PKGCAT, "publish", str(deb), "--source", source],
                env=env,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 1, (name, source, done.stdout)
    apt = Apt(tmp_path / "apt")
    apt.source(f"{served.base}/repo/", key)
    update = apt.run("update")
    assert update.returncode == 0, update.stdout + update.stderr
    policy = apt.run("policy", "com.alpha.tool", program="apt-cache")
    assert policy.returncode == 0, policy.stderr
    assert "Candidate: 1.2-1" in policy.stdout
    # The version table: one line per version apt knows of, "     VERSION PRIORITY".
    assert re.findall(r"^ +(\S+) \d+$", policy.stdout, re.MULTILINE) == ["1.2-1"], policy.stdout
    download = apt.run("download", "com.alpha.tool")
    assert download.returncode == 0, download.stdout + download.stderr
    [fetched] = (apt.root / "downloads").glob("com.alpha.tool_*.deb")
    assert (
        b"theirs"
        not in subprocess.run(
            ["dpkg-deb", "--fsys-tarfile", str(fetched)], capture_output=True, check=True
        ).stdout
    )
