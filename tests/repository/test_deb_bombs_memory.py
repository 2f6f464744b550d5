"""A real ``pkgcat publish`` of a bombed .deb: refused, in the memory a small file's refusal takes.

The command runs as a process of its own and reports its peak resident memory (``VmHWM``)
as it exits, as in tests/ingest/test_bombs_memory.py. Each bomb is set beside the same
refusal of a small file: the difference is what the bomb's size costs the reader, which
reads every member as a stream. The database is SQLite: the file is refused before a row is
read or written (tests/repository/test_publish.py refuses it on both databases).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pkgcat.config import DEFAULT_PUBLISH_MAX_UNPACKED_BYTES, DEFAULT_STANZA_MAX_BYTES
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.migrate import upgrade
from tests.debs import ZEROS, deb_bytes, zeros_tar
from tests.ingest.test_bombs_memory import LAUNCH

MIB = 1024 * 1024


def publish(tmp_path: Path, deb: bytes, **env: str) -> tuple[int, str, int]:
    """Run ``pkgcat publish`` of ``deb``: its exit code, its stderr and its peak RSS in bytes."""
    database = tmp_path / "catalogue.db"
    url = f"sqlite:///{database}"
    if not database.exists():
        upgrade(url)
        admin = CatalogueAdmin(url)
        admin.add_source("R", "https://r.example/")
        admin.close()
    path, peak = tmp_path / "case.deb", tmp_path / "peak"
    path.write_bytes(deb)
    command = [sys.executable, "-c", LAUNCH, str(peak), "publish", str(path), "--source", "R"]
    variables = {**os.environ, "PKGCAT_DATABASE_URL": url, **env}
    variables["PKGCAT_BLOB_DIR"] = str(tmp_path / "blobs")
    done = subprocess.run(command, env=variables, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr, int(peak.read_text()) * 1024


@pytest.mark.parametrize("extension", [".zst", ".gz", ".xz"])
def test_a_data_tar_bomb_is_refused_at_the_default_bound_in_flat_memory(
    extension: str, tmp_path: Path
) -> None:
    # Row 3 of the report: a data.tar that expands to 2 GiB, against the default bound of 1 GiB.
    name = f"data.tar{extension}"
    bomb = deb_bytes(data_ext=extension, data=zeros_tar("./usr/share/z", 128 * ZEROS, extension))
    code, stderr, peak = publish(tmp_path, bomb)
    assert (code, stderr) == (
        1,
        f"error: refused: {name}: more than {DEFAULT_PUBLISH_MAX_UNPACKED_BYTES} bytes once "
        "decompressed (PKGCAT_PUBLISH_MAX_UNPACKED_BYTES)\n",
    )
    small = deb_bytes(data_ext=extension, data=zeros_tar("./usr/share/z", ZEROS, extension))
    code, stderr, base = publish(tmp_path, small, PKGCAT_PUBLISH_MAX_UNPACKED_BYTES=str(MIB))
    assert (code, f"{name}: more than {MIB} bytes" in stderr) == (1, True), stderr
    # Within the decoders' pieces (a MiB; a zstd slice's 4 MiB) and a window of some MiB.
    assert peak - base < 24 * MIB, f"{peak / MIB:.0f} MiB against {base / MIB:.0f} MiB"


def test_a_control_file_bomb_is_refused_in_the_memory_of_a_control_file_just_too_large(
    tmp_path: Path,
) -> None:
    # Row 2 of the report: 512 MiB of control file in some 500 KiB of control.tar.gz.
    def with_control(size: int) -> bytes:
        return deb_bytes(control_tar=zeros_tar("./control", size, ".gz"))

    code, stderr, peak = publish(tmp_path, with_control(32 * ZEROS))
    assert (code, stderr) == (
        1,
        f"error: refused: control: {32 * ZEROS} bytes, over the limit of "
        f"{DEFAULT_STANZA_MAX_BYTES} (PKGCAT_STANZA_MAX_BYTES)\n",
    )
    code, stderr, base = publish(tmp_path, with_control(ZEROS))
    assert code == 1
    assert f"control: {ZEROS} bytes, over the limit" in stderr
    assert peak - base < 2 * DEFAULT_STANZA_MAX_BYTES, f"{peak / MIB:.1f} against {base / MIB:.1f}"
