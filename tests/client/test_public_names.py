"""The public names of ``pkgcat.client``, and the wall between the client and the server."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pkgcat.client
from pkgcat.client import _models, _money, _relations, _webhooks

SRC = Path(pkgcat.client.__file__).parents[1]
CLIENT_FILES = [
    *sorted((SRC / "client").glob("*.py")),
    *sorted((SRC / "cli").glob("client*.py")),  # `pkgcat client`: its commands, config, output
]


def test_all_is_exactly_the_public_names() -> None:
    assert sorted(pkgcat.client.__all__) == [
        "APIConnectionError",
        "APIError",
        "AsyncClient",
        "AuthenticationError",
        "Balance",
        "Buyer",
        "BuyersCursorPage",
        "BuyersPage",
        "Client",
        "Downloads",
        "DownloadsDay",
        "InvalidArgumentError",
        "KeyPlacement",
        "LedgerEntry",
        "NextPayout",
        "NotFoundError",
        "Operator",
        "Ownership",
        "Package",
        "PackagesPage",
        "Payout",
        "PayoutsPage",
        "PermissionDeniedError",
        "PkgcatError",
        "ProtocolError",
        "Purchase",
        "RateLimitError",
        "Refund",
        "Relation",
        "Relations",
        "RequestInProgressError",
        "Sale",
        "SalesPage",
        "SalesTotal",
        "ServerError",
        "Source",
        "SourcePackage",
        "UsageDay",
        "WebhookAttempt",
        "WebhookDeliveries",
        "WebhookEndpoint",
        "WebhookSecret",
        "WhitelistChange",
        "WhitelistEntry",
        "WhitelistPage",
    ]
    for name in pkgcat.client.__all__:
        assert hasattr(pkgcat.client, name), name
    # Public submodules (pkgcat.client.webhooks, once imported) are modules, not leaked names.
    public = {
        n
        for n, value in vars(pkgcat.client).items()
        if not n.startswith("_") and not isinstance(value, ModuleType)
    }
    assert public == set(pkgcat.client.__all__)
    assert len(set(pkgcat.client.__all__)) == len(pkgcat.client.__all__)


@pytest.mark.parametrize(
    "module", [_models, _money, _relations, _webhooks], ids=lambda m: m.__name__
)
def test_every_record_is_exported(module: ModuleType) -> None:
    """A record declared in the client's modules is importable from ``pkgcat.client``: the
    package's ``__all__`` takes the records' modules' ``__all__`` whole."""
    records = {
        name
        for name, value in vars(module).items()
        if isinstance(value, type)
        and value.__module__ == module.__name__
        and not name.startswith("_")
        and not issubclass(value, Exception)
    }
    assert records
    assert records <= set(pkgcat.client.__all__), sorted(records - set(pkgcat.client.__all__))
    for name in records:
        assert getattr(pkgcat.client, name) is getattr(module, name)


def test_the_exception_tree() -> None:
    c = pkgcat.client
    for name in (
        "AuthenticationError", "InvalidArgumentError", "NotFoundError", "PermissionDeniedError",
        "RateLimitError", "ServerError", "ProtocolError",
    ):  # fmt: skip
        assert issubclass(getattr(c, name), c.APIError), name
    assert issubclass(c.APIError, c.PkgcatError)
    assert issubclass(c.APIConnectionError, c.PkgcatError)
    assert not issubclass(c.APIConnectionError, c.APIError)


def test_the_package_ships_its_type_marker() -> None:
    assert (SRC / "py.typed").is_file()


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


def test_the_client_imports_nothing_of_the_server() -> None:
    for path in CLIENT_FILES:
        ours = {m for m in imported_modules(path) if m.split(".")[0] == "pkgcat"}
        # The command's own helpers import only Typer and Rich, which the client installs too.
        helpers = {"pkgcat.cli", "pkgcat.cli._tables", "pkgcat.cli._safe"}
        helpers |= {f"pkgcat.cli.{p.stem}" for p in CLIENT_FILES if p.parent.name == "cli"}
        assert ours <= {"pkgcat", "pkgcat.client"} | helpers | {
            f"pkgcat.client.{p.stem}" for p in CLIENT_FILES
        }, path.name


def test_importing_the_client_loads_no_server_module() -> None:
    probe = (
        "import json, sys, pkgcat.client; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pkgcat.'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(loaded) == [
        "pkgcat.client",
        "pkgcat.client._client",
        "pkgcat.client._core",
        "pkgcat.client._errors",
        "pkgcat.client._methods",
        "pkgcat.client._models",
        "pkgcat.client._money",
        "pkgcat.client._relations",
        "pkgcat.client._shapes",
        "pkgcat.client._webhooks",
    ]


def test_the_server_imports_nothing_of_the_client() -> None:
    for path in SRC.rglob("*.py"):
        if path in CLIENT_FILES or path == SRC / "cli" / "__init__.py":
            continue
        assert not {m for m in imported_modules(path) if m.startswith("pkgcat.client")}, path


def test_only_the_shapes_module_knows_the_shape_formats() -> None:
    formats = ("%d-%m-%Y", "DD-MM-YYYY")
    for path in CLIENT_FILES:
        if path.name == "_shapes.py":
            assert all(f in path.read_text() for f in formats)
            continue
        assert not any(f in path.read_text() for f in formats), path.name
