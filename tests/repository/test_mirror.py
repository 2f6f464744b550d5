"""`pkgcat import-repo --mirror`: an imported repository's .debs fetched, checked and stored.

A flat repository of real .debs (built by dpkg-deb) with a Packages index written as a
repository would write it; read from disk, and over http through the safe fetcher.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from typer.testing import Result

from tests.conftest import AppFactory
from tests.debs import build_deb
from tests.ingest.conftest import serve as serve  # the fixture: a directory over http
from tests.repository.conftest import Publisher, scalar
from tests.repository.test_served import fetch, stanzas


def flat_repository(root: Path, tmp_path: Path, *, extra: str = "") -> dict[str, Path]:
    """``root`` with two .debs under ``debs/`` and their Packages index; the files by package."""
    (root / "debs").mkdir(parents=True)
    files: dict[str, Path] = {}
    stanzas = []
    for package, version in (("org.mirror.one", "1.0"), ("org.mirror.two", "2.1-1")):
        built = build_deb(tmp_path, package, version, "iphoneos-arm64", payload=package)
        target = root / "debs" / built.name
        target.write_bytes(built.read_bytes())
        files[package] = target
        control = subprocess.run(
            ["dpkg-deb", "-f", str(target)], capture_output=True, text=True, check=True
        ).stdout.rstrip("\n")
        data = target.read_bytes()
        stanzas.append(
            f"{control}\n{extra}Filename: debs/{target.name}\nSize: {len(data)}\n"
            f"MD5sum: {hashlib.md5(data, usedforsecurity=False).hexdigest()}\n"
            f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
        )
    (root / "Packages").write_text("\n".join(stanzas))
    return files


def mirrored(pkgcat: Publisher, repo: Path, *more: str) -> Result:
    """``pkgcat import-repo REPO --mirror`` into the source Mirror, at its public address."""
    return pkgcat(
        "import-repo", str(repo), "--source", "Mirror", "--url", "https://mirror.example/",
        "--mirror", *more,
    )  # fmt: skip


def blobs_of(blob_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in blob_dir.rglob("*") if p.is_file()}


def test_the_files_move_in_are_served_and_are_held_at_the_next_run(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path, make_api: AppFactory
) -> None:
    repo = tmp_path / "repo"
    files = flat_repository(repo, tmp_path, extra="Depiction: https://mirror.example/one\n")
    done = mirrored(pkgcat, repo)
    assert done.exit_code == 0, done.output
    assert "files: 2 stored" in done.output
    stored = blobs_of(blob_dir)
    for path in files.values():
        assert stored[hashlib.sha256(path.read_bytes()).hexdigest()] == path.read_bytes()
    assert scalar(database_url, "SELECT count(*) FROM deb_files") == 2
    # The served stanza is the one the repository served (its Depiction kept).
    control = scalar(database_url, "SELECT control FROM deb_files WHERE package = 'org.mirror.one'")
    assert "Depiction: https://mirror.example/one" in control
    # ...and the served repository lists and serves the very bytes.
    api = make_api(blob_dir=str(blob_dir))
    listed = {s["Package"]: s for s in stanzas(fetch(api, "/repo/Packages").content)}
    for package, path in files.items():
        assert listed[package]["SHA256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert fetch(api, f"/repo/{listed[package]['Filename']}").content == path.read_bytes()
    again = mirrored(pkgcat, repo, "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["mirror"] == {"stored": 0, "held": 2, "bytes": 0, "refused": []}


def test_a_bad_file_is_named_with_its_reason_and_nothing_of_it_is_stored(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    repo = tmp_path / "repo"
    files = flat_repository(repo, tmp_path)
    tampered = files["org.mirror.two"]
    data = tampered.read_bytes()
    tampered.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # same size, other bytes
    done = mirrored(pkgcat, repo)
    assert done.exit_code == 1
    assert "not mirrored: org.mirror.two 2.1-1 (iphoneos-arm64): its SHA256 is " in done.output
    assert "1 file(s) not mirrored" in done.output
    assert scalar(database_url, "SELECT package FROM deb_files") == "org.mirror.one"
    assert list(blobs_of(blob_dir)) == [
        hashlib.sha256(files["org.mirror.one"].read_bytes()).hexdigest()
    ]


def test_over_http_the_files_come_through_the_safe_fetcher(
    pkgcat: Publisher,
    tmp_path: Path,
    database_url: str,
    serve: Callable[[Path], str],
    cli_env: dict[str, str],
) -> None:
    repo = tmp_path / "repo"
    flat_repository(repo, tmp_path)
    address = serve(repo)
    refused = pkgcat("import-repo", address, "--source", "Mirror", "--mirror")
    assert refused.exit_code == 1  # a loopback address, not allowed: nothing read at all
    assert "PKGCAT_FETCH_ALLOW" in refused.output
    cli_env["PKGCAT_FETCH_ALLOW"] = "127.0.0.1"
    done = pkgcat("import-repo", address, "--source", "Mirror", "--mirror")
    assert done.exit_code == 0, done.output
    assert "files: 2 stored" in done.output
    assert scalar(database_url, "SELECT count(*) FROM deb_files") == 2
