"""The index directory: large index files written once, checked, and swept when unused."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from pkgcat.repository.indexes import IndexFile, IndexSet, entity_tag
from pkgcat.repository.ondisk import KEEP_SECONDS, IndexDirectory

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _set(generation: int, **bodies: bytes) -> IndexSet:
    built = IndexSet(generation, 0)
    for name, body in bodies.items():
        built.files[name] = IndexFile(body, "application/gzip", entity_tag(body), WHEN)
    return built


def test_large_files_get_a_file_named_by_their_etag_and_small_ones_none(tmp_path: Path) -> None:
    directory = IndexDirectory(tmp_path / "indexes", smallest=10)
    large = b"x" * 10
    built = _set(1, large=large, same=large, small=b"tiny")
    directory.place(built, None)
    path = built.files["large"].path
    assert path is not None
    assert Path(path).read_bytes() == large
    assert Path(path).name == entity_tag(large).strip('"')
    assert built.files["same"].path == path  # one file for the same bytes
    assert built.files["small"].path is None
    assert os.listdir(tmp_path / "indexes") == [Path(path).name]


def test_a_damaged_file_found_on_disk_is_written_again(tmp_path: Path) -> None:
    large = b"y" * 100
    name = entity_tag(large).strip('"')
    (tmp_path / name).write_bytes(b"z" * 100)  # a copy cut short by a crash, say
    built = _set(1, large=large)
    IndexDirectory(tmp_path, smallest=1).place(built, None)
    assert (tmp_path / name).read_bytes() == large


def test_files_unused_by_the_sets_are_removed_once_untouched_for_a_while(tmp_path: Path) -> None:
    now = [1_000_000.0]
    directory = IndexDirectory(tmp_path, smallest=1, clock=lambda: now[0])
    first, second, third = _set(1, p=b"one"), _set(2, p=b"two"), _set(3, p=b"three")
    directory.place(first, None)
    directory.place(second, first)
    old = Path(str(first.files["p"].path))
    os.utime(old, (now[0] - KEEP_SECONDS - 1,) * 2)
    directory.place(third, second)  # the first set's file: unused, untouched for long
    assert not old.exists()
    assert Path(str(second.files["p"].path)).exists()  # the set before: kept
    # Another worker's recent file, which no set of this worker uses: kept.
    recent = tmp_path / "another"
    recent.write_bytes(b"recent")
    directory.sweep(set())
    assert recent.exists()
