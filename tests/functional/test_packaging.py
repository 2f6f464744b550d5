"""What a user installs: the client alone, the version, and what each command loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.backends import unavailable
from tests.servers import demo_server

PROJECT = Path(__file__).resolve().parents[2]
SERVER_LIBRARIES = frozenset(
    {"sqlalchemy", "alembic", "granian", "starlette", "redis", "asyncpg", "psycopg", "orjson"}
)
"""Top-level packages of the ``server``, ``postgres`` and ``redis`` extras."""


def loaded_by(args: Sequence[str]) -> set[str]:
    """The top-level packages a fresh interpreter imports to run ``python args...``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    assert "pkgcat" in names, done.stderr[-2000:]
    return names


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "import pkgcat.client"],
        ["-m", "pkgcat", "--help"],
        ["-m", "pkgcat", "client", "--help"],
        ["-m", "pkgcat", "client", "usage", "--help"],
    ],
    ids=["import", "help", "client-help", "client-usage-help"],
)
def test_the_client_and_the_command_line_load_no_server_library(args: list[str]) -> None:
    assert loaded_by(args) & SERVER_LIBRARIES == set()


def test_a_server_command_loads_what_it_needs() -> None:
    """The guard above can fail: the same check sees SQLAlchemy where it is used."""
    assert "sqlalchemy" in loaded_by(["-m", "pkgcat", "key", "--help"])


def test_the_version_is_the_installed_distribution_s() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pkgcat", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == f"pkgcat {version('pkgcat')}\n"


@pytest.mark.server
def test_a_client_only_install_reads_a_running_server(tmp_path: Path) -> None:
    """``pip install pkgcat`` in a fresh virtualenv: the client and its commands, no server.

    The locked versions, without any extra, installed offline by uv from the cache that
    ``make setup`` filled: the test needs no network.
    """
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        unavailable(f"uv is not installed beside {sys.executable} (make setup installs it)")
    venv = tmp_path / "client-only"
    installed = subprocess.run(
        [uv, "sync", "--frozen", "--offline", "--no-editable", "--quiet"],  # no extra: the client
        cwd=PROJECT,
        env={**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if installed.returncode != 0:
        unavailable(f"uv could not install from its cache (run make setup): {installed.stderr}")
    python, pkgcat = venv / "bin" / "python", venv / "bin" / "pkgcat"
    for library in sorted(SERVER_LIBRARIES):
        found = subprocess.run(
            [python, "-c", f"import {library}"], capture_output=True, check=False
        )
        assert found.returncode != 0, f"{library} was installed with the client"

    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    refused = subprocess.run(
        [pkgcat, "serve"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert refused.returncode == 2
    assert "pip install 'pkgcat[server]'" in refused.stderr

    with demo_server(tmp_path) as served:
        app = served.apps[0]
        env |= {"PKGCAT_BASE_URL": served.base, "PKGCAT_SECRET_KEY": app["secret_key"]}
        done = subprocess.run(
            [pkgcat, "client", "package", app["paid_package"], "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["package"] == app["paid_package"]
