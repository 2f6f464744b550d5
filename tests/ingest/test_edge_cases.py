"""Generated repositories: damaged indexes are clear errors, bad stanzas are reported skips.

Whatever goes wrong, the catalogue is never inconsistent: an input that cannot
be read writes nothing, and writes cut short leave whole packages that the
next import completes.
"""

from __future__ import annotations

import gzip
import itertools
import lzma
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from pkgcat.ingest import (
    CompressionError,
    FetchError,
    ImportOptions,
    IngestError,
    ReleaseError,
    VerificationError,
    import_repository,
)
from pkgcat.ingest.load import Loader
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.migrate import upgrade
from pkgcat.storage.writes import bulk, imports
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
    bad = stanza("com.example.bad", "1.0", "iphoneos-arm", **fields)
    write_repo(tmp_path, [stanza("com.example.ok"), bad])
    summary = load(tmp_path, url=URL)
    assert [s["reason"] for s in summary.as_dict()["skipped"]] == [reason]
    assert [r.package for r in records(admin)] == ["com.example.ok"]


def _catalogue(engine: Engine) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The records and package rows, without ids and times: what two imports must agree on."""
    r, p = t.package_records, t.packages
    with engine.connect() as db:
        kept = db.execute(
            select(r.c.package, r.c.version, r.c.architecture, r.c.name, r.c.fingerprint).order_by(
                r.c.package, r.c.version, r.c.architecture
            )
        ).all()
        shown = db.execute(
            select(p.c.package, p.c.version, p.c.name, p.c.online, r.c.fingerprint)
            .outerjoin(r, r.c.id == p.c.record_id)
            .order_by(p.c.package)
        ).all()
    return [tuple(row) for row in kept], [tuple(row) for row in shown]


def _consistent(engine: Engine) -> None:
    """Every online package row shows a record of its own that exists; offline rows show none."""
    r, p = t.package_records, t.packages
    with engine.connect() as db:
        for row in db.execute(select(p)).all():
            if not row.online:
                assert row.record_id is None
                continue
            record = db.execute(select(r).where(r.c.id == row.record_id)).one()
            assert (record.source_id, record.package) == (row.source_id, row.package)
            assert (record.version, record.name) == (row.version, row.name)


def _failing_at(write: int) -> Callable[..., None]:
    """The import's statement runner, failing at its ``write``-th call as if the process died."""
    real = bulk.run  # the statement runner imports.py calls, patched there by name
    calls = 0

    def failing(*args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == write:
            raise RuntimeError("disk full")
        real(*args)

    return failing


def test_writes_cut_short_anywhere_leave_a_consistent_catalogue_the_next_import_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(handle: CatalogueAdmin, location: Path) -> None:
        import_repository(
            handle.engine, str(location), ImportOptions(source="Repo", url=URL, jobs=1)
        )

    old = write_repo(tmp_path / "old", [stanza(f"com.example.{n}") for n in "abcdefgh"])
    new = write_repo(
        tmp_path / "new",
        [
            *(stanza(f"com.example.{n}", Name=f"{n} renamed") for n in "abc"),  # in place
            *(stanza(f"com.example.{n}", "2.0") for n in "de"),  # another record shown
            stanza("com.example.f"),  # unchanged; g and h gone
            *(stanza(f"com.example.{n}") for n in "ij"),  # new packages
        ],
    )
    template = tmp_path / "template.db"
    upgrade(f"sqlite:///{template}")
    handle = CatalogueAdmin(f"sqlite:///{template}")
    run(handle, old)
    handle.close()

    def copy(name: str) -> CatalogueAdmin:
        shutil.copyfile(template, tmp_path / name)
        return CatalogueAdmin(f"sqlite:///{tmp_path / name}")

    reference = copy("reference.db")
    run(reference, new)
    expected = _catalogue(reference.engine)
    reference.close()

    # A few rows per transaction, one chunk each: the new index's writes take several.
    monkeypatch.setattr(imports, "CHUNK_ROWS", 4)
    monkeypatch.setattr(imports, "TRANSACTION_SECONDS", 0)
    monkeypatch.setattr(imports, "PAUSE_SECONDS", 0)
    real = bulk.run  # the statement runner imports.py calls, patched there by name
    for write in itertools.count(1):
        handle = copy(f"cut-{write}.db")
        monkeypatch.setattr(imports, "run", _failing_at(write))
        try:
            run(handle, new)
        except RuntimeError:
            pass
        else:
            handle.close()
            break  # every write of the import has been cut short once
        finally:
            monkeypatch.setattr(imports, "run", real)
        _consistent(handle.engine)
        run(handle, new)
        _consistent(handle.engine)
        assert _catalogue(handle.engine) == expected, f"cut short at write {write}"
        handle.close()
    assert write > 5, "the import should have taken several transactions"


def test_a_new_source_needs_an_address(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")])
    with pytest.raises(IngestError, match=r"no source named 'Repo'; give --url"):
        load(tmp_path)
    with pytest.raises(IngestError, match=r"--url: 'repo\.example' is not an http"):
        load(tmp_path, url="repo.example")
    assert nothing_written(admin)


def test_a_source_follows_the_rule_of_source_add(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(tmp_path, [stanza("com.example.a")])
    with pytest.raises(IngestError, match="a source needs a name"):
        load(tmp_path, source="  ", url=URL)
    real = Loader.finish

    def finish(self: Loader, progress: Any = None) -> Any:
        plan = real(self, progress)
        admin.add_source("Repo", "https://other.example/")  # another command, meanwhile
        return plan

    monkeypatch.setattr(Loader, "finish", finish)
    with pytest.raises(IngestError, match="source 'Repo' exists already"):
        load(tmp_path, url=URL)
    # The source is the first write: nothing of the import went in.
    assert (count(admin, t.sources), count(admin, t.package_records)) == (1, 0)


def test_an_empty_location_is_a_clear_error(tmp_path: Path, load: Importer) -> None:
    with pytest.raises(FetchError, match="no Packages index here"):
        load(tmp_path, url=URL)
    with pytest.raises(FetchError, match="no such file or directory"):
        load(tmp_path / "nowhere", url=URL)
