"""The package's layers, and the one way they import: down, never up, and never in a circle.

:data:`LAYERS` is the map of src/pkgcat, lowest first (docs/architecture.md draws it): a
module may import its own layer and those below it. Every import counts, wherever it is
written: at the top, inside a function (imported later, but still a dependency), or under
``TYPE_CHECKING`` (a type named from above is a dependency on what is above). A module that
no layer names fails the test until it is given one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.client.test_public_names import SRC

LAYERS: list[tuple[str, frozenset[str]]] = [
    ("the version", frozenset({"pkgcat"})),
    # The client is a package of its own: tests/client/test_public_names.py holds it to that.
    ("the client", frozenset({"pkgcat.client"})),
    ("records and rules", frozenset({
        "pkgcat.domain", "pkgcat.errors", "pkgcat.cursors", "pkgcat.keys", "pkgcat.versions",
        "pkgcat.events", "pkgcat.sealing", "pkgcat.loops", "pkgcat.workers", "pkgcat.outages",
        "pkgcat.demo", "pkgcat.demo_debs",
        # Money's amounts, errors and the platform's seam: plain values and rules.
        "pkgcat.money.amounts", "pkgcat.money.errors", "pkgcat.money.platform",
        # The shop's values, errors and prices: what its storage returns and refuses.
        "pkgcat.shop.errors", "pkgcat.shop.values", "pkgcat.shop.quote",
    })),
    ("outbound requests", frozenset({"pkgcat.net"})),
    ("settings", frozenset({"pkgcat.config"})),
    ("logs", frozenset({"pkgcat.logs", "pkgcat.access_log"})),
    ("storage", frozenset({"pkgcat.storage"})),
    ("use cases and their answers", frozenset({
        "pkgcat.services", "pkgcat.models", "pkgcat.metrics", "pkgcat.licences",
    })),
    ("data in", frozenset({"pkgcat.ingest"})),
    ("the served repository", frozenset({"pkgcat.repository"})),
    # The rest of money (its schedule, use cases and scheduler) reads Stripe's events through
    # the store's platform, beside which it sits.
    ("the store, money and the webhooks", frozenset({"pkgcat.store", "pkgcat.money", "pkgcat.webhooks", "pkgcat.shop"})),
    ("HTTP", frozenset({"pkgcat.http"})),
    ("the app", frozenset({"pkgcat.app"})),
    ("the commands", frozenset({"pkgcat.cli", "pkgcat.__main__", "pkgcat.demo_store"})),
]  # fmt: skip
"""Each layer's name and the modules it holds (a package holds its modules), lowest first."""

KNOWN_CIRCLES = {
    # http/idempotency.py names uploads' Incoming in an annotation: one module for every
    # write's idempotency takes it away, and with it this entry.
    frozenset({"pkgcat.http.idempotency", "pkgcat.http.uploads"}),
}
"""Circles there are now, each with what removes it; the test fails when one has gone."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def resolve(name: str) -> str | None:
    """The module an imported name is found in: the longest known module it starts with."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(path: Path) -> set[str]:
    """Every module of ours the file imports, spelt any way, wherever in the file."""
    named: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from pkgcat import ingest` names the module pkgcat.ingest; `from pkgcat.x import
            # f` names pkgcat.x (f is not a module)
            named += [f"{node.module}.{alias.name}" for alias in node.names]
    found = {resolve(name) for name in named if name.split(".")[0] == "pkgcat"}
    return {module for module in found if module is not None}


@cache
def graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(imports_of(path) - {name}) for name, path in MODULES.items()}


def layer_of(module: str) -> int | None:
    """The index of the layer that holds ``module``: it, or the package it is in, is named
    there (``pkgcat`` itself holds only its ``__init__``)."""
    for index, (_, members) in enumerate(LAYERS):
        if any(
            module == member or (member != "pkgcat" and module.startswith(member + "."))
            for member in members
        ):
            return index
    return None


def circles(edges: dict[str, frozenset[str]]) -> Iterator[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[frozenset[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                yield from visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                yield frozenset(component)

    for node in sorted(edges):
        if node not in index:
            yield from visit(node)


def test_the_walk_sees_every_spelling_of_an_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import pkgcat.ingest.load\n"
        "from pkgcat import ingest, __version__\n"
        "from pkgcat.storage import schema as t\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkgcat.services import BuyersPage\n"
        "def later() -> None:\n"
        "    from pkgcat.ingest.control import Mapper\n"
    )
    assert imports_of(probe) == {
        "pkgcat.ingest.load", "pkgcat.ingest", "pkgcat", "pkgcat.storage.schema",
        "pkgcat.services", "pkgcat.ingest.control",
    }  # fmt: skip


def test_the_circle_finder_finds_one_and_only_one() -> None:
    edges = {
        "a": frozenset({"b"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a"}),
        "d": frozenset({"a"}),
    }
    assert list(circles(edges)) == [frozenset({"a", "b", "c"})]


def test_every_module_is_in_a_layer() -> None:
    assert [name for name in MODULES if layer_of(name) is None] == []


@pytest.mark.parametrize("layer", range(len(LAYERS)), ids=[name for name, _ in LAYERS])
def test_a_layer_imports_only_its_own_and_those_below(layer: int) -> None:
    upward = sorted(
        f"{module} imports {target} ({LAYERS[above][0]})"
        for module, targets in graph().items()
        if layer_of(module) == layer
        for target in targets
        if (above := layer_of(target)) is not None and above > layer
    )
    assert upward == []


def test_no_modules_import_one_another_in_a_circle() -> None:
    assert set(circles(graph())) == KNOWN_CIRCLES
