"""The rules on their own: compatible labels, the shown record, Release files, compressions."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from pkgcat.config import Settings
from pkgcat.ingest import CompressionError, ReleaseError, VerificationError
from pkgcat.ingest.compatible import compatibility
from pkgcat.ingest.compression import EXTENSIONS, decoded, decompress, extension_of
from pkgcat.ingest.release import parse_release
from pkgcat.versions import Preference, best
from tests.ingest.conftest import COMPRESSORS

LATEST = ["iOS 18", "iOS 26"]


@pytest.mark.parametrize(
    ("tag", "depends", "pre_depends", "labels"),
    [
        # 1. compatible_min / compatible_max, with or without "ios"
        ("compatible_min::ios13.0, compatible_max::ios14.4", "", "", ["iOS 13", "iOS 14"]),
        ("compatible_max::13.7, compatible_min::12", "", "", ["iOS 12", "iOS 13"]),
        ("compatible_min::iOS16.2", "firmware (>= 9.0)", "", ["iOS 16", "iOS 17", *LATEST]),
        ("compatible_max::ios3.1", "", "", ["iOS 1", "iOS 2", "iOS 3"]),
        # 2. compatible::iosN and ranges
        ("compatible::ios12, compatible::ios13", "firmware (>= 5.0)", "", ["iOS 12", "iOS 13"]),
        ("compatible::9.0-11.4", "", "", ["iOS 9", "iOS 10", "iOS 11"]),
        ("compatible::ios7 , compatible::ios14.0-ios15.1", "", "", ["iOS 7", "iOS 14", "iOS 15"]),
        # 3. firmware of Pre-Depends and Depends, top level only
        (
            "role::developer",
            "firmware (>= 14.0.0), firmware (<< 16.4)",
            "",
            ["iOS 14", "iOS 15", "iOS 16"],
        ),
        (
            "",
            "firmware (>= 13.0), firmware (<< 18.0)",
            "",
            ["iOS 13", "iOS 14", "iOS 15", "iOS 16", "iOS 17"],
        ),
        ("", "firmware >=11.0, firmware (<= 12.1.4)", "", ["iOS 11", "iOS 12"]),
        ("", "firmware (>> 9)", "", [f"iOS {n}" for n in range(9, 19)] + ["iOS 26"]),
        ("", "firmware (= 12.2)", "", ["iOS 12"]),
        ("", "firmware (< 3.0)", "", ["iOS 1", "iOS 2", "iOS 3"]),  # obsolete "<" is "<="
        ("", "x, firmware (>= 16.0) | com.example.alt", "", []),
        ("", "com.example.alt | firmware (>= 16.0)", "", []),
        ("", "firmware-sbin (>= 1.0), firmwarex", "", []),
        ("", "mobilesubstrate", "firmware (>= 17.0)", ["iOS 17", *LATEST]),
        ("", "firmware", "", []),
        ("", "", "", []),
    ],
)
def test_compatible_labels(tag: str, depends: str, pre_depends: str, labels: list[str]) -> None:
    assert list(compatibility(tag, depends, pre_depends).labels) == labels


def test_commercial_tag_marks_the_package_paid() -> None:
    assert compatibility("cydia::commercial, compatible::ios13", "", "").commercial is True
    assert compatibility("cydia::free, role::developer", "", "").commercial is False


@pytest.mark.parametrize(
    ("records", "preference", "shown"),
    [
        ([("1.0", "all")], ("amd64",), ("1.0", "all")),
        ([("1.0", "amd64"), ("1.0~rc1", "amd64")], ("amd64",), ("1.0", "amd64")),
        ([("2:0.1", "amd64"), ("10.0", "amd64")], ("amd64",), ("2:0.1", "amd64")),
        ([("1.0-2", "amd64"), ("1.0-10", "amd64")], ("amd64",), ("1.0-10", "amd64")),
        (
            [("1.0", "arm64"), ("1.0", "amd64"), ("0.9", "i386")],
            ("amd64", "arm64"),
            ("1.0", "amd64"),
        ),
        ([("1.0", "zz"), ("1.0", "aa")], ("amd64",), ("1.0", "aa")),
        ([("1.0", "amd64"), ("1.00", "amd64")], ("amd64",), ("1.0", "amd64")),
    ],
)
def test_the_shown_record(
    records: list[tuple[str, str]], preference: tuple[str, ...], shown: tuple[str, str]
) -> None:
    assert best(records, Preference(preference)) == shown


def test_an_inrelease_is_read_through_its_signature() -> None:
    index = b"Package: a\n"
    digest = hashlib.sha256(index).hexdigest()
    signed = (
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\n"
        "Origin: Signed\nLabel: Signed Label\nDate: Sat, 11 Jul 2026 10:16:37 UTC\n"
        f"Architecture: iphoneos-arm\nSHA256:\n {digest} {len(index)} Packages\n"
        "-----BEGIN PGP SIGNATURE-----\n\nabcdef\n-----END PGP SIGNATURE-----\n"
    ).encode()
    release = parse_release("InRelease", signed)
    assert (release.origin, release.label, release.architectures) == (
        "Signed", "Signed Label", ("iphoneos-arm",),
    )  # fmt: skip
    assert release.date == 1783764997  # 2026-07-11T10:16:37Z
    assert release.verify("Packages", index) == "SHA256"
    assert release.verify("Packages.gz", b"unlisted") == ""
    with pytest.raises(VerificationError, match="Packages does not match InRelease: size 2 bytes"):
        release.verify("Packages", b"no")


def test_an_unreadable_release_is_refused() -> None:
    with pytest.raises(ReleaseError, match="Release: empty, or not a Release file"):
        parse_release("Release", b"\n\n")
    with pytest.raises(ReleaseError, match="Release: Packages is listed with two different sizes"):
        parse_release(
            "Release",
            f"MD5Sum:\n {'0' * 32} 1 Packages\nSHA256:\n {'0' * 64} 2 Packages\n".encode(),
        )


def test_compressions_in_apts_order_each_decoded() -> None:
    assert EXTENSIONS == (".zst", ".xz", ".lzma", ".bz2", ".gz", ".lz4", "")
    data = b"Package: a\nVersion: 1\n" * 100
    for extension in EXTENSIONS:
        assert extension_of(f"dir/Packages{extension}") == extension
        assert decompress(f"Packages{extension}", COMPRESSORS[extension](data), len(data)) == data


@pytest.mark.parametrize("extension", EXTENSIONS)
def test_a_stream_decodes_alike_however_its_chunks_are_cut(extension: str) -> None:
    # A .deb's members are decoded as they are read from disk, chunk by chunk.
    data = b"Package: a\nVersion: 1\n" * 2000
    packed = COMPRESSORS[extension](data) * 2  # two streams (frames, members) in a row
    for size in (1, 7, 4096, len(packed)):
        chunks = (packed[i : i + size] for i in range(0, len(packed), size))
        assert b"".join(decoded(extension, chunks)) == data * 2


@pytest.mark.parametrize("extension", [".zst", ".xz", ".lzma", ".bz2", ".gz", ".lz4"])
def test_cut_or_foreign_data_is_a_compression_error(extension: str) -> None:
    data = COMPRESSORS[extension](b"Package: a\nVersion: 1\n" * 2000)
    for broken in (data[: len(data) // 2], b"\x00" * 64):
        with pytest.raises(CompressionError, match=rf"^Packages{extension}: not valid "):
            decompress(f"Packages{extension}", broken, 1 << 20)


def test_the_architecture_preference_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().architecture_preference == (
        "iphoneos-arm64", "iphoneos-arm", "all", "amd64", "arm64",
    )  # fmt: skip
    monkeypatch.setenv("PKGCAT_ARCHITECTURES", " amd64 , all,")
    assert Settings().architecture_preference == ("amd64", "all")
    monkeypatch.setenv("PKGCAT_ARCHITECTURES", "amd64,ARM 64")
    with pytest.raises(ValidationError, match="is not a comma-separated list of architectures"):
        Settings()
