"""The served repository behind a per-request round-robin balancer, while packages are published.

Real ``pkgcat serve`` processes: one host of two workers on SQLite with the directory
store, and two hosts of two workers each (own index directories) on one PostgreSQL
database with the .deb files in SeaweedFS. A balancer (:mod:`tests.balancer`) sends each
request to the next host over a new connection, so that apt's InRelease and the indexes it
names come from different workers and hosts. Packages are published one after another the
whole time; each test is bounded in publications and in time.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.backends import PostgresDatabases, unavailable
from tests.balancer import balancer
from tests.debs import build_deb
from tests.repository.test_apt import ARCH, PASSPHRASE, Apt
from tests.seaweed import S3Server
from tests.servers import Served, command, environment, poll, serving

pytestmark = [pytest.mark.server, pytest.mark.slow]

WORKERS = 2
PUBLISHED = 12
"""Publications each test makes while it reads (at most :data:`LIMIT`)."""
LIMIT = 60
CAUGHT_UP = 2.0
"""docs/deploy.md: every host serves a change within 2 s."""


@dataclass
class Hosts:
    servers: list[Served]
    env: dict[str, str]
    key: Path
    folder: Path
    published: int = 1
    """Packages published so far (each a package of its own: a stanza more)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish_one(self) -> int:
        """Publish a new package; how many are published once it is."""
        with self.lock:
            number = self.published
            deb = build_deb(self.folder, f"com.alpha.p{number}", "1.0", ARCH, payload=f"{number}")
            command(self.env, "publish", str(deb), "--source", "Alpha")
            self.published += 1
            return self.published


@pytest.fixture(scope="module", params=("sqlite-directory", "postgres-s3"))
def hosts(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hosts]:
    """The hosts serving one catalogue of one package, and the repository's exported key."""
    if shutil.which("apt-get") is None:
        unavailable("these tests need Debian's apt-get")
    folder = tmp_path_factory.mktemp(f"hosts-{request.param}")
    settings: dict[str, str] = {"repository_passphrase": PASSPHRASE}
    with ExitStack() as stack:
        if request.param == "postgres-s3":
            databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
            database_url = stack.enter_context(databases.database())
            server: S3Server = request.getfixturevalue("s3_server")
            settings |= server.settings(folder.name)
            count = 2
        else:
            database_url = f"sqlite:///{folder / 'repo.db'}"
            settings["blob_dir"] = str(folder / "blobs")
            count = 1
        env = environment(database_url, **settings)
        if request.param == "postgres-s3":
            command(env, "repo", "key", "create")
        else:
            assert "signing key" in command(env, "init")
        command(env, "source", "add", "Alpha", "--url", "https://alpha.example/")
        deb = build_deb(folder, "com.alpha.p0", "1.0", ARCH, payload="0")
        command(env, "publish", str(deb), "--source", "Alpha")
        key = folder / "pkgcat.asc"
        command(env, "repo", "key", "export", "--output", str(key))
        servers = [
            stack.enter_context(
                serving(
                    env | {"PKGCAT_INDEX_DIR": str(folder / f"indexes-{n}")},
                    folder / f"host-{n}.log",
                    workers=WORKERS,
                )
            )
            for n in range(count)
        ]
        yield Hosts(servers, env, key, folder)


@contextmanager
def publishing(hosts: Hosts) -> Iterator[threading.Event]:
    """Packages published one after another, until the block ends (or :data:`LIMIT`); the
    event is set once :data:`PUBLISHED` more are."""
    stop, enough = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            for n in range(LIMIT):
                if stop.is_set():
                    return
                hosts.publish_one()
                if n + 1 >= PUBLISHED:
                    enough.set()
        except BaseException as error:  # told to the test below
            failed.append(error)
        finally:
            enough.set()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield enough
    finally:
        stop.set()
        thread.join(60)
    assert not failed, failed


def upstreams(hosts: Hosts) -> list[tuple[str, int]]:
    return [("127.0.0.1", served.port) for served in hosts.servers]


def named(release: str, field_name: str) -> list[tuple[str, int, str]]:
    """The (digest, size, name) lines of one digest field of a Release."""
    lines = release.split(f"\n{field_name}:\n", 1)[1].split("\n")
    found = []
    for line in lines:
        if not line.startswith(" "):
            break
        digest, size, name = line.split()
        found.append((digest, int(size), name))
    return found


def entries(base: str) -> int:
    """The stanzas of the Packages file ``base`` serves now (over a new connection)."""
    answer = httpx.get(f"{base}/repo/Packages", headers={"connection": "close"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.text.count("\nPackage: ") + answer.text.startswith("Package: ")


def test_every_index_a_release_names_is_served_by_every_worker_while_publishing(
    hosts: Hosts,
) -> None:
    misses: list[str] = []
    rounds = fetched = 0
    with balancer(upstreams(hosts)) as base, publishing(hosts) as enough:
        while not enough.is_set() or rounds < 3:
            release = httpx.get(f"{base}/repo/InRelease", timeout=10)
            assert release.status_code == 200, release.text
            rounds += 1
            for field_name, algorithm in (("SHA256", "sha256"), ("SHA512", "sha512")):
                for digest, size, name in named(release.text, field_name):
                    path = f"{base}/repo/by-hash/{field_name}/{digest}"
                    got = httpx.get(path, timeout=10)
                    fetched += 1
                    body = got.content
                    if got.status_code != 200:
                        misses.append(f"{name} {field_name}: {got.status_code}")
                    elif len(body) != size or hashlib.new(algorithm, body).hexdigest() != digest:
                        misses.append(f"{name} {field_name}: other bytes")
    assert rounds >= 3
    assert misses == [], f"{len(misses)} of {fetched} by-hash fetches missed"


def test_apt_update_through_the_balancer_never_fails_while_publishing(
    hosts: Hosts, tmp_path: Path
) -> None:
    failures: list[str] = []
    runs = 0
    with balancer(upstreams(hosts)) as base, publishing(hosts) as enough:
        while not enough.is_set() or runs < 3:
            apt = Apt(tmp_path / f"apt-{runs}")  # every index fetched, none kept from before
            apt.source(f"{base}/repo/", hosts.key)
            update = apt.run("update")
            runs += 1
            if update.returncode != 0 or "W:" in update.stderr or "E:" in update.stderr:
                failures.append(update.stderr)
    assert runs >= 3
    assert failures == [], f"{len(failures)} of {runs} runs failed"


def test_a_host_never_goes_back_and_an_idle_one_catches_up(hosts: Hosts) -> None:
    first, *others = hosts.servers
    seen: list[int] = []
    with publishing(hosts) as enough:
        while not enough.is_set() or len(seen) < 3:
            seen.append(entries(first.base))
    assert seen == sorted(seen), seen
    # One more change: every worker of every host serves it within the bound, the
    # workers and hosts no request reached meanwhile among them, and none goes back.
    published = hosts.publish_one()
    changed = time.monotonic()
    for served in (first, *others):
        left = max(CAUGHT_UP - (time.monotonic() - changed), 0.05)

        def current(base: str = served.base) -> bool | None:
            return entries(base) == published or None

        poll(current, "every worker serving the change", left)
        after = [entries(served.base) for _ in range(4 * WORKERS)]
        assert after == [published] * len(after)
