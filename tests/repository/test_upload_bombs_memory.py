"""Bombs sent to a real ``pkgcat serve`` by upload: refused, and the worker's memory stays flat.

Row 2 and 3 of the upload attacks were measured on the server's worker (293 MB resident
to 3,371 MB for a control file of 512 MiB, 2,350 to 4,377 MB for a 1 GiB data.tar.zst,
and 2.55 GB still held afterwards). Here the worker's peak resident memory (``VmHWM``,
read from /proc) after a small refused upload is the base; each bomb is then refused
naming its setting, its peak within a few pieces of the decoders of that base; and many
refusals in a row leave the worker's resident memory where the first left it. The file is
refused before any row is read or written, so SQLite alone (tests/repository/test_upload.py
refuses the same files on both databases).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from pkgcat.config import DEFAULT_PUBLISH_MAX_UNPACKED_BYTES, DEFAULT_STANZA_MAX_BYTES
from tests.debs import ZEROS, deb_bytes, zeros_tar
from tests.servers import children, environment, granted_key, seed, serving

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="reads the worker's memory from /proc"),
]

MIB = 1024 * 1024
UPLOAD = "/1.0/package/upload.json"
DEB = "application/vnd.debian.binary-package"


def memory(pid: int) -> tuple[int, int]:
    """A process's peak and current resident memory (``VmHWM``, ``VmRSS``), in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            found[name] = int(value.split()[0]) * 1024
    return found["VmHWM"], found["VmRSS"]


def _bombs() -> dict[str, tuple[bytes, str]]:
    """Each bomb of the report's rows 2 and 3, and what its refusal names."""
    unpacked = (
        f"more than {DEFAULT_PUBLISH_MAX_UNPACKED_BYTES} bytes once decompressed"
        " (PKGCAT_PUBLISH_MAX_UNPACKED_BYTES)"
    )
    return {
        "control of 512 MiB": (
            deb_bytes(control_tar=zeros_tar("./control", 32 * ZEROS, ".gz")),
            f"over the limit of {DEFAULT_STANZA_MAX_BYTES} (PKGCAT_STANZA_MAX_BYTES)",
        ),
        **{
            f"data.tar{ext} of 2 GiB": (
                deb_bytes(data_ext=ext, data=zeros_tar("./usr/share/z", 128 * ZEROS, ext)),
                unpacked,
            )
            for ext in (".zst", ".gz", ".xz")
        },
    }


@contextmanager
def _uploads(tmp_path: Path) -> Iterator[tuple[Callable[[bytes], str], int]]:
    """A real server's upload, answered 400 (its message), and its one worker's pid."""
    env = environment(f"sqlite:///{tmp_path / 'bombs.db'}", blob_dir=str(tmp_path / "blobs"))
    with serving(env, tmp_path / "server.log", apps=seed(env)) as server:
        key = granted_key(env, server.apps[0], "publish")
        (worker,) = children(server.process.pid)

        def upload(deb: bytes) -> str:
            answer = httpx.post(
                f"{server.base}{UPLOAD}",
                content=deb,
                headers={"authorization": f"Bearer {key}", "content-type": DEB},
                timeout=120,
            )
            assert answer.status_code == 400, answer.text
            message: str = answer.json()["response"]
            return message

        # A control file just too large: the upload path and its refusal, warmed up.
        assert "PKGCAT_STANZA_MAX_BYTES" in upload(
            deb_bytes(control_tar=zeros_tar("./control", ZEROS, ".gz"))
        )
        yield upload, worker.pid


def test_bombs_uploaded_to_a_real_server_are_refused_within_the_worker_s_memory(
    tmp_path: Path,
) -> None:
    with _uploads(tmp_path) as (upload, worker):
        base, _ = memory(worker)
        for name, (deb, reason) in _bombs().items():
            assert reason in upload(deb), name
            peak, _ = memory(worker)
            # Within the decoders' pieces (a MiB; a zstd slice's 4 MiB) and a window of some MiB.
            assert peak - base < 32 * MIB, f"{name}: peak {peak / MIB:.0f} MiB"


@pytest.mark.parametrize("bomb", ["data.tar.xz of 2 GiB", "data.tar.zst of 2 GiB"])
def test_bombs_uploaded_again_and_again_leave_the_worker_where_it_was(
    bomb: str, tmp_path: Path
) -> None:
    # Each refusal was kept in a reference cycle with its frames and decoder, which a
    # worker's seldom-run collector left there: 10 MiB more a bomb (xz; about 8 for zstd),
    # 24 in a row took a worker from 95 to 351 MiB (tests/repository/test_upload.py has it
    # in-process, with the collector off).
    with _uploads(tmp_path) as (upload, worker):
        deb, reason = _bombs()[bomb]
        assert reason in upload(deb)
        _, settled = memory(worker)
        for _ in range(8):
            assert reason in upload(deb)
        _, rss = memory(worker)
        assert rss - settled < 16 * MIB, f"{(rss - settled) / MIB:.0f} MiB more after 8 more"
