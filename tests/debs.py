"""Tiny .deb files for the tests, built by Debian's own dpkg-deb, and hostile ones built in-process."""

from __future__ import annotations

import functools
import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.backends import unavailable
from tests.ingest.conftest import COMPRESSORS


def build_deb(
    directory: Path,
    package: str = "com.example.tiny",
    version: str = "1.0",
    architecture: str = "all",
    *,
    payload: str = "hello\n",
    nocheck: bool = False,
    **fields: str,
) -> Path:
    """A .deb of one small file, its control file holding the fields given (``Tag=...``).

    ``payload`` changes the bytes without changing the control file; ``nocheck``
    builds a control file that dpkg-deb would refuse (a bad version...).

    Built once a process for the same arguments, then written out again: many tests'
    fixtures publish the same few packages, and each build was a dpkg-deb process.
    """
    if shutil.which("dpkg-deb") is None:
        unavailable("building test .deb files needs dpkg-deb (Debian's dpkg package)")
    wanted = (package, version, architecture, payload, nocheck, tuple(sorted(fields.items())))
    digest = hashlib.sha1(payload.encode(), usedforsecurity=False).hexdigest()[:8]
    out = directory / f"{package}_{version}_{architecture}_{digest}.deb"
    if (built := _BUILT.get(wanted)) is not None:
        directory.mkdir(parents=True, exist_ok=True)  # as a first build makes it
        out.write_bytes(built)
        return out
    root = directory / f"build-{package}-{version}-{architecture}-{digest}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr" / "share" / package).mkdir(parents=True)
    (root / "usr" / "share" / package / "file.txt").write_text(payload)
    control = {
        "Package": package,
        "Version": version,
        "Architecture": architecture,
        "Maintainer": "Test Maintainer <test@example.invalid>",
        "Description": f"{package}, a test package\n a longer description",
        **{name.replace("_", "-"): value for name, value in fields.items()},
    }
    text = "".join(f"{name}: {value}\n" for name, value in control.items() if value)
    (root / "DEBIAN" / "control").write_text(text)
    subprocess.run(
        [
            "dpkg-deb",
            "--root-owner-group",
            "-Zgzip",
            *(["--nocheck"] if nocheck else []),
            "--build",
            str(root),
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    _BUILT[wanted] = out.read_bytes()
    return out


_BUILT: dict[tuple[object, ...], bytes] = {}
"""The bytes of each .deb :func:`build_deb` made in this process, by its arguments."""


# .debs built in-process, member by member: hostile ones included ------------------------------

CONTROL = (
    "Package: com.example.built\nVersion: 1.0\nArchitecture: all\n"
    "Maintainer: Test Maintainer <test@example.invalid>\nDescription: built in-process\n"
)
ZEROS = 16 * 1024 * 1024
"""Zero bytes one compressed piece of a bomb stands for."""


def ar_archive(members: list[tuple[str, bytes]]) -> bytes:
    """An ar archive of ``members`` as dpkg-deb writes one (lib/dpkg/ar.c,
    ``dpkg_ar_member_put_header``): names without a slash, an odd size padded with ``\\n``."""
    out = [b"!<arch>\n"]
    for name, data in members:
        out.append(f"{name:<16}{0:<12}0     0     100644  {len(data):<10}`\n".encode())
        out.append(data + b"\n" * (len(data) & 1))
    return b"".join(out)


def tar_archive(files: dict[str, bytes], *, format: int = tarfile.GNU_FORMAT) -> bytes:
    """A tar archive of regular files (``name``: bytes), with its end-of-archive blocks."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=format) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def deb_bytes(
    control: bytes | str = CONTROL,
    *,
    control_ext: str = ".gz",
    data_ext: str = ".gz",
    control_tar: bytes | None = None,
    data: bytes | None = None,
) -> bytes:
    """A .deb of ``debian-binary``, ``control.tar<control_ext>`` holding ``./control`` and
    ``data.tar<data_ext>`` holding one small file; ``control_tar`` and ``data``: either
    member given whole instead, compressed as its name says."""
    if control_tar is None:
        raw = control.encode() if isinstance(control, str) else control
        control_tar = COMPRESSORS[control_ext](tar_archive({"./control": raw}))
    if data is None:
        data = COMPRESSORS[data_ext](tar_archive({"./usr/share/built/file.txt": b"hello\n"}))
    return ar_archive(
        [
            ("debian-binary", b"2.0\n"),
            (f"control.tar{control_ext}", control_tar),
            (f"data.tar{data_ext}", data),
        ]
    )


@functools.cache
def _zeros(extension: str) -> bytes:
    return COMPRESSORS[extension](bytes(ZEROS))


def zeros_tar(name: str, size: int, extension: str) -> bytes:
    """A compressed tar archive of one file of ``size`` zero bytes (a multiple of
    :data:`ZEROS`), cheap to build: the header, one compressed piece of zeros repeated,
    then the end, each compressed on its own. gzip members, xz and bzip2 streams and zstd
    frames may follow one another in one file; lzma's legacy format may not, so a .lzma
    one is compressed whole."""
    assert size % ZEROS == 0
    info = tarfile.TarInfo(name)
    info.size, info.mode = size, 0o644
    header = info.tobuf(tarfile.GNU_FORMAT)
    end = bytes(2 * tarfile.BLOCKSIZE)
    if extension in ("", ".lzma"):
        return COMPRESSORS[extension](header + bytes(size) + end)
    compress = COMPRESSORS[extension]
    return compress(header) + _zeros(extension) * (size // ZEROS) + compress(end)
