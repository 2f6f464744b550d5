"""Counted downloads: whole .deb files served, per package and day, and what reads them.

Files are published and fetched through the served app, on each database and
with the directory store and S3; the counts are then read back through the API
(``package/downloads.json`` and details), as a seller would.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from pkgcat.repository.grants import Grants
from pkgcat.repository.indexes import PoolEntry
from pkgcat.repository.keys import download_key
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.debs import build_deb
from tests.repository.conftest import Publisher, get_scope
from tests.repository.test_served import (
    PASSPHRASE,
    _filenames,
    _repository_app,
    fetch,
    publish_alpha,
)
from tests.servers import (
    children,
    command,
    downloads_counted,
    environment,
    kill_marked,
    poll,
    running,
    seed,
    serving,
)

DOWNLOADS = "/1.0/package/downloads.json"
DETAILS = "/1.0/package/details.json"


@pytest.fixture(params=("directory", "s3"))
def counted(
    request: pytest.FixtureRequest,
    make_api: AppFactory,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> tuple[Api, dict[str, Path]]:
    """The test catalogue's free and paid packages of Alpha published and served, downloads counted."""
    store, files = publish_alpha(request, pkgcat, cli_env, tmp_path)
    return make_api(repository_passphrase=PASSPHRASE, **store), files


def _series(api: Api, package: str, **params: str) -> dict[str, object]:
    answer = api.get(DOWNLOADS, api.keys["alpha-a"], package=package, **params)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()["response"]
    return body


def _total_download(api: Api, package: str) -> int:
    return int(
        api.get(DETAILS, api.keys["alpha-a"], package=package).json()["response"]["total_download"]
    )


def test_whole_downloads_are_counted_once_each_and_show_in_details(
    counted: tuple[Api, dict[str, Path]],
) -> None:
    api, files = counted
    imported = _total_download(api, "com.alpha.free")
    path = "/repo/" + _filenames(api)["com.alpha.free"]
    data = files["free"].read_bytes()
    for _ in range(3):
        whole = fetch(api, path)
        assert whole.status_code == 200
        assert whole.content == data
    assert fetch(api, path, Range="bytes=100-1099").status_code == 206  # a part: not counted
    assert api.http.head(path).status_code == 200  # no body: not counted
    assert fetch(api, path, Range=f"bytes={len(data) + 5}-").status_code == 416
    # A resumed download: the first part, then the rest to the last byte: counted once.
    assert fetch(api, path, Range="bytes=0-999").content == data[:1000]
    assert fetch(api, path, Range="bytes=1000-").content == data[1000:]
    assert fetch(api, path, Range="bytes=0-").content == data  # the whole file, as 200

    series = _series(api, "com.alpha.free", days="2")
    assert series["downloads"] == [
        {"day": "2024-03-29", "downloads": 0},
        {"day": "2024-03-30", "downloads": 0},
        {"day": "2024-03-31", "downloads": 5},
    ]
    assert series["total"] == 5
    assert (series["start"], series["end"]) == ("2024-03-29", "2024-03-31")
    assert _total_download(api, "com.alpha.free") == imported + 5  # live, past the cache
    fetch(api, path)
    assert _total_download(api, "com.alpha.free") == imported + 6
    assert _series(api, "com.alpha.free", start="2024-03-31", end="2024-03-31")["total"] == 6


def test_a_paid_download_counts_once_through_its_grant(
    counted: tuple[Api, dict[str, Path]], database_url: str
) -> None:
    api, files = counted
    path = "/repo/" + _filenames(api)["com.alpha.paid"]
    assert fetch(api, path).status_code == 402
    engine = engine_for(database_url)
    try:
        grants = Grants(download_key(engine, PASSPHRASE), 120)
    finally:
        engine.dispose()
    url = grants.make(path, int(time.time()))
    assert fetch(api, url).content == files["paid"].read_bytes()
    assert fetch(api, url).status_code == 410  # spent: refused, and not counted
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1


APT = "Debian APT-HTTP/1.3 (2.6.1)"
"""apt's User-Agent (methods/http.cc, ``HttpMethod::SendReq``: ``Req << "User-Agent: " <<
ConfigFind("User-Agent", "Debian APT-HTTP/1.3 (" PACKAGE_VERSION ")")``)."""
APT_IF_RANGE = "Sun, 31 Mar 2024 10:00:00 GMT"
"""What apt sends beside its resume: ``If-Range`` with the partial file's mtime, as
``TimeRFC1123(SBuf.st_mtime, false)`` (methods/http.cc, ``HttpMethod::SendReq``)."""
BUYER = ("198.51.100.7", 40000)


def _download_url(api: Api, database_url: str, package: str = "com.alpha.paid") -> str:
    path = "/repo/" + _filenames(api)[package]
    engine = engine_for(database_url)
    try:
        grants = Grants(download_key(engine, PASSPHRASE), 120)
    finally:
        engine.dispose()
    return grants.make(path, int(time.time()))


@dataclass
class Answer:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def _drive(
    api: Api,
    url: str,
    *,
    client: tuple[str, int] = BUYER,
    method: str = "GET",
    cut: bool = False,
    headers: dict[str, str] | None = None,
    pathsend: bool = False,
) -> Answer:
    """A request of ``url`` from ``client``, driven as the server drives the repository app
    (streamed); ``cut``: the client takes the first body message, then is gone (the server
    says so, and the rest never reaches it), as a connection that broke mid-file;
    ``pathsend``: the server offers ``http.response.pathsend`` (what was sent so is named)."""
    repository = _repository_app(api)
    path, _, query = url.partition("?")
    scope = get_scope(path, **(headers or {}))
    if not pathsend:
        del scope["extensions"]
    scope |= {"method": method, "query_string": query.encode(), "client": client}
    answer = Answer()

    async def receive() -> dict[str, object]:
        if cut:
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()  # a client that stays
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, object]) -> None:
        if message["type"] == "http.response.start":
            answer.status = int(message["status"])  # type: ignore[call-overload]
            raw = message["headers"]
            assert isinstance(raw, list)
            answer.headers = {k.decode(): v.decode() for k, v in raw}
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            assert isinstance(body, bytes)
            if not (cut and answer.body):
                answer.body += body
        elif message["type"] == "http.response.pathsend":
            answer.body += Path(str(message["path"])).read_bytes()

    async def drive() -> None:
        await repository(scope, receive, send)

    api.http.portal.call(drive)  # type: ignore[union-attr]
    return answer


@pytest.fixture
def paid(counted: tuple[Api, dict[str, Path]], database_url: str) -> tuple[Api, bytes, str]:
    """The served app, the paid package's file, and a download URL of it."""
    api, files = counted
    return api, files["paid"].read_bytes(), _download_url(api, database_url)


def test_a_head_of_a_download_url_claims_nothing_and_answers_a_gets_headers(
    paid: tuple[Api, bytes, str],
) -> None:
    api, data, url = paid
    for _ in range(2):  # as often as a client likes: nothing claimed, nothing counted
        head = api.http.head(url)
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-length"] == str(len(data))
        assert head.headers["accept-ranges"] == "bytes"
        part = api.http.head(url, headers={"Range": "bytes=10-"})
        assert part.status_code == 206
        assert part.headers["content-range"] == f"bytes 10-{len(data) - 1}/{len(data)}"
    assert _series(api, "com.alpha.paid", days="1")["total"] == 0
    whole = fetch(api, url)
    assert (whole.status_code, whole.content) == (200, data)
    assert whole.headers["etag"] == head.headers["etag"]
    # Spent now: a HEAD answers what a GET would, 410.
    assert api.http.head(url).status_code == 410
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1


def test_a_cut_paid_download_is_resumed_by_its_client_and_counted_once(
    paid: tuple[Api, bytes, str],
) -> None:
    """apt's way (methods/http.cc, ``HttpMethod::SendReq``): a GET, cut; then, holding
    part of the file, the same URL with ``Range: bytes=N-`` and ``If-Range``."""
    api, data, url = paid
    first = _drive(api, url, cut=True, headers={"User-Agent": APT})
    assert first.status == 200
    assert 0 < len(first.body) < len(data)
    assert data.startswith(first.body)
    assert _series(api, "com.alpha.paid", days="1")["total"] == 0  # cut: not counted
    held = len(first.body)
    resume = {"User-Agent": APT, "Range": f"bytes={held}-", "If-Range": APT_IF_RANGE}
    rest = _drive(api, url, headers=resume)
    assert rest.status == 206
    assert rest.headers["content-range"] == f"bytes {held}-{len(data) - 1}/{len(data)}"
    assert first.body + rest.body == data
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1
    # Whole once: the URL is done, for its own client too, and nothing more is counted.
    assert _drive(api, url, headers=resume).status == 410
    assert _drive(api, url, headers={"User-Agent": APT}).status == 410
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1


def test_only_the_client_that_claimed_a_download_url_may_resume_it(
    paid: tuple[Api, bytes, str],
) -> None:
    api, data, url = paid
    first = _drive(api, url, cut=True, headers={"User-Agent": APT})
    held = len(first.body)
    resume = {"Range": f"bytes={held}-", "If-Range": APT_IF_RANGE}
    elsewhere = ("203.0.113.9", 40000)
    others = [
        _drive(api, url, client=elsewhere, headers={"User-Agent": APT, **resume}),
        _drive(api, url, headers={"User-Agent": "Sileo/2.5 CoreFoundation/1900", **resume}),
        _drive(api, url, headers=resume),  # no User-Agent at all
        _drive(api, url, client=elsewhere, headers={"User-Agent": APT}),
    ]
    for other in others:
        assert other.status == 410
        assert b"the same address and User-Agent" in other.body  # the refusal, no byte of the file
    assert _series(api, "com.alpha.paid", days="1")["total"] == 0
    rest = _drive(api, url, headers={"User-Agent": APT, **resume})
    assert (rest.status, first.body + rest.body) == (206, data)
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1


def test_with_zero_copy_a_download_url_s_file_goes_whole_once(
    paid: tuple[Api, bytes, str],
) -> None:
    """Zero copy: a whole file of the directory store goes in one message, counted (and the
    URL marked done) before it goes; the URL is then spent for its client too."""
    api, data, url = paid
    repository = _repository_app(api)
    repository.zero_copy = True  # as PKGCAT_DOWNLOAD_ZERO_COPY sets it
    try:
        first = _drive(api, url, pathsend=True, headers={"User-Agent": APT})
        assert (first.status, first.body) == (200, data)
        again = _drive(api, url, pathsend=True, headers={"User-Agent": APT})
        assert again.status == 410
    finally:
        repository.zero_copy = False
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1


@pytest.fixture(params=("directory", "s3"))
def two_hosts(
    request: pytest.FixtureRequest,
    make_api: AppFactory,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> tuple[list[Api], dict[str, Path]]:
    """Alpha's packages published, served by two apps on the one database: two hosts."""
    store, files = publish_alpha(request, pkgcat, cli_env, tmp_path)
    return [make_api(repository_passphrase=PASSPHRASE, **store) for _ in range(2)], files


def test_twenty_parallel_gets_of_a_download_url_on_two_hosts_give_one_file(
    two_hosts: tuple[list[Api], dict[str, Path]], database_url: str
) -> None:
    """Two apps on one database (two hosts), 20 clients at once on one URL: one gets the
    file, every other 410, and it is counted once."""
    hosts, files = two_hosts
    url = _download_url(hosts[0], database_url)

    def get(n: int) -> httpx.Response:
        answer: httpx.Response = hosts[n % 2].http.get(url, headers={"User-Agent": f"client {n}"})
        return answer

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(get, range(20)))
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] + [410] * 19
    [whole] = [answer for answer in answers if answer.status_code == 200]
    assert whole.content == files["paid"].read_bytes()
    assert _series(hosts[0], "com.alpha.paid", days="1")["total"] == 1


def test_the_downloads_of_a_package_are_its_own_sources_and_shaped(
    counted: tuple[Api, dict[str, Path]],
) -> None:
    api, _ = counted
    fetch(api, "/repo/" + _filenames(api)["com.alpha.free"])
    other = api.get(DOWNLOADS, api.keys["beta-a"], package="com.alpha.free")
    assert other.json()["code"] == 12
    shaped = api.get(DOWNLOADS, api.keys["alpha-b"], package="com.alpha.free", days="1").json()
    assert shaped["response"]["downloads"] == [
        {"day": "30-03-2024", "downloads": 0},
        {"day": "31-03-2024", "downloads": 1},
    ]
    both = api.get(
        DOWNLOADS, api.keys["alpha-a"], package="com.alpha.free", days="1", end="2024-03-31"
    )
    assert both.json()["code"] == 2
    assert both.json()["response"].startswith("days")
    unknown = api.get(DOWNLOADS, api.keys["alpha-a"], package="no.such.package")
    assert unknown.json()["code"] == 8


def _serve_one_file(tmp_path: Path, database_url: str, size: int) -> tuple[dict[str, str], Path]:
    """A demo catalogue with one free .deb of about ``size`` bytes published, directory store."""
    env = environment(database_url, blob_dir=str(tmp_path / "blobs"))
    source = seed(env)[0]["source"]
    deb = build_deb(tmp_path, "com.example.counted", "1.0", payload=secrets.token_hex(size))
    command(env, "publish", str(deb), "--source", source)
    return env, deb


def _pool_path(base: str) -> str:
    packages = httpx.get(f"{base}/repo/Packages", timeout=10).text
    (filename,) = (
        line.removeprefix("Filename: ")
        for line in packages.splitlines()
        if line.startswith("Filename: ")
    )
    return f"/repo/{filename}"


WAYS = {"whole": 0, "resumed": 1000}
"""How a download ends: a whole file (200), or a range to the file's end (206), both
streamed with their last byte held back until the count is committed."""


@pytest.mark.parametrize("way", [*sorted(WAYS), "zero-copy"])
def test_no_download_is_lost_when_its_worker_is_killed_right_after(
    tmp_path: Path, database_url: str, way: str
) -> None:
    """Downloads answered, the last one's worker killed (SIGKILL) as soon as it is
    received: every one is counted."""
    env, deb = _serve_one_file(tmp_path, database_url, 100_000)
    if way == "zero-copy":  # sent from disk in one message, counted before it goes
        env["PKGCAT_DOWNLOAD_ZERO_COPY"] = "true"
    data, start = deb.read_bytes(), WAYS.get(way, 0)
    try:
        with serving(env, tmp_path / "server.log") as served:
            path = _pool_path(served.base)
            (worker,) = children(served.process.pid)
            headers = {"Range": f"bytes={start}-"} if start else {}
            with httpx.Client(base_url=served.base, headers=headers, timeout=10) as client:
                for _ in range(3):
                    assert client.get(path).content == data[start:]
            os.kill(worker.pid, signal.SIGKILL)
            poll(lambda: None if running(worker) else True, "the killed worker exits")
        assert downloads_counted(database_url, "com.example.counted") == 3
    finally:
        kill_marked(database_url)


@pytest.mark.parametrize("gone", [False, True])
def test_the_last_byte_waits_for_the_count_and_a_client_gone_is_not_counted(
    counted: tuple[Api, dict[str, Path]], gone: bool
) -> None:
    """The repository app driven as a server drives it: every byte but the last, then the
    count, then the last byte; nothing counted when the server has said the client left."""
    api, files = counted
    path = "/repo/" + _filenames(api)["com.alpha.free"]
    repository = _repository_app(api)
    events: list[tuple[str, int]] = []
    counter = repository.on_download

    async def count(entry: PoolEntry, n: int) -> None:
        events.append(("counted", n))
        await counter(entry, n)

    async def receive() -> dict[str, object]:
        if gone:
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()  # a client that stays: no message until the end
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, object]) -> None:
        if message["type"] == "http.response.body":
            body = message.get("body", b"")
            assert isinstance(body, bytes)
            events.append(("body", len(body)))

    async def drive() -> None:
        scope = get_scope(path)
        del scope["extensions"]  # streamed, as a server without the extension has it
        await repository(scope, receive, send)

    repository.on_download = count
    try:
        # The app's storage lives on the test client's loop: drive it there.
        api.http.portal.call(drive)  # type: ignore[union-attr]
    finally:
        repository.on_download = counter
    size = files["free"].stat().st_size
    assert sum(n for kind, n in events if kind == "body") == size
    assert events[-1] == ("body", 1)  # the last byte, alone, last
    if gone:
        assert ("counted", 1) not in events
        assert _series(api, "com.alpha.free", days="1")["total"] == 0
    else:
        assert events[-2] == ("counted", 1)  # committed before the last byte went
        assert _series(api, "com.alpha.free", days="1")["total"] == 1


def _ready(base: str) -> bool | None:
    try:
        return True if httpx.get(f"{base}/readyz", timeout=1).status_code == 200 else None
    except httpx.TransportError:
        return None


def test_with_zero_copy_a_file_handed_whole_to_the_server_is_counted(
    counted: tuple[Api, dict[str, Path]],
) -> None:
    """Zero copy, directory store: the file goes in one pathsend message and is counted,
    even from a client the server has said left (as documented: nothing is watched). The
    S3 store has no file to hand over: streamed, and a client gone is not counted."""
    api, _ = counted
    repository = _repository_app(api)
    repository.zero_copy = True  # as PKGCAT_DOWNLOAD_ZERO_COPY sets it
    sent: list[str] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, object]) -> None:
        sent.append(str(message["type"]))

    path = "/repo/" + _filenames(api)["com.alpha.free"]

    async def drive() -> None:
        await repository(get_scope(path), receive, send)

    api.http.portal.call(drive)  # type: ignore[union-attr]
    if repository.served.blobs.name.startswith("directory"):
        assert sent == ["http.response.start", "http.response.pathsend"]
        assert _series(api, "com.alpha.free", days="1")["total"] == 1
    else:
        assert "http.response.pathsend" not in sent
        assert _series(api, "com.alpha.free", days="1")["total"] == 0
