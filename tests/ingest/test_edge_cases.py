"""Generated repositories: damaged indexes are clear errors, bad stanzas are reported skips.

Whatever goes wrong, the catalogue is never half-written.
"""

from __future__ import annotations

import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from pkgcat.ingest import (
    CompressionError,
    FetchError,
    IngestError,
    ReleaseError,
    VerificationError,
)
from pkgcat.ingest.load import Loader
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests.ingest.conftest import Importer, count, package_row, records, stanza, write_repo

URL = "https://repo.example/"


def nothing_written(admin: CatalogueAdmin) -> bool:
    return (count(admin, t.sources), count(admin, t.package_records), count(admin, t.packages)) == (
        0,
        0,
        0,
    )


def test_garbage_in_a_compressed_index_is_a_clear_error(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    (tmp_path / "Packages.xz").write_bytes(b"this is not xz data at all")
    with pytest.raises(CompressionError, match=r"^Packages\.xz: not valid xz data"):
        load(tmp_path, url=URL)
    assert nothing_written(admin)


@pytest.mark.parametrize(
    ("name", "compress", "label"),
    [
        ("Packages.gz", gzip.compress, "gzip"),
        ("Packages.xz", lzma.compress, "xz"),
    ],
)
def test_a_truncated_compressed_index_is_refused(
    tmp_path: Path,
    load: Importer,
    admin: CatalogueAdmin,
    name: str,
    compress: Callable[[bytes], bytes],
    label: str,
) -> None:
    data = compress("\n".join(stanza(f"com.example.p{n}") for n in range(50)).encode())
    (tmp_path / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(CompressionError, match=rf"{name}: not valid {label} data"):
        load(tmp_path, url=URL)
    assert nothing_written(admin)


def test_a_truncated_zstd_index_is_refused_not_read_short(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    import zstandard

    data = zstandard.ZstdCompressor().compress(
        "\n".join(stanza(f"com.example.p{n}", Description="x" * 200) for n in range(2000)).encode()
    )
    (tmp_path / "Packages.zst").write_bytes(data[:-100])
    with pytest.raises(CompressionError, match="ends before the end of its last frame"):
        load(tmp_path, url=URL)
    assert nothing_written(admin)


def test_a_truncated_plain_index_fails_its_release_hashes(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a"), stanza("com.example.b")])
    index = tmp_path / "Packages"
    index.write_bytes(index.read_bytes()[:-20])
    with pytest.raises(VerificationError, match="Packages does not match Release: size"):
        load(tmp_path, url=URL)
    assert nothing_written(admin)


def test_a_truncated_index_without_release_skips_its_cut_stanza(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    text = stanza("com.example.a") + "\n" + stanza("com.example.b")
    (tmp_path / "Packages").write_text(text[: text.index("MD5sum", text.index("com.example.b"))])
    summary = load(tmp_path, url=URL)
    assert "no InRelease or Release beside the index: not verified" in summary.warnings
    assert summary.as_dict()["skipped"] == [
        {
            "index": "Packages",
            "line": 8,
            "package": "com.example.b",
            "reason": "missing required field MD5sum",
        }
    ]
    assert [r.package for r in records(admin)] == ["com.example.a"]


def test_a_release_whose_hashes_do_not_match_is_refused_unless_told(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")], compressions=(".gz",))
    # Another index of the same size: the hash, not the size, catches it.
    (tmp_path / "Packages.gz").write_bytes(gzip.compress(stanza("com.example.z").encode()))
    with pytest.raises(VerificationError, match=r"Packages\.gz does not match Release: .*SHA256"):
        load(tmp_path, url=URL)
    assert nothing_written(admin)
    summary = load(tmp_path, url=URL, verify=False)
    assert [r.package for r in records(admin)] == ["com.example.z"]
    assert any("imported anyway: --no-verify" in w for w in summary.warnings)


def test_an_index_the_release_lists_but_is_missing_everywhere_is_an_error(
    tmp_path: Path, load: Importer
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")], compressions=(".gz",))
    (tmp_path / "Packages.gz").unlink()
    with pytest.raises(
        FetchError, match=r"none of the indexes Release lists can be read \(Packages\.gz\)"
    ):
        load(tmp_path, url=URL)


def test_a_malformed_release_is_a_clear_error(tmp_path: Path, load: Importer) -> None:
    write_repo(tmp_path, [stanza("com.example.a")])
    (tmp_path / "Release").write_text("Origin: X\nSHA256:\n nothex 12 Packages\n")
    with pytest.raises(ReleaseError, match="Release: SHA256 line for 'Packages'"):
        load(tmp_path, url=URL)


def test_non_utf8_bytes_skip_the_stanza_naming_the_byte_and_field(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    good = stanza("com.example.good").encode()
    bad = stanza("com.example.bad", Description="caf\u00e9").encode().replace(b"\xc3\xa9", b"\xe9")
    write_repo(tmp_path, good + b"\n" + bad)
    summary = load(tmp_path, url=URL)
    (skip,) = summary.as_dict()["skipped"]
    assert (skip["line"], skip["package"]) == (8, "com.example.bad")
    assert (
        skip["reason"] == "not valid UTF-8: byte 0xe9 on line 7 of the stanza (field 'Description')"
    )
    assert [r.package for r in records(admin)] == ["com.example.good"]


def test_duplicate_stanzas_keep_the_first_and_report_the_others(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    same = stanza("com.example.a")
    changed = stanza("com.example.a", Name="Other name")
    write_repo(tmp_path, [same, same, changed])
    summary = load(tmp_path, url=URL)
    assert [(s["line"], s["reason"]) for s in summary.as_dict()["skipped"]] == [
        (8, "duplicate of the stanza at Packages:1"),
        (15, "same Package, Version and Architecture as the stanza at Packages:1"),
    ]
    assert package_row(admin, "com.example.a").name == "com.example.a"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"Version": None}, "missing required field Version"),
        ({"Version": None, "Architecture": None}, "missing required fields Version, Architecture"),
        ({"MD5sum": None}, "missing required field MD5sum"),
        ({"Version": "1.0 beta"}, "Version: '1.0 beta' is not a Debian version"),
        ({"Size": "12kB"}, "Size: '12kB' is not a number of bytes"),
        ({"MD5sum": "abc"}, "MD5sum: 'abc' is not 32 hexadecimal digits"),
        ({"SHA256": "0" * 63}, "SHA256: '" + "0" * 63 + "' is not 64 hexadecimal digits"),
        ({"Package": "two words"}, "Package: 'two words' is not a package name"),
        ({"Architecture": "ARM 64"}, "Architecture: 'ARM 64' is not an architecture name"),
    ],
)
def test_stanzas_without_a_usable_record_are_skipped_with_the_reason(
    tmp_path: Path,
    load: Importer,
    admin: CatalogueAdmin,
    fields: dict[str, str | None],
    reason: str,
) -> None:
    write_repo(tmp_path, [stanza("com.example.ok"), stanza("com.example.bad", **fields)])
    summary = load(tmp_path, url=URL)
    assert [s["reason"] for s in summary.as_dict()["skipped"]] == [reason]
    assert [r.package for r in records(admin)] == ["com.example.ok"]


def test_a_failure_while_writing_leaves_the_catalogue_as_it_was(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(tmp_path, [stanza("com.example.a", "1.0")])
    load(tmp_path, url=URL)
    before = [tuple(r) for r in records(admin)]
    write_repo(tmp_path, [stanza("com.example.a", "2.0"), stanza("com.example.b")])

    def broken(self: Loader, rows: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(Loader, "_copy", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        load(tmp_path, url=URL)
    assert [tuple(r) for r in records(admin)] == before
    assert package_row(admin, "com.example.a").version == "1.0"


def test_a_new_source_needs_an_address(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")])
    with pytest.raises(IngestError, match=r"no source named 'Repo'; give --url"):
        load(tmp_path)
    with pytest.raises(IngestError, match=r"--url: 'repo\.example' is not an http"):
        load(tmp_path, url="repo.example")
    assert nothing_written(admin)


def test_an_empty_location_is_a_clear_error(tmp_path: Path, load: Importer) -> None:
    with pytest.raises(FetchError, match="no Packages index here"):
        load(tmp_path, url=URL)
    with pytest.raises(FetchError, match="no such file or directory"):
        load(tmp_path / "nowhere", url=URL)
