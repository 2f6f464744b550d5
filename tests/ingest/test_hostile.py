"""Hostile repositories, built by the tests: bombs, endless and dripping files, escapes, traps.

Each refused import leaves the catalogue exactly as it was (compared table by table,
on SQLite and PostgreSQL); each refused fetch names the file and the setting that
bounds it; no request reaches an address the operator did not allow.
"""

from __future__ import annotations

import gzip
import json
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from pkgcat.ingest import FetchError, ImportSummary, IngestError
from pkgcat.ingest.errors import LimitError
from pkgcat.ingest.limits import ImportLimits
from pkgcat.net.addresses import Allowance
from pkgcat.net.fetcher import Policy
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests.hostile import Hostile, body, drip, endless, gzip_bomb, redirect
from tests.ingest.conftest import LOCAL, Importer, package_row, release, stanza, write_repo

URL = "https://repo.example/"
MIB = 1024 * 1024
SMALL = ImportLimits(file_bytes=4 * MIB, index_bytes=4 * MIB, depiction_bytes=64 * 1024)
Start = Callable[..., Hostile]


def catalogue(admin: CatalogueAdmin) -> dict[str, list[Any]]:
    """Every row of the catalogue's tables, to compare before and after an import."""
    with admin.engine.connect() as db:
        return {
            table.name: sorted(map(tuple, db.execute(select(table))), key=repr)
            for table in (t.sources, t.package_records, t.packages)
        }


def imported(admin: CatalogueAdmin, load: Importer, tmp_path: Path) -> dict[str, list[Any]]:
    """A source of two packages, imported; the catalogue as it then is."""
    write_repo(tmp_path / "good", [stanza("com.example.a"), stanza("com.example.b")])
    load(tmp_path / "good", source="Repo", url=URL)
    return catalogue(admin)


def served(hostile: Start, files: dict[str, bytes | Any]) -> Hostile:
    """A flat repository of ``files`` (name to bytes, or to a hostile answer)."""
    routes = {
        f"/{name}": body(data) if isinstance(data, bytes) else data for name, data in files.items()
    }
    return hostile(routes)


# Bombs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "compress"),
    [("Packages.xz", lzma.compress), ("Packages.gz", gzip.compress)],
)
def test_a_decompression_bomb_is_refused_and_changes_nothing(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, name: str, compress: Any
) -> None:
    before = imported(admin, load, tmp_path)
    bomb = compress(b"\n" * (64 * MIB))  # tens of KiB that expand to 64 MiB
    (tmp_path / "bomb").mkdir()
    (tmp_path / "bomb" / name).write_bytes(bomb)
    (tmp_path / "bomb" / "Release").write_bytes(release({name: bomb}))
    with pytest.raises(LimitError) as refused:
        load(tmp_path / "bomb", source="Repo", limits=SMALL)
    assert str(refused.value) == (
        f"{name}: more than {4 * MIB} bytes once decompressed (PKGCAT_INDEX_MAX_BYTES)"
    )
    assert catalogue(admin) == before


def test_a_content_encoding_bomb_is_refused_and_changes_nothing(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, hostile: Start
) -> None:
    before = imported(admin, load, tmp_path)
    server = served(
        hostile, {"Packages": body(gzip_bomb(64 * MIB), headers={"Content-Encoding": "gzip"})}
    )
    with pytest.raises(
        LimitError, match=r"/Packages: more than 4194304 bytes once its Content-Enc"
    ):
        load(server.url(), source="Repo", fetch=LOCAL, limits=SMALL)
    assert catalogue(admin) == before


def test_an_endless_index_is_refused_at_the_cap(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, hostile: Start
) -> None:
    before = imported(admin, load, tmp_path)
    server = served(hostile, {"Packages": endless()})
    with pytest.raises(LimitError) as refused:
        load(server.url(), source="Repo", fetch=LOCAL, limits=SMALL)
    assert str(refused.value) == (
        f"{server.url('/Packages')}: more than {4 * MIB} bytes (PKGCAT_FETCH_MAX_BYTES)"
    )
    assert catalogue(admin) == before


def test_a_dripping_index_is_refused_at_its_deadline(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, hostile: Start
) -> None:
    before = imported(admin, load, tmp_path)
    server = served(hostile, {"Packages": drip(every=0.05)})
    limits = ImportLimits(file_deadline=0.5)
    with pytest.raises(LimitError) as refused:
        load(server.url(), source="Repo", fetch=LOCAL, limits=limits)
    assert str(refused.value) == (
        f"{server.url('/Packages')}: not done within its deadline of 0.5 s (PKGCAT_FETCH_DEADLINE)"
    )
    assert catalogue(admin) == before


def test_an_index_whose_every_stanza_is_skipped_sets_nothing_offline(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    before = imported(admin, load, tmp_path)
    # Within the index cap, but one stanza past the stanza cap: no record at all.
    write_repo(tmp_path / "huge", [stanza("com.example.a", Description="x" * (300 * 1024))])
    with pytest.raises(IngestError, match=r"none of the 1 stanzas read makes a record"):
        load(tmp_path / "huge", source="Repo")
    assert catalogue(admin) == before


# Stanzas ---------------------------------------------------------------------------------------


def test_stanzas_past_their_caps_are_skipped_with_the_reason(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    fields = {f"X_Field_{n}": "1" for n in range(120)}
    write_repo(
        tmp_path,
        [
            stanza("com.example.good"),
            stanza("com.example.huge", Description="x" * (300 * 1024)),
            stanza("com.example.wide", **fields),
        ],
    )
    summary = load(tmp_path, url=URL)
    reasons = {s["package"]: s["reason"] for s in summary.as_dict()["skipped"]}
    assert reasons["com.example.huge"].endswith(
        "bytes, over the limit of 262144 (PKGCAT_STANZA_MAX_BYTES)"
    )
    assert (
        reasons["com.example.wide"]
        == "126 fields, over the limit of 100 (PKGCAT_STANZA_MAX_FIELDS)"
    )
    assert package_row(admin, "com.example.good").online


@pytest.mark.parametrize(
    ("value", "shown"),
    [("a\0b", "U+0000 (NUL)"), ("\x1b]2;owned\x07", "U+001B (ESC)"), ("a\x7fb", "U+007F (DEL)")],
)
def test_a_stanza_with_a_control_character_is_skipped_alike_on_both_databases(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, value: str, shown: str
) -> None:
    write_repo(
        tmp_path,
        [stanza("com.example.good"), stanza("com.example.bad", Name="x", Description=value)],
    )
    summary = load(tmp_path, url=URL)
    (skip,) = summary.as_dict()["skipped"]
    assert skip["package"] == "com.example.bad"
    assert skip["reason"] == (
        f"holds the control character {shown} on line 8 of the stanza (field 'Description')"
    )
    assert [row.package for row in records_of(admin)] == ["com.example.good"]


def records_of(admin: CatalogueAdmin) -> list[Any]:
    with admin.engine.connect() as db:
        return list(db.execute(select(t.package_records)))


def test_tabs_and_line_breaks_stay_in_a_description(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a", Description="short\n\tindented\r\n more")])
    assert load(tmp_path, url=URL).as_dict()["skipped"] == []
    assert "\tindented" in package_row(admin, "com.example.a").long_description


def test_a_release_label_with_control_characters_is_not_used(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")])
    text = (tmp_path / "Release").read_bytes().replace(b"Test Label", b"Evil\x1b[2J")
    (tmp_path / "Release").write_bytes(text)
    summary = load(tmp_path, url=URL)
    assert "Release: Label holds the control character U+001B (ESC); not used" in summary.warnings
    with admin.engine.connect() as db:
        assert db.execute(select(t.sources.c.label)).scalar_one() == "Test Origin"


# Addresses -------------------------------------------------------------------------------------


def test_a_loopback_repository_needs_the_operator_s_allowance(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, hostile: Start
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")])
    server = served(
        hostile, {name: (tmp_path / name).read_bytes() for name in ("Packages", "Release")}
    )
    with pytest.raises(FetchError) as refused:
        load(server.url(), source="Repo")
    assert str(refused.value) == (
        f"{server.url('/InRelease')}: 127.0.0.1 is a loopback address; "
        f"PKGCAT_FETCH_ALLOW=127.0.0.1:{server.port} would allow it"
    )
    assert server.connections == 0
    allowed = Policy(allow=Allowance.parse(f"127.0.0.1:{server.port}"))
    assert load(server.url(), source="Repo", fetch=allowed).outcome.packages_added == 1


def test_a_redirect_of_a_repository_file_to_loopback_is_refused(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, hostile: Start
) -> None:
    inside = hostile({"/Packages": body(stanza("com.example.inside").encode())})
    outside = served(hostile, {"Packages": redirect(inside.url("/Packages"))})
    allowed = Policy(allow=Allowance.parse(f"127.0.0.1:{outside.port}"))
    with pytest.raises(
        FetchError, match=rf"^{inside.url('/Packages')}: 127\.0\.0\.1 is a loopback"
    ):
        load(outside.url(), source="Repo", fetch=allowed)
    assert inside.connections == 0


def depiction(*shots: str) -> bytes:
    view = {"class": "DepictionScreenshotsView", "screenshots": [{"url": s} for s in shots]}
    return json.dumps({"tabs": [{"views": [view]}]}).encode()


def test_in_repo_mode_a_depiction_never_leaves_the_repository(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, hostile: Start
) -> None:
    # The inside server would answer; only the repository's own prefix may be read.
    inside = hostile(
        {"/x": body(depiction("http://inside/leak.png")), "/y": body(depiction("http://inside/2"))}
    )
    repository = hostile()
    base = repository.url("/slash/")
    escape = f"{base}//127.0.0.1:{inside.port}/x"  # urljoin would read 127.0.0.1:<inside>/x
    dotted = f"{base}../../127.0.0.1:{inside.port}/x"
    redirected = f"{base}sileo/away.json"
    repository.route("/slash/sileo/away.json", redirect(inside.url("/y")))
    index = [
        stanza("com.example.escape", SileoDepiction=escape),
        stanza("com.example.dotted", SileoDepiction=dotted),
        stanza("com.example.redirected", SileoDepiction=redirected),
    ]
    write_repo(tmp_path, index)
    repository.route("/slash/Packages", body((tmp_path / "Packages").read_bytes()))
    # Every port of 127.0.0.1 allowed: what stops the escape is the repository's prefix.
    summary = load(base, source="Repo", fetch=LOCAL)
    assert inside.connections == 0
    for package in ("com.example.escape", "com.example.dotted", "com.example.redirected"):
        assert package_row(admin, package).screenshots == "[]"
    assert summary.outcome.records_added == 3
    # The escape, normalised, is a path of the repository (not found there); the dotted
    # path leads out of it (not read); the redirect leads out of it (not followed).
    assert "screenshots: 2 depiction(s) could not be read, e.g. " in summary.warnings[1]
    assert summary.warnings[2].startswith("screenshots: 1 depiction(s) outside the repository")


def test_depictions_all_refuses_private_addresses_without_a_connection(
    tmp_path: Path,
    load: Importer,
    admin: CatalogueAdmin,
    hostile: Start,
    connect_attempts: list[tuple[str, int]],
) -> None:
    listener, listener6 = hostile(), hostile(host="::1")
    addresses = [
        f"http://127.0.0.1:{listener.port}/d.json",
        f"http://localhost:{listener.port}/d.json",
        f"http://[::1]:{listener6.port}/d.json",
        "http://169.254.169.254/latest/meta-data/d.json",
    ]
    write_repo(
        tmp_path, [stanza(f"com.example.p{n}", SileoDepiction=a) for n, a in enumerate(addresses)]
    )
    summary = load(tmp_path, url=URL, depictions="all")
    assert (listener.connections, listener6.connections) == (0, 0)
    assert connect_attempts == []
    assert summary.outcome.records_added == 4
    assert "4 depiction(s) could not be read" in " ".join(summary.warnings)


def test_a_recursion_bomb_depiction_is_a_warning_not_a_stopped_import(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    (tmp_path / "sileo").mkdir(parents=True)
    (tmp_path / "sileo" / "deep.json").write_text("[" * 1000 + "]" * 1000)
    (tmp_path / "sileo" / "fine.json").write_bytes(depiction("shots/1.png"))
    write_repo(
        tmp_path,
        [
            stanza("com.example.deep", SileoDepiction="./sileo/deep.json"),
            stanza("com.example.fine", SileoDepiction="./sileo/fine.json"),
        ],
    )
    summary: ImportSummary = load(tmp_path, url=URL)
    assert summary.outcome.records_added == 2
    (warning,) = [w for w in summary.warnings if w.startswith("screenshots")]
    assert warning.endswith(
        f"{URL}sileo/deep.json: nested deeper than 64 levels (PKGCAT_DEPICTION_MAX_DEPTH)"
    )
    assert json.loads(package_row(admin, "com.example.fine").screenshots) == [
        f"{URL}sileo/shots/1.png"
    ]


def test_a_depiction_past_its_cap_is_a_warning(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    (tmp_path / "sileo").mkdir(parents=True)
    (tmp_path / "sileo" / "big.json").write_bytes(depiction("a.png") + b" " * (64 * 1024))
    write_repo(tmp_path, [stanza("com.example.big", SileoDepiction="./sileo/big.json")])
    summary = load(tmp_path, url=URL, limits=SMALL)
    assert summary.warnings[-1].endswith(
        f"big.json: more than {64 * 1024} bytes (PKGCAT_DEPICTION_MAX_BYTES)"
    )
    assert package_row(admin, "com.example.big").screenshots == "[]"
