"""`pkgcat publish`: a .deb checked whole before anything is stored, then shown in details."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Api
from tests.debs import build_deb
from tests.repository.conftest import Publisher, scalar


def state(database_url: str, blob_dir: Path) -> tuple[object, ...]:
    """Everything a refused publish must leave as it was: rows, generation, blobs."""
    return (
        scalar(database_url, "SELECT count(*) FROM deb_files"),
        scalar(database_url, "SELECT count(*) FROM package_records"),
        scalar(database_url, "SELECT count(*) FROM packages"),
        scalar(database_url, "SELECT value FROM catalogue_generation"),
        sorted(p.name for p in blob_dir.rglob("*") if p.is_file()) if blob_dir.exists() else [],
    )


def test_a_published_package_shows_in_details(
    pkgcat: Publisher, api: Api, tmp_path: Path, database_url: str
) -> None:
    deb = build_deb(tmp_path, "com.alpha.fresh", "2.0~beta1", "iphoneos-arm64", Section="Tweaks")
    result = pkgcat("publish", str(deb), "--source", "Alpha")
    assert result.exit_code == 0, result.output
    assert "published com.alpha.fresh 2.0~beta1 (iphoneos-arm64) to 'Alpha'" in result.output
    body = api.get("/1.0/package/details.json", api.keys["alpha-a"], package="com.alpha.fresh")
    details = body.json()["response"]
    assert details["version"] == "2.0~beta1"
    assert details["size"] == str(deb.stat().st_size)
    assert details["section"] == "Tweaks"
    assert scalar(database_url, "SELECT control FROM deb_files").startswith(
        "Package: com.alpha.fresh\n"
    )


def test_a_newer_version_becomes_the_one_details_shows(
    pkgcat: Publisher, api: Api, tmp_path: Path, database_url: str
) -> None:
    for version in ("1.0", "1.10", "1.9"):
        deb = build_deb(tmp_path, "com.alpha.steps", version)
        assert pkgcat("publish", str(deb), "--source", "Alpha").exit_code == 0
    body = api.get("/1.0/package/details.json", api.keys["alpha-a"], package="com.alpha.steps")
    assert body.json()["response"]["version"] == "1.10"
    assert scalar(database_url, "SELECT count(*) FROM deb_files") == 3


def test_the_same_bytes_twice_change_nothing(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    deb = build_deb(tmp_path, "com.alpha.twice")
    assert pkgcat("publish", str(deb), "--source", "Alpha").exit_code == 0
    before = state(database_url, blob_dir)
    again = pkgcat("publish", str(deb), "--source", "Alpha", "--json")
    assert again.exit_code == 0, again.output
    assert '"created": false' in again.output
    assert state(database_url, blob_dir) == before


def _not_ar(tmp_path: Path) -> Path:
    path = tmp_path / "junk.deb"
    path.write_bytes(b"this is not an archive at all")
    return path


def _no_data(tmp_path: Path) -> Path:
    good = build_deb(tmp_path, "com.alpha.nodata")
    work = tmp_path / "nodata"
    work.mkdir()
    subprocess.run(["ar", "x", str(good)], cwd=work, check=True)
    path = tmp_path / "nodata.deb"
    members = ["debian-binary", *sorted(p.name for p in work.glob("control.tar*"))]
    subprocess.run(["ar", "rc", str(path), *members], cwd=work, check=True)
    return path


def _bad_version(tmp_path: Path) -> Path:
    return build_deb(tmp_path, "com.alpha.badversion", "1.0_beta", nocheck=True)


def _no_description(tmp_path: Path) -> Path:
    return build_deb(tmp_path, "com.alpha.bare", Description="")


def _other_source(tmp_path: Path) -> Path:
    return build_deb(tmp_path, "com.beta.paid", "9.0")


SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
RENDERED_REFUSALS: dict[str, tuple[dict[str, str], str]] = {
    "Depiction javascript:": (
        {"Depiction": "javascript:alert(1)"},
        "Depiction: must be an https URL",
    ),
    "SileoDepiction data:": (
        {"SileoDepiction": "data:text/html,<script>alert(1)</script>"},
        "SileoDepiction: must be an https URL",
    ),
    "Icon file:": ({"Icon": "file:///etc/passwd"}, "Icon: must be an https URL"),
    "Homepage http:": ({"Homepage": "http://plain.example/"}, "Homepage: must be an https URL"),
    "Header quote": (
        {"Header": 'https://x.example/a"onerror="alert(1)'},
        "Header: must be an https URL",
    ),
    "Support javascript:": ({"Support": "javascript:alert(1)"}, "Support: must be an https URL"),
    "Depiction relative": ({"Depiction": "depiction.html"}, "Depiction: must be an https URL"),
    "Name script": ({"Name": f"Tweak {SCRIPT}"}, "Name: holds HTML markup ('<script>')"),
    "Author img onerror": ({"Author": f"Evil {IMG}"}, "Author: holds HTML markup ('<img src="),
    "Description img onerror": (
        {"Description": f"short\n {IMG}"},
        "Description: holds HTML markup ('<img src=",
    ),
    "Description markdown link": (
        {"Description": "short\n see [docs](javascript:alert(1))"},
        "Description: holds a Markdown link to 'javascript:alert'",
    ),
    "Description markdown reference": (
        {"Description": "short\n [docs]\n .\n [docs]: data:text/html,x"},
        "Description: holds a Markdown link to 'data:text/html,x'",
    ),
    "Name U+2028 forging a field": (
        {"Name": "Tweak\u2028Depiction: javascript:alert(1)"},
        "holds U+2028, a line break inside a line",
    ),
    "Name lone CR forging a field": (
        {"Name": "Tweak\rIcon: javascript:alert(1)"},
        "holds U+000D, a line break inside a line",
    ),
}
"""Control fields clients render as links or rich text, each with a vector (the clients'
source that reads them: test_rendered_fields.py), and the refusal naming the field."""


def _rendered(fields: dict[str, str]) -> Callable[[Path], Path]:
    return lambda tmp_path: build_deb(tmp_path, "com.alpha.hostile", nocheck=True, **fields)


REFUSALS = {
    **{case: (_rendered(fields), reason) for case, (fields, reason) in RENDERED_REFUSALS.items()},
    "not an ar archive": (_not_ar, "not a .deb: not an ar archive"),
    "no data archive": (_no_data, "not a .deb"),
    "bad version": (_bad_version, "Version: '1.0_beta' is not a Debian version"),
    "missing field": (_no_description, "missing required field Description"),
    "another source's package": (_other_source, "package 'com.beta.paid' belongs to source 'Beta'"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_file_leaves_no_blob_no_row_and_no_index_change(
    case: str, pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    make, reason = REFUSALS[case]
    path = make(tmp_path)
    before = state(database_url, blob_dir)
    result = pkgcat("publish", str(path), "--source", "Alpha")
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: refused: ")
    assert reason in line
    assert state(database_url, blob_dir) == before


def test_the_same_version_with_other_bytes_is_refused(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    first = build_deb(tmp_path, "com.alpha.fixed", "1.0", payload="one")
    assert pkgcat("publish", str(first), "--source", "Alpha").exit_code == 0
    before = state(database_url, blob_dir)
    second = build_deb(tmp_path, "com.alpha.fixed", "1.0", payload="two")
    result = pkgcat("publish", str(second), "--source", "Alpha")
    assert result.exit_code == 1
    assert "is published already with other bytes" in result.output
    assert state(database_url, blob_dir) == before


def test_a_file_over_the_size_limit_is_refused_unread(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path, cli_env: dict[str, str]
) -> None:
    deb = build_deb(tmp_path, "com.alpha.big", payload=secrets.token_hex(50_000))
    cli_env["PKGCAT_PUBLISH_MAX_BYTES"] = "2048"
    before = state(database_url, blob_dir)
    result = pkgcat("publish", str(deb), "--source", "Alpha")
    assert result.exit_code == 1
    assert "too large" in result.output
    assert state(database_url, blob_dir) == before


def test_an_unknown_source_is_refused(pkgcat: Publisher, tmp_path: Path) -> None:
    result = pkgcat("publish", str(build_deb(tmp_path)), "--source", "Nobody")
    assert result.exit_code == 1
    assert "no source named 'Nobody'" in result.output


def test_a_source_with_published_files_is_deleted_only_with_them(
    pkgcat: Publisher, tmp_path: Path, database_url: str
) -> None:
    assert (
        pkgcat("publish", str(build_deb(tmp_path, "com.alpha.gone")), "--source", "Alpha").exit_code
        == 0
    )
    refused = pkgcat("source", "delete", "Alpha")
    assert refused.exit_code == 1
    assert "1 published file" in refused.output
    assert pkgcat("source", "delete", "Alpha", "--cascade").exit_code == 0
    assert scalar(database_url, "SELECT count(*) FROM deb_files") == 0
