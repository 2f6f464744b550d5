"""The demo's .deb files, built in-process: the same bytes from the same catalogue, every time.

A .deb (deb(5)) is an ar archive of ``debian-binary`` (``2.0``), ``control.tar.gz`` and
``data.tar.gz``, in that order. Every time stamp inside (ar headers, tar members, gzip
headers) is the fixed :data:`BUILT`, every owner root, so a package's file, and so its
SHA-256 and its place in the pool, depends only on what the demo catalogue says of it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from typing import Any

BUILT = 1709164800
"""2024-02-29 00:00:00 UTC (the demo's seed): the time stamp of everything in every file."""


def _ar_member(name: str, data: bytes) -> bytes:
    # ar(5): a 60-byte header of fixed-width ASCII fields, then the data padded to even length.
    header = f"{name:<16}{BUILT:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
    assert len(header) == 60
    return header + data + (b"\n" if len(data) % 2 else b"")


def _tar_gz(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        directories = sorted(
            {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
        )
        for directory in directories:
            entry = tarfile.TarInfo(f"./{directory}")
            entry.type, entry.mode, entry.mtime = tarfile.DIRTYPE, 0o755, BUILT
            tar.addfile(entry)
        for path, data in sorted(files.items()):
            entry = tarfile.TarInfo(f"./{path}")
            entry.size, entry.mode, entry.mtime = len(data), 0o644, BUILT
            tar.addfile(entry, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=BUILT) as out:
        out.write(raw.getvalue())
    return packed.getvalue()


def _description(short: str, long: str) -> str:
    """deb-control(5): the first line, then each further line indented, ``.`` for a blank."""
    lines = [f" {line}" if line.strip() else " ." for line in long.splitlines()]
    return "\n".join([short, *lines])


def control(package: dict[str, Any], architecture: str) -> str:
    """The control file of one demo package (a row of :func:`pkgcat.demo.build`'s packages)."""
    fields = {
        "Package": package["package"],
        "Name": package["name"],
        "Version": package["version"],
        "Architecture": architecture,
        "Maintainer": package["author"],
        "Author": package["author"],
        "Section": package["section"],
        "Pre-Depends": package["pre_depends"],
        "Depends": package["depends"],
        "Conflicts": package["conflicts"],
        "Replaces": package["replaces"],
        "Description": _description(package["description"], package["long_description"]),
    }
    return "".join(f"{name}: {value}\n" for name, value in fields.items() if value)


def deb(package: dict[str, Any], architecture: str) -> bytes:
    """The .deb of one demo package for one architecture."""
    name = package["package"]
    # Rootless (arm64) packages install under /var/jb, rootful ones at the root.
    root = "var/jb/" if architecture == "iphoneos-arm64" else ""
    readme = (
        f"{package['name']} {package['version']} ({architecture})\n\n"
        f"{package['long_description']}\n\nA package of pkgcat's demo catalogue.\n"
    ).encode()
    data = _tar_gz({f"{root}usr/share/doc/{name}/README": readme})
    meta = _tar_gz({"control": control(package, architecture).encode()})
    return (
        b"!<arch>\n"
        + _ar_member("debian-binary", b"2.0\n")
        + _ar_member("control.tar.gz", meta)
        + _ar_member("data.tar.gz", data)
    )
