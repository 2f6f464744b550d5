"""The served repository in-process: indexes, hashes, signatures, conditional requests, downloads."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pysequoia as pgp
import pytest
import zstandard
from debian.deb822 import Deb822, Release
from sqlalchemy import text

from pkgcat.repository.grants import Grants
from pkgcat.repository.indexes import Identity, PoolEntry, build
from pkgcat.repository.keys import download_key
from pkgcat.storage.engine import engine_for
from pkgcat.storage.served import Snapshot
from tests.backends import unavailable
from tests.conftest import Api, AppFactory
from tests.debs import build_deb
from tests.repository.conftest import Publisher, get_scope, scalar
from tests.seaweed import S3Server


def _zstd_frames(data: bytes) -> bytes:
    """Every frame of a .zst file: a Packages.zst holds one frame per piece of the text
    (pkgcat.repository.pieces), and a file digest that cuts the text makes two or more."""
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        out: bytes = reader.read()
    return out


DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "Packages": lambda data: data,
    "Packages.gz": gzip.decompress,
    "Packages.xz": lzma.decompress,
    "Packages.bz2": bz2.decompress,
    "Packages.zst": _zstd_frames,
}
PASSPHRASE = "a test passphrase of some length"


@pytest.fixture
def published(
    pkgcat: Publisher,
    tmp_path: Path,
    signing_key: Callable[[str], None],
    cli_env: dict[str, str],
) -> dict[str, Path]:
    """A signing key and four files: free, paid, another source's and an offline package's."""
    signing_key(cli_env["PKGCAT_DATABASE_URL"])
    files = {
        "free": build_deb(tmp_path, "com.alpha.free", "1.0", "iphoneos-arm64", Tag="role::enduser"),
        "new": build_deb(tmp_path, "com.alpha.new", "0.1", "all", payload="x" * 3000),
        "paid": build_deb(tmp_path, "com.alpha.paid", "2.0", "iphoneos-arm64"),
        "beta": build_deb(tmp_path, "com.beta.paid", "3.0", "iphoneos-arm"),
        "offline": build_deb(tmp_path, "com.alpha.offline", "1.0", "all"),
    }
    sources = {"beta": "Beta"}
    for name, path in files.items():
        result = pkgcat("publish", str(path), "--source", sources.get(name, "Alpha"))
        assert result.exit_code == 0, result.output
    return files


def _offline(database_url: str) -> None:
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            from sqlalchemy import text

            db.execute(
                text("UPDATE packages SET online = false WHERE package = 'com.alpha.offline'")
            )
    finally:
        engine.dispose()


@pytest.fixture
def repo(make_api: AppFactory, published: dict[str, Path], cli_env: dict[str, str]) -> Api:
    _offline(cli_env["PKGCAT_DATABASE_URL"])
    return make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], repository_passphrase=PASSPHRASE)


def fetch(api: Api, path: str, **headers: str) -> httpx.Response:
    response: httpx.Response = api.http.get(path, headers=headers)
    return response


def stanzas(packages: bytes) -> list[Deb822]:
    return list(Deb822.iter_paragraphs(packages.decode().splitlines(keepends=True)))


def test_release_lists_every_index_with_four_digests_and_by_hash_serves_each(repo: Api) -> None:
    release = Release(fetch(repo, "/repo/Release").text)
    assert release["Acquire-By-Hash"] == "yes"
    assert "Valid-Until" not in release
    packages = fetch(repo, "/repo/Packages").content
    for name, decompress in DECOMPRESS.items():
        body = fetch(repo, f"/repo/{name}").content
        assert decompress(body) == packages
        for field, algorithm in (
            ("MD5Sum", "md5"),
            ("SHA1", "sha1"),
            ("SHA256", "sha256"),
            ("SHA512", "sha512"),
        ):
            [listed] = [e for e in release[field] if e["name"] == name]
            digest = hashlib.new(algorithm, body).hexdigest()
            assert listed[field.lower() if field != "MD5Sum" else "md5sum"] == digest
            assert int(listed["size"]) == len(body)
            assert fetch(repo, f"/repo/by-hash/{field}/{digest}").content == body


def test_packages_lists_online_stored_files_with_their_digests(
    repo: Api, published: dict[str, Path]
) -> None:
    listed = {s["Package"]: s for s in stanzas(fetch(repo, "/repo/Packages").content)}
    assert set(listed) == {"com.alpha.free", "com.alpha.new", "com.alpha.paid", "com.beta.paid"}
    free = listed["com.alpha.free"]
    data = published["free"].read_bytes()
    assert free["Tag"] == "role::enduser"
    assert int(free["Size"]) == len(data)
    assert free["SHA256"] == hashlib.sha256(data).hexdigest()
    assert free["SHA512"] == hashlib.sha512(data).hexdigest()
    download = fetch(repo, f"/repo/{free['Filename']}")
    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"] == "application/vnd.debian.binary-package"


def test_each_source_has_a_repository_of_its_own(repo: Api) -> None:
    beta = stanzas(fetch(repo, "/repo/sources/Beta/Packages").content)
    assert [s["Package"] for s in beta] == ["com.beta.paid"]
    assert fetch(repo, "/repo/sources/Beta/InRelease").text.startswith("-----BEGIN PGP SIGNED")
    assert fetch(repo, "/repo/sources/Nobody/Packages").status_code == 404
    # A file is served under its own source's repository, not another's.
    alpha = {s["Package"]: s for s in stanzas(fetch(repo, "/repo/sources/Alpha/Packages").content)}
    path = alpha["com.alpha.free"]["Filename"]
    assert fetch(repo, f"/repo/sources/Alpha/{path}").status_code == 200
    assert fetch(repo, f"/repo/sources/Beta/{path}").status_code == 404


def gpgv(keyring: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("gpgv") is None:
        unavailable("checking signatures needs gpgv (Debian's gpgv package)")
    return subprocess.run(
        ["gpgv", "--keyring", str(keyring), *map(str, files)], capture_output=True, text=True
    )


def dearmored(armored: str, tmp_path: Path, name: str = "keys.gpg") -> Path:
    """An armored key block as the binary keyring gpgv reads."""
    path = tmp_path / name
    path.write_bytes(b"".join(bytes(c) for c in pgp.Cert.split_bytes(armored.encode())))
    return path


def test_inrelease_and_release_gpg_verify_with_the_exported_key(
    repo: Api, pkgcat: Publisher, tmp_path: Path
) -> None:
    exported = pkgcat("repo", "key", "export")
    assert exported.exit_code == 0
    assert exported.output.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")
    keyring = dearmored(exported.output, tmp_path)
    (tmp_path / "InRelease").write_bytes(fetch(repo, "/repo/InRelease").content)
    (tmp_path / "Release").write_bytes(fetch(repo, "/repo/Release").content)
    (tmp_path / "Release.gpg").write_bytes(fetch(repo, "/repo/Release.gpg").content)
    assert gpgv(keyring, tmp_path / "InRelease").returncode == 0
    assert gpgv(keyring, tmp_path / "Release.gpg", tmp_path / "Release").returncode == 0
    assert fetch(repo, "/repo/key.asc").text == exported.output
    # The text InRelease signs is Release itself.
    inline = (tmp_path / "InRelease").read_text()
    assert (tmp_path / "Release").read_text() in inline


def test_a_key_rotation_signs_with_both_until_the_old_one_retires(
    make_api: AppFactory,
    published: dict[str, Path],
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    old = dearmored(pkgcat("repo", "key", "export").output, tmp_path, "old.gpg")
    assert pkgcat("repo", "key", "create").exit_code == 0
    keys = json.loads(pkgcat("repo", "key", "list", "--json").stdout)
    # Keys made within one second list in fingerprint order: tell them apart by the export.
    (first,) = (c.fingerprint for c in pgp.Cert.split_bytes(old.read_bytes()))
    (second,) = (key["fingerprint"] for key in keys if key["fingerprint"] != first)
    both = dearmored(pkgcat("repo", "key", "export").output, tmp_path, "both.gpg")
    new = tmp_path / "new.gpg"
    new.write_bytes(
        b"".join(
            bytes(c) for c in pgp.Cert.split_bytes(both.read_bytes()) if c.fingerprint == second
        )
    )
    api = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], repository_passphrase=PASSPHRASE)
    inline = tmp_path / "InRelease"
    inline.write_bytes(fetch(api, "/repo/InRelease").content)
    # A client with only the old key, and one with only the new key, both find a good signature.
    assert "Good signature" in gpgv(old, inline).stderr
    assert "Good signature" in gpgv(new, inline).stderr

    refused = pkgcat("repo", "key", "retire", second)
    assert refused.exit_code == 0, refused.output
    last = pkgcat("repo", "key", "retire", first[:12])
    assert last.exit_code == 1
    assert "only signing key" in last.output

    def signed_by_first_only() -> bool:
        inline.write_bytes(fetch(api, "/repo/InRelease").content)
        return "Good signature" not in gpgv(new, inline).stderr

    wait_for(signed_by_first_only, "indexes signed without the retired key")
    assert "Good signature" in gpgv(old, inline).stderr


def test_indexes_answer_conditional_requests(repo: Api) -> None:
    first = fetch(repo, "/repo/InRelease")
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    assert fetch(repo, "/repo/InRelease", **{"If-None-Match": etag}).status_code == 304
    assert fetch(repo, "/repo/InRelease", **{"If-Modified-Since": modified}).status_code == 304
    earlier = format_datetime(parsedate_to_datetime(modified) - timedelta(seconds=60), usegmt=True)
    assert fetch(repo, "/repo/InRelease", **{"If-Modified-Since": earlier}).status_code == 200
    assert fetch(repo, "/repo/Packages.gz", **{"If-None-Match": '"other"'}).status_code == 200


def _drive(api: Api, path: str, **headers: str) -> list[dict[str, Any]]:
    """The messages the repository app sends for a GET, driven as a server that offers
    ``http.response.pathsend`` drives it (the test client offers no extension)."""
    repository = _repository_app(api)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def drive() -> None:
        await repository(get_scope(path, **headers), receive, send)

    api.http.portal.call(drive)  # type: ignore[union-attr]
    return sent


def test_a_large_index_is_sent_from_its_file_on_disk_when_the_server_can(
    make_api: AppFactory, published: dict[str, Path], cli_env: dict[str, str], tmp_path: Path
) -> None:
    indexes = tmp_path / "indexes"
    api = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"],
        repository_passphrase=PASSPHRASE,
        index_dir=str(indexes),
    )
    _repository_app(api).served.directory.smallest = 1000  # these indexes are small
    packages = fetch(api, "/repo/Packages.gz")  # no extension here: from memory
    release = Release(fetch(api, "/repo/Release").text)
    [digest] = [e["sha256"] for e in release["SHA256"] if e["name"] == "Packages"]
    for path in ("/repo/Packages", f"/repo/by-hash/SHA256/{digest}"):
        start, body = _drive(api, path)
        assert start["status"] == 200
        assert body["type"] == "http.response.pathsend"
        sent = Path(body["path"])
        assert sent.parent == indexes
        assert hashlib.sha256(sent.read_bytes()).hexdigest() == digest
        assert dict(start["headers"])[b"content-length"] == str(sent.stat().st_size).encode()
    start, body = _drive(api, "/repo/Packages.gz")
    assert Path(body["path"]).read_bytes() == packages.content
    # A conditional request is still answered 304, without a body.
    etag = packages.headers["etag"]
    start, body = _drive(api, "/repo/Packages.gz", **{"If-None-Match": etag})
    assert (start["status"], body) == (304, {"type": "http.response.body", "body": b""})
    # Small files, and a file that has gone from the disk, are sent from memory.
    assert _drive(api, "/repo/depictions/com.alpha.free.json")[1]["type"] == "http.response.body"
    Path(_drive(api, "/repo/Packages.gz")[1]["path"]).unlink()
    assert _drive(api, "/repo/Packages.gz")[1] == {
        "type": "http.response.body",
        "body": packages.content,
    }


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within 10 s"
        time.sleep(0.05)  # polling for the rebuild, not timing it


def test_a_publish_is_served_after_a_rebuild_and_old_by_hash_files_stay(
    repo: Api, pkgcat: Publisher, tmp_path: Path
) -> None:
    before = Release(fetch(repo, "/repo/Release").text)
    [old] = [e for e in before["SHA256"] if e["name"] == "Packages.gz"]
    deb = build_deb(tmp_path, "com.alpha.later", "1.0")
    assert pkgcat("publish", str(deb), "--source", "Alpha").exit_code == 0

    def listed() -> bool:
        return b"com.alpha.later" in fetch(repo, "/repo/Packages").content

    wait_for(listed, "the new package in Packages")
    assert fetch(repo, f"/repo/by-hash/SHA256/{old['sha256']}").status_code == 200
    after = Release(fetch(repo, "/repo/Release").text)
    assert parsedate_to_datetime(after["Date"]) >= parsedate_to_datetime(before["Date"])


def test_valid_until_is_set_in_utc_when_configured(
    make_api: AppFactory, published: dict[str, Path], cli_env: dict[str, str]
) -> None:
    api = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"],
        repository_passphrase=PASSPHRASE,
        repository_valid_seconds=7 * 86400,
    )
    release = Release(fetch(api, "/repo/Release").text)
    date = parsedate_to_datetime(release["Date"])
    until = parsedate_to_datetime(release["Valid-Until"])
    assert release["Valid-Until"].endswith(" UTC")
    assert (until - date).total_seconds() == 7 * 86400
    assert until.timestamp() > time.time() + 3 * 86400


def test_sileo_depiction_and_icon(
    make_api: AppFactory, published: dict[str, Path], cli_env: dict[str, str]
) -> None:
    api = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"],
        repository_passphrase=PASSPHRASE,
        repository_url="https://repo.example/repo/",
    )
    listed = {s["Package"]: s for s in stanzas(fetch(api, "/repo/Packages").content)}
    link = listed["com.alpha.new"]["SileoDepiction"]
    assert link == "https://repo.example/repo/depictions/com.alpha.new.json"
    depiction = fetch(api, "/repo/depictions/com.alpha.new.json").json()
    assert depiction["class"] == "DepictionTabView"
    views = depiction["tabs"][0]["views"]
    assert {"class": "DepictionTableTextView", "title": "Version", "text": "0.1"} in views
    icon = fetch(api, "/repo/CydiaIcon.png")
    assert icon.headers["content-type"] == "image/png"
    assert icon.content.startswith(b"\x89PNG\r\n\x1a\n")


def _store_settings(request: pytest.FixtureRequest, cli_env: dict[str, str]) -> dict[str, Any]:
    if request.param == "s3":
        server: S3Server = request.getfixturevalue("s3_server")
        return server.settings(f"test-{uuid.uuid4().hex}")
    return {"blob_dir": cli_env["PKGCAT_BLOB_DIR"]}


def publish_alpha(
    request: pytest.FixtureRequest, pkgcat: Publisher, cli_env: dict[str, str], tmp_path: Path
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Alpha's free and paid package published to the store ``request.param`` names, with a
    signing key: the store's settings and the files."""
    store = _store_settings(request, cli_env)
    cli_env.pop("PKGCAT_BLOB_DIR", None)
    cli_env.update({f"PKGCAT_{k.upper()}": v for k, v in store.items()})
    request.getfixturevalue("signing_key")(cli_env["PKGCAT_DATABASE_URL"])
    files = {
        "free": build_deb(tmp_path, "com.alpha.free", "1.0", payload=secrets.token_hex(40_000)),
        "paid": build_deb(tmp_path, "com.alpha.paid", "2.0"),
    }
    for path in files.values():
        assert pkgcat("publish", str(path), "--source", "Alpha").exit_code == 0
    return store, files


@pytest.fixture(params=("directory", "s3"))
def store_api(
    request: pytest.FixtureRequest,
    make_api: AppFactory,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> tuple[Api, dict[str, Path], list[str]]:
    """Free and paid files published to the directory store or to S3, served; the hook's reports."""
    store, files = publish_alpha(request, pkgcat, cli_env, tmp_path)
    api = make_api(repository_passphrase=PASSPHRASE, **store)
    reports: list[str] = []
    repository = _repository_app(api)

    async def report(entry: PoolEntry, count: int) -> None:
        reports.extend([entry.package] * count)

    repository.on_download = report
    return api, files, reports


def _repository_app(api: Api) -> Any:
    from starlette.routing import Mount

    site = api.http.app.site  # type: ignore[attr-defined]  # the ApiApp under the test client
    [mount] = [r for r in site.routes if isinstance(r, Mount) and r.path == "/repo"]
    return mount.app


def _filenames(api: Api) -> dict[str, str]:
    return {s["Package"]: s["Filename"] for s in stanzas(fetch(api, "/repo/Packages").content)}


def test_a_free_file_downloads_whole_and_by_range(
    store_api: tuple[Api, dict[str, Path], list[str]],
) -> None:
    api, files, reports = store_api
    path = "/repo/" + _filenames(api)["com.alpha.free"]
    data = files["free"].read_bytes()
    whole = fetch(api, path)
    assert whole.status_code == 200
    assert whole.content == data
    assert whole.headers["accept-ranges"] == "bytes"
    assert reports == ["com.alpha.free"]
    part = fetch(api, path, Range="bytes=100-1099")
    assert part.status_code == 206
    assert part.content == data[100:1100]
    assert part.headers["content-range"] == f"bytes 100-1099/{len(data)}"
    assert fetch(api, path, Range=f"bytes={len(data) + 5}-").status_code == 416
    assert api.http.head(path).status_code == 200
    assert reports == ["com.alpha.free"]  # a range short of the end is not a whole download
    rest = fetch(api, path, Range=f"bytes={len(data) - 10}-")
    assert rest.content == data[-10:]
    assert reports == ["com.alpha.free"] * 2  # one that ends the file completes a download


def test_with_redirects_a_whole_free_download_from_s3_goes_to_its_object_counted(
    store_api: tuple[Api, dict[str, Path], list[str]], database_url: str
) -> None:
    api, files, reports = store_api
    repository = _repository_app(api)
    repository.redirect = True  # as PKGCAT_DOWNLOAD_REDIRECT sets it (the apt test's S3 way)
    store = "s3" if repository.served.blobs.name.startswith("s3") else "directory"
    names = _filenames(api)
    path, data = "/repo/" + names["com.alpha.free"], files["free"].read_bytes()
    whole = api.http.get(path, follow_redirects=False)
    if store == "s3":
        assert whole.status_code == 302
        assert whole.headers["cache-control"] == "no-store"
        location = whole.headers["location"]
        assert "X-Amz-Expires=300" in location  # presigned for minutes, not for ever
        assert reports == ["com.alpha.free"]  # counted when redirected
        assert httpx.get(location, timeout=10).content == data
    else:  # the directory store has no address to send a client to: served here
        assert whole.status_code == 200
        assert whole.content == data
        assert reports == ["com.alpha.free"]
    # A range is still served here, and counted when it ends the file.
    rest = api.http.get(path, headers={"Range": f"bytes={len(data) - 10}-"})
    assert (rest.status_code, rest.content) == (206, data[-10:])
    assert reports == ["com.alpha.free"] * 2
    # A paid file is never redirected: its download URL is good for one download.
    paid = "/repo/" + names["com.alpha.paid"]
    engine = engine_for(database_url)
    try:
        grants = Grants(download_key(engine, PASSPHRASE), 120)
    finally:
        engine.dispose()
    answer = api.http.get(grants.make(paid, int(time.time())), follow_redirects=False)
    assert answer.status_code == 200
    assert answer.content == files["paid"].read_bytes()


def test_a_paid_file_needs_a_signed_single_use_url(
    store_api: tuple[Api, dict[str, Path], list[str]], database_url: str
) -> None:
    api, files, reports = store_api
    path = "/repo/" + _filenames(api)["com.alpha.paid"]
    refused = fetch(api, path)
    assert refused.status_code == 402
    assert "needs a download URL" in refused.text
    engine = engine_for(database_url)
    try:
        grants = Grants(download_key(engine, PASSPHRASE), 120)
    finally:
        engine.dispose()
    now = int(time.time())
    url = grants.make(path, now)
    assert "grant=" in url
    assert PASSPHRASE not in url
    first = fetch(api, url)
    assert first.status_code == 200
    assert first.content == files["paid"].read_bytes()
    assert reports == ["com.alpha.paid"]
    again = fetch(api, url)
    assert again.status_code == 410
    assert "used already" in again.text
    tampered = grants.make(path, now).replace("signature=", "signature=A")[:-1]
    assert fetch(api, tampered).status_code == 403
    other_file = grants.make("/repo/" + _filenames(api)["com.alpha.free"], now)
    assert fetch(api, path + "?" + other_file.partition("?")[2]).status_code == 403
    expired = grants.make(path, now - 1000)
    assert fetch(api, expired).status_code == 410
    assert reports == ["com.alpha.paid"]


def test_an_empty_repository_is_dated_by_its_first_source_not_1970(
    make_api: AppFactory, catalogue: dict[str, str], database_url: str, blob_dir: Path
) -> None:
    """A catalogue with sources but no file and no signing key (the demo's, before anything is
    published): its Release says when the catalogue began."""
    api = make_api(blob_dir=str(blob_dir))
    release = Release(fetch(api, "/repo/Release").text)
    began = scalar(database_url, "SELECT min(created_at) FROM sources")
    assert began > 0
    assert parsedate_to_datetime(release["Date"]).timestamp() == began


def test_a_repository_with_no_source_and_no_key_is_dated_by_its_build() -> None:
    """Nothing to date it by and nothing signed (so nothing two builds must agree on)."""
    before = int(time.time())
    built = build(Snapshot(1, [], 0, 0), Identity("pkgcat", 0, None), None)
    date = parsedate_to_datetime(Release(built.files["Release"].body.decode())["Date"])
    assert before <= date.timestamp() <= time.time()


def _with_page(database_url: str, package: str, **columns: str) -> None:
    """Set catalogue columns of a package, as an import or the operator would."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            sets = ", ".join(f"{name} = :{name}" for name in columns)
            db.execute(
                text(f"UPDATE packages SET {sets} WHERE package = :package"),  # noqa: S608  # names written here
                {"package": package, **columns},
            )
    finally:
        engine.dispose()


def test_every_package_has_a_web_depiction_that_zebra_opens_and_that_escapes_everything(
    make_api: AppFactory, published: dict[str, Path], cli_env: dict[str, str]
) -> None:
    """Zebra v1 opens a package's page from ``Depiction`` alone (zbrateam/Zebra branch v1,
    Zebra/Parsel/parsel.c:376 at c615ab4); the catalogue's icon becomes ``Icon``
    (parsel.c:393) where the file has none."""
    url = cli_env["PKGCAT_DATABASE_URL"]
    _with_page(
        url,
        "com.alpha.paid",
        name='<script>alert("name")</script>',
        long_description="First <img src=x onerror=alert(1)> line\n\nSecond paragraph",
        screenshots='["https://shots.example/1.png", "javascript:alert(1)", "http://plain/2.png"]',
        icon="https://icons.example/paid.png",
        price="1.99",
    )
    api = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"],
        repository_passphrase=PASSPHRASE,
        repository_url="https://repo.example/repo/",
    )
    listed = {s["Package"]: s for s in stanzas(fetch(api, "/repo/Packages").content)}
    paid = listed["com.alpha.paid"]
    assert paid["Depiction"] == "https://repo.example/repo/depictions/com.alpha.paid.html"
    assert paid["Icon"] == "https://icons.example/paid.png"
    page = fetch(api, "/repo/depictions/com.alpha.paid.html")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "script-src" not in policy  # none at all, under default-src 'none'
    body = page.text
    assert "<script>" not in body
    assert "&lt;script&gt;" in body
    assert "<img src=x" not in body
    assert '<img src="https://shots.example/1.png"' in body
    assert "javascript:" not in body
    assert "http://plain" not in body
    assert "1.99 USD" in body
    assert "<p>Second paragraph</p>" in body
    free = fetch(api, "/repo/depictions/com.alpha.free.html").text
    assert "USD" not in free  # a free package has no price, nor how to buy it


def test_each_source_s_release_names_it_and_the_catalogue_keeps_its_label(repo: Api) -> None:
    """Sileo names a repository by its Release Origin and Label."""
    whole = Release(fetch(repo, "/repo/Release").text)
    alpha = Release(fetch(repo, "/repo/sources/Alpha/Release").text)
    beta = Release(fetch(repo, "/repo/sources/Beta/Release").text)
    assert (whole["Origin"], whole["Label"]) == ("pkgcat", "pkgcat")
    assert (alpha["Origin"], alpha["Label"]) == ("Alpha", "Alpha")
    assert (beta["Origin"], beta["Label"]) == ("Beta", "Beta")


def test_a_repository_of_all_files_lists_the_devices_architectures(
    make_api: AppFactory, pkgcat: Publisher, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """apt skips a repository whose Release does not list the device's architecture."""
    assert (
        pkgcat(
            "publish",
            str(build_deb(tmp_path, "com.alpha.theme", "1.0", "all")),
            "--source",
            "Alpha",
        ).exit_code
        == 0
    )
    api = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"])
    release = Release(fetch(api, "/repo/sources/Alpha/Release").text)
    assert release["Architectures"].split() == ["iphoneos-arm", "iphoneos-arm64"]


def test_sileo_featured_is_a_valid_document_in_every_repository(repo: Api) -> None:
    """Sileo reads ``REPO/sileo-featured.json`` and shows banners only for this class
    (Sileo/Sileo Sileo/UI/Packages/CategoryViewController.swift:140-149 at c9f7015)."""
    for path in ("/repo/sileo-featured.json", "/repo/sources/Alpha/sileo-featured.json"):
        answer = fetch(repo, path)
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        document = answer.json()
        assert document["class"] == "FeaturedBannersView"
        assert document["banners"] == []


def test_banners_the_operator_sets_are_served_in_sileo_featured(
    make_api: AppFactory, published: dict[str, Path], pkgcat: Publisher, cli_env: dict[str, str]
) -> None:
    """Each banner as Sileo's FeaturedBannersView reads one: ``url`` (its image), ``title`` and
    ``package`` (Sileo/Sileo Sileo/UI/Packages/CategoryViewController.swift:140-149 at c9f7015;
    Zebra's featured view reads the same three)."""
    image = "https://cdn.alpha.example/banner.png"
    made = pkgcat(
        "repo", "banner", "set", "--source", "Alpha", "--package", "com.alpha.paid",
        "--image", image, "--title", "Paid, and worth it",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    beta = pkgcat(
        "repo", "banner", "set", "--source", "Beta", "--package", "com.beta.paid",
        "--image", "https://cdn.beta.example/b.png", "--title", "Beta's",
    )  # fmt: skip
    assert beta.exit_code == 0, beta.output
    api = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], repository_passphrase=PASSPHRASE)
    alpha = fetch(api, "/repo/sources/Alpha/sileo-featured.json").json()
    assert alpha["class"] == "FeaturedBannersView"
    assert [(b["url"], b["title"], b["package"]) for b in alpha["banners"]] == [
        (image, "Paid, and worth it", "com.alpha.paid")
    ]
    whole = fetch(api, "/repo/sileo-featured.json").json()
    assert [b["package"] for b in whole["banners"]] == ["com.alpha.paid", "com.beta.paid"]
    listed = json.loads(pkgcat("repo", "banner", "list", "--json").stdout)
    assert [(b["source"], b["position"], b["package"]) for b in listed] == [
        ("Alpha", 1, "com.alpha.paid"),
        ("Beta", 1, "com.beta.paid"),
    ]
    assert (
        pkgcat(
            "repo", "banner", "remove", "--source", "Beta", "--package", "com.beta.paid"
        ).exit_code
        == 0
    )
    assert pkgcat("repo", "banner", "list", "--json", "--source", "Beta").stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("package", "image", "title", "said"),
    [
        ("com.alpha.paid", "http://cdn.example/b.png", "Fine", "image: "),
        ("com.alpha.paid", "javascript:alert(1)", "Fine", "image: "),
        ("com.alpha.paid", "https://cdn.example/b.png", "<script>x</script>", "title: holds HTML"),
        ("com.beta.paid", "https://cdn.example/b.png", "Fine", "has no package 'com.beta.paid'"),
        ("com.alpha.none", "https://cdn.example/b.png", "Fine", "has no package"),
    ],
)
def test_a_banner_that_breaks_a_rule_is_refused_naming_it(
    pkgcat: Publisher, database_url: str, package: str, image: str, title: str, said: str
) -> None:
    refused = pkgcat(
        "repo", "banner", "set", "--source", "Alpha", "--package", package,
        "--image", image, "--title", title,
    )  # fmt: skip
    assert refused.exit_code == 2
    assert said in refused.output
    assert scalar(database_url, "SELECT count(*) FROM featured_banners") == 0


def test_a_signed_repository_with_no_source_is_dated_by_its_key_not_the_clock() -> None:
    """Signed, two workers must build the same Release: never dated by the build."""
    built = build(Snapshot(1, [], 1_700_000_000, 0), Identity("pkgcat", 0, None), None)
    date = parsedate_to_datetime(Release(built.files["Release"].body.decode())["Date"])
    assert date.timestamp() == 1_700_000_000
