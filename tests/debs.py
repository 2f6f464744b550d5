"""Tiny .deb files for the tests, built by Debian's own dpkg-deb."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from tests.backends import unavailable


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
    """
    if shutil.which("dpkg-deb") is None:
        unavailable("building test .deb files needs dpkg-deb (Debian's dpkg package)")
    root = (
        directory
        / f"build-{package}-{version}-{architecture}-{hashlib.sha1(payload.encode(), usedforsecurity=False).hexdigest()[:8]}"
    )
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
    out = (
        directory
        / f"{package}_{version}_{architecture}_{hashlib.sha1(payload.encode(), usedforsecurity=False).hexdigest()[:8]}.deb"
    )
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
    return out
