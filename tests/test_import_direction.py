"""The layers import one way: ingest and the repository import storage, never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.client.test_public_names import SRC, imported_modules

STORAGE = sorted((SRC / "storage").rglob("*.py"))


def imports_of(path: Path) -> set[str]:
    """Every module the file imports, ``from pkgcat import ingest`` as ``pkgcat.ingest``."""
    modules = imported_modules(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}
    return modules


def test_the_walk_sees_every_spelling_of_an_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import pkgcat.ingest.load\n"
        "from pkgcat import ingest\n"
        "def later() -> None:\n"
        "    from pkgcat.ingest.control import Mapper\n"
    )
    assert {"pkgcat.ingest.load", "pkgcat.ingest", "pkgcat.ingest.control"} <= imports_of(probe)


@pytest.mark.parametrize("path", STORAGE, ids=[str(p.relative_to(SRC)) for p in STORAGE])
def test_storage_imports_nothing_of_ingest(path: Path) -> None:
    found = {m for m in imports_of(path) if m == "pkgcat.ingest" or m.startswith("pkgcat.ingest.")}
    assert not found, f"{path.relative_to(SRC)} imports {sorted(found)}"
