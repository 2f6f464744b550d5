"""The four public jailbreak repositories of shared/fixtures/repos, imported as they are."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from debian.deb822 import Deb822

from pkgcat.ingest import VerificationError
from pkgcat.ingest.control import FIELDS_USED, Stanza, iter_stanzas
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests.ingest.conftest import (
    CHARIZ,
    JULIOVERNE,
    LOCAL,
    NEPETA,
    POOMSMART,
    PUBLIC_URL,
    Importer,
    count,
    package_row,
    records,
    skip_without_repositories,
)

skip_without_repositories()


def test_nepeta_reads_the_best_listed_index_verified_with_sha512(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    summary = load(repos / NEPETA, source="Nepeta", url=PUBLIC_URL[NEPETA])
    data = summary.as_dict()
    # Release lists .xz, .lzma, .bz2, .gz and plain; .xz is the best of them.
    assert data["indexes"] == [{"name": "Packages.xz", "bytes": 166092, "verified": "SHA512"}]
    assert data["records"] | {"read": 185} == {
        "read": 185, "added": 185, "updated": 0, "unchanged": 0, "removed": 0, "skipped": 0,
    }  # fmt: skip
    assert data["packages"]["added"] == 49
    assert summary.warnings == []
    assert (count(admin, t.package_records), count(admin, t.packages)) == (185, 49)


def test_nepeta_records_field_by_field(repos: Path, load: Importer, admin: CatalogueAdmin) -> None:
    load(repos / NEPETA, source="Nepeta", url=PUBLIC_URL[NEPETA])
    row = package_row(admin, "io.ominousness.ass")  # versions 1.0.0 and 1.0.1
    assert (row.name, row.version, row.architecture, row.section) == (
        "AudioSnapshotServer", "1.0.1", "iphoneos-arm", "Development",
    )  # fmt: skip
    assert row.author == "Nepeta <ominousness@protonmail.com>"
    # "MD5Sum" (capital S) in this index, read all the same.
    assert row.md5sum == "ec8351cc96df6443c985c96d94526f92"
    assert row.sha256 == "138ec70652f4b756128dbb24fc52013f010f3fb0f68c4e8cc5675753f7508bd7"
    assert row.size == 5760
    older = [r for r in records(admin, "io.ominousness.ass") if r.version == "1.0.0"]
    assert [(r.size, r.md5sum) for r in older] == [(5352, "4f9c4864ee9eb3555eb3e5ec72a7c336")]
    # Relative addresses ("./CydiaIcon.png", "./depiction/...") resolved against the repository.
    assert row.icon == "https://repo.nepeta.me/CydiaIcon.png"
    assert row.url == "https://repo.nepeta.me/depiction/io.ominousness.ass"
    assert row.description.startswith("iOS mediaserverd hook to serve snapshots")
    stack = package_row(admin, "io.ominousness.stackxi")
    assert stack.depends.endswith("firmware (>= 11.0), firmware (<= 11.4.1), cy+cpu.arm64")
    assert json.loads(stack.compatible) == ["iOS 11"]
    assert stack.conflicts == "com.ioscreatix.intelix, com.ioscreatix.intelixbeta"
    assert stack.icon == "https://repo.nepeta.me/icons/io.ominousness.stackxi.png"


def test_nepeta_shows_the_newest_version_by_dpkg_ordering(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    load(repos / NEPETA, source="Nepeta", url=PUBLIC_URL[NEPETA])
    # 0.1.0 to 0.1.11: a string comparison would pick 0.1.9.
    assert package_row(admin, "me.nepeta.relocate").version == "0.1.11"
    assert len(records(admin, "me.nepeta.relocate")) == 12


def test_poomsmart_prefers_zstd_reads_sileo_screenshots_and_the_preferred_architecture(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    summary = load(repos / POOMSMART, source="PoomSmart", url=PUBLIC_URL[POOMSMART])
    data = summary.as_dict()
    assert data["indexes"] == [{"name": "Packages.zst", "bytes": 642696, "verified": None}]
    assert "Release lists no hashes: index not verified" in summary.warnings
    assert (data["records"]["added"], data["packages"]["added"]) == (910, 181)
    emoji = package_row(admin, "com.ps.notoemojiefm")
    # Three versions, each for iphoneos-arm and iphoneos-arm64: the newest, arm64 first.
    assert (emoji.version, emoji.architecture) == ("17.0.0", "iphoneos-arm64")
    assert len(records(admin, "com.ps.notoemojiefm")) == 6
    # "Sileodepiction" (lower-case d) points into the repository: read from the local file.
    assert json.loads(emoji.screenshots) == [
        "https://poomsmart.github.io/repo/screenshots/notoemojiefm/font.png"
    ]
    assert emoji.url == "https://poomsmart.github.io/repo/depictions/notoemojiefm.html"
    attributes = package_row(admin, "com.ps.emojiattributes")  # 1.8.3, 1.9.0~b3, 1.10.0~b3, 1.10.1
    assert (attributes.version, attributes.architecture) == ("1.10.1", "iphoneos-arm64")


def test_poomsmart_compatible_from_firmware_requirements(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    load(repos / POOMSMART, source="PoomSmart", url=PUBLIC_URL[POOMSMART])
    globe = package_row(admin, "com.ps.advancedmapenabler")
    assert globe.depends == "mobilesubstrate (>= 0.9.5000), firmware (>= 15.0)"
    assert json.loads(globe.compatible) == ["iOS 15", "iOS 16", "iOS 17", "iOS 18", "iOS 26"]
    with admin.engine.connect() as db:
        bounded = db.execute(
            t.packages.select().where(
                t.packages.c.depends == "mobilesubstrate, firmware (>= 14.0), firmware (<< 18.0)"
            )
        ).first()
    assert bounded is not None
    assert json.loads(bounded.compatible) == ["iOS 14", "iOS 15", "iOS 16", "iOS 17"]


def test_julioverne_verifies_the_bz2_index_with_md5_and_drops_device_paths(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    summary = load(repos / JULIOVERNE, source="julioverne", url=PUBLIC_URL[JULIOVERNE])
    assert summary.as_dict()["indexes"] == [
        {"name": "Packages.bz2", "bytes": 88987, "verified": "MD5Sum"}
    ]
    assert count(admin, t.packages) == 113
    adblock = package_row(admin, "com.julioverne.adblock")
    assert (adblock.version, adblock.name, adblock.author) == (
        "0.2~beta1",
        "ADs Blocker",
        "julioverne",
    )
    assert adblock.url == "https://julioverne.github.io/description.html?id=com.julioverne.adblock"
    # Icon: file:///Library/... is a path on the device, of no use to a client.
    assert package_row(admin, "com.julioverne.albumpref").icon == ""


def test_chariz_index_differs_from_its_release_and_is_refused(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    with pytest.raises(VerificationError) as refused:
        load(repos / CHARIZ, source="Chariz", url=PUBLIC_URL[CHARIZ])
    message = str(refused.value)
    assert "Packages does not match Release" in message
    assert "size 368027 bytes, Release lists 368031" in message
    assert "SHA512" in message
    assert count(admin, t.sources) == 0
    assert count(admin, t.package_records) == 0


def test_chariz_imports_with_no_verify_paid_packages_and_tags(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    summary = load(repos / CHARIZ, source="Chariz", url=PUBLIC_URL[CHARIZ], verify=False)
    assert summary.as_dict()["records"]["added"] == 415
    assert summary.as_dict()["packages"]["added"] == 96
    assert any("imported anyway: --no-verify" in w for w in summary.warnings)
    paid = records(admin)
    assert sum(r.commercial for r in paid) == 270
    aemulo = package_row(admin, "com.amywhile.aemulo")
    assert aemulo.commercial is True
    assert aemulo.price is None  # not known until the operator gives it
    orion = package_row(
        admin, "com.johnzaro.orion"
    )  # compatible_min::ios13.0, compatible_max::ios14.4
    assert json.loads(orion.compatible) == ["iOS 13", "iOS 14"]
    velox = package_row(admin, "com.apextweaks.veloxreloaded")  # compatible_max::13.7, no "ios"
    assert json.loads(velox.compatible) == ["iOS 13"]
    divise = package_row(admin, "com.moski.divise")
    assert divise.pre_depends == "bash"  # spelled "Pre-depends" in this index
    assert json.loads(divise.compatible)[0] == "iOS 10"  # the Tag wins over Depends' firmware
    arpoison = package_row(admin, "arpoison")  # no Name field
    assert (arpoison.name, arpoison.version) == ("arpoison", "0.7-1")
    lite = package_row(admin, "xyz.burritoz.thomz.multiplalite")
    assert lite.version == "2.0.0~lite-1"  # newer than 2.0.0~lite, 1.1.1~lite5
    (libnet,) = [r for r in records(admin, "libnet9") if r.version == "1.2"]
    assert libnet.long_description.startswith(
        "libnet provides a portable framework for low-level network packet\n"
        "writing and handling.\n\nlibnet features"
    )
    assert libnet.description == "library for the construction and handling of network packets"


def test_chariz_source_is_named_after_the_release_label(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    load(repos / CHARIZ, source="chariz-market", url=PUBLIC_URL[CHARIZ], verify=False)
    with admin.engine.connect() as db:
        source = db.execute(t.sources.select()).one()
    assert (source.name, source.label, source.origin, source.url) == (
        "chariz-market", "Chariz", "Chariz", "https://repo.chariz.com/",
    )  # fmt: skip


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz", ".zst", ".lz4"])
def test_every_compression_of_poomsmart_gives_the_same_records(
    repos: Path, load: Importer, admin: CatalogueAdmin, suffix: str
) -> None:
    summary = load(repos / POOMSMART / f"Packages{suffix}", source="P", url=PUBLIC_URL[POOMSMART])
    assert summary.as_dict()["records"]["added"] == 910
    emoji = package_row(admin, "com.ps.notoemojiefm")
    assert (emoji.version, emoji.md5sum) == ("17.0.0", "7be1130d891134a71c753559df93db67")


def test_a_single_lzma_index_is_verified_against_the_release_beside_it(
    repos: Path, load: Importer
) -> None:
    summary = load(repos / NEPETA / "Packages.lzma", source="Nepeta", url=PUBLIC_URL[NEPETA])
    assert summary.as_dict()["indexes"] == [
        {"name": "Packages.lzma", "bytes": 166092, "verified": "SHA512"}
    ]
    assert summary.as_dict()["records"]["added"] == 185


def test_re_importing_an_unchanged_repository_writes_nothing(
    repos: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    load(repos / POOMSMART, source="PoomSmart", url=PUBLIC_URL[POOMSMART])
    before = [tuple(r) for r in records(admin)]
    again = load(repos / POOMSMART, source="PoomSmart", url=PUBLIC_URL[POOMSMART])
    assert again.as_dict()["records"] == {
        "read": 910, "added": 0, "updated": 0, "unchanged": 910, "removed": 0, "skipped": 0,
    }  # fmt: skip
    assert again.as_dict()["packages"] == {
        "added": 0, "updated": 0, "unchanged": 181, "set_offline": 0,
    }  # fmt: skip
    assert [tuple(r) for r in records(admin)] == before


@pytest.mark.parametrize("repository", [NEPETA, POOMSMART, CHARIZ, JULIOVERNE])
def test_stanzas_read_the_fields_deb822_reads(repos: Path, repository: str) -> None:
    data = (repos / repository / "Packages").read_bytes()
    for _, start, end in iter_stanzas(data):
        raw = data[start:end]
        expected = {k.lower(): v for k, v in Deb822(raw).items() if k.lower() in FIELDS_USED}
        assert Stanza(raw).fields == expected


# Through the command line and over http ------------------------------------------------


def test_import_repo_prints_a_summary(repos: Path, run: Any) -> None:
    result = run(
        "import-repo", str(repos / NEPETA), "--source", "Nepeta", "--url", PUBLIC_URL[NEPETA]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "read Packages.xz (166092 bytes, verified with SHA512)",
        "source 'Nepeta' (created), https://repo.nepeta.me/",
        "records: 185 read, 185 added, 0 updated, 0 unchanged, 0 removed, 0 skipped",
        "packages: 49 added, 0 updated, 0 unchanged, 0 set offline",
    ]
    # Not a terminal: no progress bar.
    assert result.stderr == ""


def test_a_mismatching_index_is_refused_by_the_command(repos: Path, run: Any) -> None:
    args = ("import-repo", str(repos / CHARIZ), "--source", "Chariz", "--url", PUBLIC_URL[CHARIZ])
    refused = run(*args)
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: Packages does not match Release: size 368027 bytes")
    assert "nothing was imported (--no-verify imports it anyway)" in refused.stderr
    accepted = run(*args, "--no-verify", "--json")
    assert accepted.exit_code == 0
    assert json.loads(accepted.stdout)["packages"]["added"] == 96
    assert "warning: Packages does not match Release" in accepted.stderr


def test_a_repository_served_over_http(
    repos: Path, serve: Callable[[Path], str], load: Importer, admin: CatalogueAdmin
) -> None:
    address = serve(repos / POOMSMART)
    summary = load(address, source="PoomSmart", url=PUBLIC_URL[POOMSMART], fetch=LOCAL)
    data = summary.as_dict()
    assert data["indexes"] == [{"name": "Packages.zst", "bytes": 642696, "verified": None}]
    assert (data["records"]["added"], data["packages"]["added"]) == (910, 181)
    # The depiction's public address maps onto the server being imported from.
    emoji = package_row(admin, "com.ps.notoemojiefm")
    assert json.loads(emoji.screenshots) == [
        "https://poomsmart.github.io/repo/screenshots/notoemojiefm/font.png"
    ]
