"""The client's generated methods agree with the operation table.

``src/pkgcat/client/_methods.py`` is written by ``tools/client_methods.py`` from the table and
the client's descriptions (``make client-methods``); the file is committed, so that the client
imports nothing of the server. A change of the table that the file does not carry yet (a
parameter, a path, an operation served) fails here until the file is written again.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import replace

import pytest
from tools import client_methods

from pkgcat.client import AsyncClient, Client
from pkgcat.http import operations
from pkgcat.http.operations import BY_NAME, Parameter


def test_the_committed_methods_are_what_the_table_writes() -> None:
    assert client_methods.TARGET.read_text() == client_methods.render(), (
        "src/pkgcat/client/_methods.py differs from the table: run `make client-methods`"
    )


def test_a_parameter_added_to_the_table_reaches_both_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the drift test guards: the generated text follows the table (here, a parameter
    more for ``package/check``), so a table that moved on no longer matches the file."""
    check = BY_NAME["package/check"]
    region = Parameter("region", "string", "Only purchases made in this region.")
    grown = {**BY_NAME, check.name: replace(check, parameters=(*check.parameters, region))}
    monkeypatch.setattr(client_methods, "BY_NAME", grown)
    text = client_methods.render()
    assert text != client_methods.TARGET.read_text()
    # In both classes: the signature (keyword-only, as check's other optional parameters) and
    # the query, in the table's order.
    assert text.count("region: str | None = None") == 2
    assert len(re.findall(r"model=model,\s+region=region\b", text)) == 2


def test_a_served_operation_without_a_described_method_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    details = BY_NAME["package/details"]
    versions = replace(details, name="package/versions", client="versions")
    monkeypatch.setattr(client_methods, "served", lambda: (*operations.OPERATIONS, versions))
    with pytest.raises(LookupError, match=r"package/versions"):
        client_methods.render()


@pytest.mark.parametrize("name", ["usage", "buyers", "iter_sales", "upload", "webhook_update"])
def test_both_clients_get_the_same_signature_and_docstring(name: str) -> None:
    """One description, two methods: the same parameters, defaults and documentation (the
    blocking upload's progress callback aside), which editors and ``help()`` show."""
    blocking = inspect.signature(getattr(Client, name)).parameters
    awaiting = inspect.signature(getattr(AsyncClient, name)).parameters
    assert [p for n, p in blocking.items() if n != "progress"] == list(awaiting.values())
    assert getattr(Client, name).__doc__ == getattr(AsyncClient, name).__doc__
    assert getattr(Client, name).__doc__
