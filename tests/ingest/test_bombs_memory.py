"""A real ``pkgcat import-repo`` of a bombed repository: refused within twice its cap of memory.

The caps here are the defaults (256 MiB an index, 256 MiB a file): the bombs expand
past them, and the command is measured as a process of its own: its peak resident
memory (``VmHWM``), read by the process itself as it exits. The kernel's account of a
child (``wait4``) would not do: it counts the memory of the parent the child was
forked from, here the test's own.
"""

from __future__ import annotations

import lzma
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pkgcat.config import DEFAULT_FETCH_MAX_BYTES, DEFAULT_INDEX_MAX_BYTES
from pkgcat.storage.migrate import upgrade
from tests.hostile import Hostile, endless
from tests.ingest.conftest import release

MIB = 1024 * 1024
LAUNCH = """
import atexit, sys
from pathlib import Path

def peak(out: Path = Path(sys.argv[1])) -> None:
    status = Path("/proc/self/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    out.write_text(line.split()[1])

atexit.register(peak)
sys.argv = ["pkgcat", *sys.argv[2:]]
from pkgcat.cli import main
main()
"""
"""``pkgcat`` that writes its peak resident memory (KiB) to the file named first, as it exits."""


def import_repo(tmp_path: Path, location: str, **env: str) -> tuple[int, str, int]:
    """Run ``pkgcat import-repo LOCATION``: its exit code, its stderr and its peak RSS in bytes."""
    url = f"sqlite:///{tmp_path / 'catalogue.db'}"
    upgrade(url)
    peak = tmp_path / "peak"
    command = [sys.executable, "-c", LAUNCH, str(peak), "import-repo", location, "--source", "R"]
    command += ["--url", "https://r.example/"]
    variables = {**os.environ, "PKGCAT_DATABASE_URL": url, **env}
    done = subprocess.run(command, env=variables, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr, int(peak.read_text()) * 1024


def test_an_xz_bomb_is_refused_in_less_than_twice_its_cap(tmp_path: Path) -> None:
    # Streams of xz may follow one another: 16 of 32 MiB make a 512 MiB index of a few KiB.
    one = lzma.compress(b"\n" * (32 * MIB), preset=9)
    bomb = one * 16
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "Packages.xz").write_bytes(bomb)
    (tmp_path / "repo" / "Release").write_bytes(release({"Packages.xz": bomb}))
    code, stderr, peak = import_repo(tmp_path, str(tmp_path / "repo"))
    assert (code, stderr) == (
        1,
        f"error: Packages.xz: more than {DEFAULT_INDEX_MAX_BYTES} bytes once decompressed "
        "(PKGCAT_INDEX_MAX_BYTES); nothing was imported\n",
    )
    assert peak < 2 * DEFAULT_INDEX_MAX_BYTES, f"{peak / MIB:.0f} MiB"


def test_an_endless_index_is_refused_in_less_than_twice_its_cap(
    tmp_path: Path, hostile: Callable[..., Hostile]
) -> None:
    server = hostile({"/Packages": endless(most=2 * DEFAULT_FETCH_MAX_BYTES)})
    code, stderr, peak = import_repo(
        tmp_path, server.url(), PKGCAT_FETCH_ALLOW=f"127.0.0.1:{server.port}"
    )
    assert (code, stderr) == (
        1,
        f"error: {server.url('/Packages')}: more than {DEFAULT_FETCH_MAX_BYTES} bytes "
        "(PKGCAT_FETCH_MAX_BYTES); nothing was imported\n",
    )
    assert peak < 2 * DEFAULT_FETCH_MAX_BYTES, f"{peak / MIB:.0f} MiB"
