"""What a user installs: the client alone, the version, and what each command loads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from importlib.metadata import packages_distributions, requires, version
from importlib.util import find_spec
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.backends import unavailable
from tests.servers import PKGCAT, demo_server, environment, free_port, pasted, serving

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[2]


def _server_libraries() -> frozenset[str]:
    """The import names of what the ``server``, ``postgres`` and ``redis`` extras add."""
    modules_of: dict[str, set[str]] = {}
    for module, distributions in packages_distributions().items():
        for distribution in distributions:
            modules_of.setdefault(canonicalize_name(distribution), set()).add(module)
    found: set[str] = set()
    for line in requires("pkgcat") or []:
        requirement = Requirement(line)
        marker = str(requirement.marker or "")
        if any(f'extra == "{extra}"' in marker for extra in ("server", "postgres", "redis")):
            found |= modules_of.get(canonicalize_name(requirement.name), set())
    # What the client's own requirements bring (rich brings markdown-it-py) is the client's.
    for distribution in _the_client_s_distributions():
        found -= modules_of.get(distribution, set())
    # python-debian also ships a `test` package, which the standard library's shadows.
    return frozenset(name for name in found - {"pkgcat"} if not _in_the_standard_library(name))


def _the_client_s_distributions() -> set[str]:
    """Every distribution ``pip install pkgcat`` installs, without an extra, by name."""
    seen: set[str] = set()
    waiting = [
        Requirement(line)
        for line in requires("pkgcat") or []
        if "extra ==" not in str(Requirement(line).marker or "")
    ]
    while waiting:
        requirement = waiting.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker is not None and not requirement.marker.evaluate()):
            continue
        seen.add(name)
        waiting.extend(Requirement(line) for line in requires(requirement.name) or [])
    return seen


def _in_the_standard_library(module: str) -> bool:
    spec = find_spec(module)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return spec is not None and spec.origin is not None and stdlib in Path(spec.origin).parents


SERVER_LIBRARIES = _server_libraries()
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
    # httpx imports zstandard, a server library, for itself when it is installed.
    by_httpx = loaded_by(["-c", "import httpx, pkgcat"])
    assert (loaded_by(args) - by_httpx) & SERVER_LIBRARIES == set()


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


@pytest.mark.server
def test_every_command_the_demo_prints_works_when_pasted(tmp_path: Path) -> None:
    """What `make run` prints, pasted into a shell of the same folder whose PATH does not
    hold the project's .venv/bin (make does not put it there): each command works."""
    curl = shutil.which("curl")
    if curl is None:
        unavailable("curl is missing: the demo prints curl commands (apt-get install curl)")
    port = free_port()
    env = environment(f"sqlite:///{tmp_path / 'demo.db'}", port=str(port))
    bin_dir = Path(PKGCAT).parent
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", os.defpath).split(os.pathsep) if Path(part) != bin_dir
    )
    env["PATH"] = os.pathsep.join([str(Path(curl).parent), env["PATH"]])
    assert shutil.which("pkgcat", path=env["PATH"]) is None, "pkgcat must not be on the PATH"
    folder = bin_dir.parent.parent  # `make run` runs .venv/bin/pkgcat from the project's folder
    demo = pasted(f"{os.path.relpath(PKGCAT, folder)} demo", env, folder)
    assert demo.returncode == 0, demo.stderr
    printed = demo.stdout.splitlines()
    at = printed.index("try:")
    curls = [line.strip() for line in printed[at + 1 : at + 4]]
    assert all(line.startswith("curl ") for line in curls), curls
    at = printed.index("or, with pkgcat's own client (it reads the key from the environment):")
    export, command = (line.strip() for line in printed[at + 1 : at + 3])
    assert export.startswith("export PKGCAT_SECRET_KEY=pkc_")
    with serving(env, tmp_path / "server.log", port=port):
        for line in curls:
            done = pasted(line, env, folder)
            assert done.returncode == 0, (line, done.stderr)
            assert json.loads(done.stdout)["code"] == 0, (line, done.stdout)
        done = pasted(f"{export}\n{command}", env, folder)
    assert done.returncode == 0, (command, done.stderr)
    assert "com.havoclabs.velvet" in done.stdout
