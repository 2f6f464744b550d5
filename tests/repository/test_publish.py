"""`pkgcat publish`: a .deb checked whole before anything is stored, then shown in details."""

from __future__ import annotations

import secrets
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from pkgcat.ingest import ImportOptions, import_repository
from pkgcat.repository.debs import DebInfo, DebLimits, inspect_deb
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from pkgcat.storage.served import read_served
from pkgcat.storage.writes.published import KeyTaken, write_published
from pkgcat.versions import Preference
from tests.conftest import Api
from tests.debs import ZEROS, build_deb, deb_bytes, zeros_tar
from tests.ingest.conftest import stanza, write_repo
from tests.repository.conftest import Publisher, scalar
from tests.repository.test_debs import REFUSED_BY_DPKG


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


def _upper_case(tmp_path: Path) -> Path:
    # Another source's package in capitals: apt would take it for an upgrade of com.beta.paid.
    return build_deb(tmp_path, "COM.BETA.PAID", "9.0")


def _written(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "built.deb"
    path.write_bytes(data)
    return path


def _dpkg_refuses(case: str) -> Callable[[Path], Path]:
    """A case of tests/repository/test_debs.py that dpkg-deb refuses too, as a file."""
    make = REFUSED_BY_DPKG[case][0]
    return lambda tmp_path: _written(tmp_path, make(deb_bytes()))


def _control_bomb(tmp_path: Path) -> Path:
    return _written(tmp_path, deb_bytes(control_tar=zeros_tar("./control", 32 * ZEROS, ".gz")))


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
    "no data archive": (_no_data, "not a .deb: it has no data.tar member"),
    "the last 10 bytes cut off": (
        _dpkg_refuses("the last 10 bytes cut off"),
        "not a .deb: cut short: member 'data.tar.gz'",
    ),
    "data.tar before control.tar": (
        _dpkg_refuses("data.tar before control.tar"),
        "not a .deb: data.tar.gz comes before control.tar",
    ),
    "a control file of 512 MiB": (
        _control_bomb,
        f"control: {32 * ZEROS} bytes, over the limit of 262144 (PKGCAT_STANZA_MAX_BYTES)",
    ),
    "bad version": (_bad_version, "Version: '1.0_beta' is not a Debian version"),
    "missing field": (_no_description, "missing required field Description"),
    "another source's package": (_other_source, "package 'com.beta.paid' belongs to source 'Beta'"),
    "upper-case id": (_upper_case, "control: Package: 'COM.BETA.PAID' must be lower case"),
    # The device's own packages, and fields that make apt install a package by itself
    # (apt-pkg/upgrade.cc installs every Essential package dist-upgrade finds).
    "the device's apt": (
        lambda tmp_path: build_deb(tmp_path, "apt", "99:9.9"),
        "control: Package: package 'apt' is reserved",
    ),
    "a fake firmware": (
        lambda tmp_path: build_deb(tmp_path, "firmware", "99"),
        "package 'firmware' is reserved",
    ),
    "a virtual cy+ package": (
        lambda tmp_path: build_deb(tmp_path, "cy+cpu.arm64", "1.0"),
        "package 'cy+cpu.arm64' is reserved",
    ),
    "Essential: yes": (
        _rendered({"Essential": "yes"}),
        "control: Essential: 'yes' would make apt install or keep the package by itself",
    ),
    "Protected: yes": (_rendered({"Protected": "yes"}), "control: Protected: 'yes'"),
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


def test_a_data_tar_past_the_unpacked_bound_is_refused(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path, cli_env: dict[str, str]
) -> None:
    # 32 MiB of zeros in 1.5 KiB of zstd; the bound's default is 1 GiB (test_deb_bombs_memory.py).
    path = _written(tmp_path, deb_bytes(data_ext=".zst", data=zeros_tar("z", 2 * ZEROS, ".zst")))
    cli_env["PKGCAT_PUBLISH_MAX_UNPACKED_BYTES"] = str(ZEROS)
    before = state(database_url, blob_dir)
    result = pkgcat("publish", str(path), "--source", "Alpha")
    assert (result.exit_code, result.output) == (
        1,
        f"error: refused: data.tar.zst: more than {ZEROS} bytes once decompressed "
        "(PKGCAT_PUBLISH_MAX_UNPACKED_BYTES)\n",
    )
    assert state(database_url, blob_dir) == before
    cli_env["PKGCAT_PUBLISH_MAX_UNPACKED_BYTES"] = str(3 * ZEROS)
    assert pkgcat("publish", str(path), "--source", "Alpha").exit_code == 0


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


# Ids and versions as apt and dpkg compare them ---------------------------------------------------


def _import_mixed_case(admin: CatalogueAdmin, tmp_path: Path) -> None:
    """Source Gamma, imported from a repository whose id has capitals (as some in the wild do)."""
    root = write_repo(tmp_path / "gamma", [stanza("Com.Gamma.Mixed", "1.0")])
    options = ImportOptions(source="Gamma", url="https://gamma.example/", jobs=1)
    import_repository(admin.engine, str(root), options)


def test_another_sources_id_in_another_letter_case_is_refused_naming_its_source(
    pkgcat: Publisher, admin: CatalogueAdmin, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    _import_mixed_case(admin, tmp_path)
    before = state(database_url, blob_dir)
    deb = build_deb(tmp_path, "com.gamma.mixed", "2.0")
    result = pkgcat("publish", str(deb), "--source", "Alpha")
    assert result.exit_code == 1
    assert "package 'com.gamma.mixed' belongs to source 'Gamma' (as 'Com.Gamma.Mixed'" in (
        " ".join(result.output.split())
    )
    # Nor may the owner add a second spelling of its own id: apt would read one package.
    own = pkgcat("publish", str(deb), "--source", "Gamma")
    assert own.exit_code == 1
    assert "is 'Com.Gamma.Mixed' in source 'Gamma' already" in " ".join(own.output.split())
    assert state(database_url, blob_dir) == before


def test_the_database_refuses_a_second_row_of_an_id_in_another_letter_case(
    pkgcat: Publisher, database_url: str
) -> None:
    # Whatever reads raced before it: the unique index of migration 0011 decides.
    insert = (
        "INSERT INTO packages (package, source_id, name, version, released_at, created_at,"
        " updated_at) VALUES (:package, 1, 'x', '1.0', 0, 0, 0)"
    )
    engine = engine_for(database_url)
    try:
        with pytest.raises(IntegrityError), engine.begin() as db:
            db.execute(text(insert), {"package": "COM.BETA.PAID"})
        with engine.begin() as db:
            db.execute(text(insert), {"package": "com.alpha.another"})
    finally:
        engine.dispose()


EQUAL_SPELLINGS = ["0:1.0", "1.0-0", "1.00", "01.0"]
"""Versions dpkg finds equal to 1.0 (lib/dpkg/version.c, dpkg_version_compare: a missing
epoch is 0, a missing revision compares as "0", digits by their value); python-debian's
debian/debian_support.py, NativeVersion._compare, the comparison used here, agrees."""


@pytest.mark.parametrize("spelling", ["1.0", *EQUAL_SPELLINGS])
def test_the_same_version_with_other_bytes_is_refused(
    spelling: str, pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    first = build_deb(tmp_path, "com.alpha.fixed", "1.0", payload="one")
    assert pkgcat("publish", str(first), "--source", "Alpha").exit_code == 0
    before = state(database_url, blob_dir)
    second = build_deb(tmp_path, "com.alpha.fixed", spelling, payload="two")
    result = pkgcat("publish", str(second), "--source", "Alpha")
    assert result.exit_code == 1
    # The stored spelling is named, and the one sent when it differs.
    line = " ".join(result.output.split())
    reason = (
        "com.alpha.fixed 1.0 (all) is published already with other bytes; publish a new version"
    )
    assert reason + ("" if spelling == "1.0" else f" ({spelling!r} is the same version)") in line
    assert state(database_url, blob_dir) == before


def test_the_stored_spelling_is_named_whichever_came_first(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    first = build_deb(tmp_path, "com.alpha.epoch", "0:2.1", payload="one")
    assert pkgcat("publish", str(first), "--source", "Alpha").exit_code == 0
    second = build_deb(tmp_path, "com.alpha.epoch", "2.1", payload="two")
    result = pkgcat("publish", str(second), "--source", "Alpha")
    assert result.exit_code == 1
    assert "com.alpha.epoch 0:2.1 (all) is published already" in " ".join(result.output.split())
    # Another architecture, or a version that is not equal, is a file of its own.
    arm = build_deb(tmp_path, "com.alpha.epoch", "2.1", "iphoneos-arm64", payload="two")
    assert pkgcat("publish", str(arm), "--source", "Alpha").exit_code == 0
    newer = build_deb(tmp_path, "com.alpha.epoch", "1:2.1", payload="two")
    assert pkgcat("publish", str(newer), "--source", "Alpha").exit_code == 0
    assert scalar(database_url, "SELECT count(*) FROM deb_files") == 3


def _write(engine: Engine, info: DebInfo) -> bool:
    """Publish's transaction alone, for Alpha (source 1): as if its read had passed already."""
    found = info.digests
    return write_published(
        engine,
        source_id=1,
        source="Alpha",
        record=info.record,
        control=info.control,
        digests=(found.size, found.md5sum, found.sha1, found.sha256, found.sha512),
        preference=Preference(("all",)),
        now=1,
    )


def test_the_write_checks_the_version_again_when_a_publish_raced_its_read(
    pkgcat: Publisher, tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    # The second publish read the catalogue before the first one wrote: its transaction,
    # under the write lock (SQLite) or the package row's lock (PostgreSQL), finds the file.
    second = inspect_deb(
        build_deb(tmp_path, "com.alpha.raced", "0:1.0", payload="two"),
        base_url="https://alpha.example/",
        limits=DebLimits(file_bytes=1 << 20),
    )
    first = build_deb(tmp_path, "com.alpha.raced", "1.0", payload="one")
    assert pkgcat("publish", str(first), "--source", "Alpha").exit_code == 0
    before = state(database_url, blob_dir)
    engine = engine_for(database_url)
    try:
        with pytest.raises(KeyTaken) as taken:
            _write(engine, second)
    finally:
        engine.dispose()
    assert taken.value.owner.stored_version == "1.0"
    assert state(database_url, blob_dir) == before


def test_a_package_kept_from_before_as_a_case_twin_is_not_served(
    pkgcat: Publisher, tmp_path: Path, database_url: str
) -> None:
    # As migration 0011 marks a row whose id differed only in case from an older row's:
    # apt would take its files for the older package's, so the repository lists none of them.
    for package in ("com.alpha.kept", "com.alpha.twin"):
        deb = build_deb(tmp_path, package, "1.0")
        assert pkgcat("publish", str(deb), "--source", "Alpha").exit_code == 0
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(text("UPDATE packages SET case_twin = id WHERE package = 'com.alpha.twin'"))
        served = {file.package for file in read_served(engine).files}
    finally:
        engine.dispose()
    assert "com.alpha.kept" in served
    assert "com.alpha.twin" not in served


def test_two_spellings_of_one_version_sent_at_once_publish_one_file(
    pkgcat: Publisher, tmp_path: Path, database_url: str
) -> None:
    # Both read the catalogue before either writes; the database decides which one stays:
    # the write lock (SQLite), the package row's lock (PostgreSQL). Bounded: 8 rounds.
    assert pkgcat("publish", str(build_deb(tmp_path, "com.alpha.race")), "--source", "Alpha")
    engine = engine_for(database_url)
    rounds = 8

    def attempt(info: DebInfo, barrier: threading.Barrier) -> str:
        barrier.wait(timeout=30)
        try:
            written = _write(engine, info)
        except KeyTaken:
            return "refused"
        return "published" if written else "unchanged"

    try:
        for round_ in range(rounds):
            spellings = (f"2.{round_}", f"0:2.{round_}")
            infos = [
                inspect_deb(
                    build_deb(tmp_path, "com.alpha.race", spelling, payload=spelling),
                    base_url="https://alpha.example/",
                    limits=DebLimits(file_bytes=1 << 20),
                )
                for spelling in spellings
            ]
            barrier = threading.Barrier(2)
            with ThreadPoolExecutor(2) as pool:
                outcomes = sorted(pool.map(attempt, infos, [barrier, barrier]))
            assert outcomes == ["published", "refused"], (round_, outcomes)
    finally:
        engine.dispose()
    assert scalar(database_url, "SELECT count(*) FROM deb_files") == 1 + rounds


def test_the_same_bytes_written_twice_change_nothing_the_second_time(
    catalogue: dict[str, str], tmp_path: Path, database_url: str, blob_dir: Path
) -> None:
    # Two uploads of one file, both past their read: the second transaction finds it and
    # writes nothing (the idempotent answer), rather than failing on the file's key.
    info = inspect_deb(
        build_deb(tmp_path, "com.alpha.again", "0:1.0"),
        base_url="https://alpha.example/",
        limits=DebLimits(file_bytes=1 << 20),
    )
    engine = engine_for(database_url)
    try:
        assert _write(engine, info) is True
        before = state(database_url, blob_dir)
        assert _write(engine, info) is False
    finally:
        engine.dispose()
    assert state(database_url, blob_dir) == before
