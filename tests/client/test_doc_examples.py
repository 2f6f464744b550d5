"""docs/cli.md's `pkgcat client` examples work today, pasted into a shell against the demo.

Dates in them are relative to today (`$(date +%Y-%m-01)`), so an example never asks for a
day after today; this test runs each one against a served demo catalogue, whose usage and
sales are dated from today too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import PKGCAT, Served, demo_server, pasted
from tests.test_docs import DOCS, read, sections

pytestmark = pytest.mark.server

DEFAULT_ADDRESS = "http://127.0.0.1:8000"
"""The address the examples name, where `make run` serves; the test's server is elsewhere."""


def examples() -> list[str]:
    """Every `pkgcat client` line of the shell blocks of docs/cli.md's client sections."""
    found: list[str] = []
    for heading, body in sections(read(DOCS / "cli.md")).items():
        if heading.startswith("`pkgcat client"):
            for block in re.findall(r"```sh\n(.*?)```", body, flags=re.DOTALL):
                found += [line for line in block.splitlines() if line.startswith("pkgcat client")]
    return found


EXAMPLES = examples()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with demo_server(tmp_path_factory.mktemp("examples")) as server:
        yield server


def test_every_client_section_has_an_example() -> None:
    assert len(EXAMPLES) >= 6
    assert any("--by operation" in line for line in EXAMPLES)


@pytest.mark.parametrize("line", EXAMPLES)
def test_the_example_works_today(served: Served, line: str, tmp_path: Path) -> None:
    env = {
        **served.env,
        "PATH": os.pathsep.join([str(Path(PKGCAT).parent), os.environ.get("PATH", os.defpath)]),
        "PKGCAT_SECRET_KEY": served.apps[0]["secret_key"],
        "PKGCAT_BASE_URL": served.base,
    }
    done = pasted(line.replace(DEFAULT_ADDRESS, served.base), env, tmp_path)
    assert done.returncode == 0, (line, done.stdout, done.stderr)
    written = re.search(r"> (\S+)", line)
    output = (tmp_path / written.group(1)).read_text() if written else done.stdout
    assert output.strip(), line
    if "--by operation" in line:  # the demo's recent days are split: a column per operation
        header = output.splitlines()[0].split(",")
        assert {"package/details", "application/usage"} <= set(header), header
