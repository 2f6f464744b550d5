"""The typed client, the CLI and docs/api.md agree with the operation table.

Each *served* operation of :mod:`pkgcat.http.operations` has a method of the same
parameters in both clients and a ``pkgcat client`` command with an option or
argument per parameter; docs/api.md's parameter table of each lists the same
parameters, with the table's defaults and bounds.
"""

from __future__ import annotations

import inspect
import re
from datetime import date
from typing import Any

import pytest
from openapi_spec_validator import validate

from pkgcat.cli import command_tree
from pkgcat.client import AsyncClient, Client
from pkgcat.errors import InvalidArgument
from pkgcat.events import NAMES as EVENT_NAMES
from pkgcat.http.openapi import openapi_document, served
from pkgcat.http.operations import (
    BY_NAME,
    DAYS,
    DRM_PATH,
    LIMIT,
    OPERATIONS,
    PACKAGE,
    Operation,
    Parameter,
)
from tests.test_docs import DOCS, read, sections, table_rows

SERVED = served()
IDS = [o.name for o in SERVED]


def _python_name(parameter: Parameter) -> str:
    """How the clients name a parameter: the package is ``package_id`` (``package`` is a method)."""
    return "package_id" if parameter.name == "package" else parameter.name


@pytest.mark.parametrize("operation", SERVED, ids=IDS)
@pytest.mark.parametrize("client", [Client, AsyncClient])
def test_every_served_operation_has_a_client_method_with_its_parameters(
    operation: Operation, client: type[object]
) -> None:
    method = getattr(client, operation.client_name, None)
    assert method is not None, f"{client.__name__} has no method {operation.client_name}"
    # Besides: an upload's progress callback, which no request carries.
    names = [n for n in inspect.signature(method).parameters if n not in ("self", "progress")]
    # A write takes its body (the file, or the fields as parameters) and the Idempotency-Key.
    written = (
        ([] if operation.fields else ["file"]) + ["idempotency_key"] if operation.writes else []
    )
    assert names == [_python_name(p) for p in operation.served_parameters()] + written


@pytest.mark.parametrize("operation", SERVED, ids=IDS)
def test_every_served_operation_has_a_cli_command_with_its_parameters(
    operation: Operation,
) -> None:
    command: Any = command_tree().commands["client"]
    for word in operation.command_path:  # a group's commands: `pkgcat client webhook create`
        command = command.commands.get(word) if command is not None else None
    assert command is not None, f"no `pkgcat client {' '.join(operation.command_path)}`"
    given = {p.name for p in command.params}
    assert {_python_name(p) for p in operation.served_parameters()} <= given


def _documented(operation: Operation) -> dict[str, dict[str, str]]:
    """The rows of the operation's parameter table in docs/api.md: parameter to column to cell."""
    (body,) = (
        body
        for heading, body in sections(read(DOCS / "api.md")).items()
        if f"`{operation.method} {operation.path}`" in heading
    )
    table = re.search(r"^\| Parameter .*?(?:\n\n|\Z)", body, flags=re.MULTILINE | re.DOTALL)
    assert table is not None, f"docs/api.md has no parameter table for {operation.path}"
    header, *cells = table_rows(table.group(0))
    return {row[0].strip("`"): dict(zip(header, row, strict=True)) for row in cells}


@pytest.mark.parametrize("operation", SERVED, ids=IDS)
def test_docs_parameter_tables_match_the_table(operation: Operation) -> None:
    rows = _documented(operation)
    assert set(rows) - {"secret_key"} == {p.name for p in operation.served_parameters()}
    for parameter in operation.served_parameters():
        row = rows[parameter.name]
        assert row["Required"].startswith("yes" if parameter.required else "no"), parameter.name
        if parameter.default is not None:
            assert row["Default"] == str(parameter.default), parameter.name
        if parameter.minimum is not None and parameter.maximum is not None:
            bounds = f"{parameter.minimum} to {parameter.maximum}"
            assert row["Bounds"].startswith(bounds), (parameter.name, row["Bounds"])


def test_the_declared_operations_make_a_valid_document_of_their_own() -> None:
    """Every operation, parameter and model of the table, served or not, as one document."""
    document = openapi_document(every=True)
    validate(document)
    # Besides the table's operations, the DRM check at Packix's own path.
    assert set(document["paths"]) == {o.path for o in OPERATIONS} | {DRM_PATH}
    assert {o.path for o in SERVED} | {DRM_PATH} == set(openapi_document()["paths"])
    usage = document["paths"]["/1.0/application/usage.json"]["get"]
    assert {p["name"] for p in usage["parameters"]} == {"days", "start", "end", "by"}
    schemas = document["components"]["schemas"]
    assert {"Sales", "SalesTotal", "Ownership", "SourcePackagesA", "BuyersCursorPage"} <= set(
        schemas
    )
    assert schemas["SourcePackageA"]["properties"]["updated"]["format"] == "date-time"
    assert "format" not in schemas["SourcePackageB"]["properties"]["updated"]


def test_a_page_size_is_clamped_and_flags_days_and_choices_are_checked() -> None:
    assert LIMIT.page_size({}) == 25
    assert LIMIT.page_size({"limit": "1000"}) == 100
    sales = BY_NAME["source/sales"]
    assert sales.parameter("status").choice({"status": "Refunded"}) == "refunded"
    assert sales.parameter("start").day({"start": "2026-02-28"}) == date(2026, 2, 28)
    assert BY_NAME["application/usage"].parameter("by").choice({"by": "operation"}) == "operation"
    for parameter, value, problem in (
        (LIMIT, "0", "must be at least 1, got 0"),
        (DAYS, "366", "must be between 1 and 365, got 366"),
        (
            sales.parameter("status"),
            "paid",
            "must be completed, refunded or chargeback, got 'paid'",
        ),
        (
            BY_NAME["application/usage"].parameter("by"),
            "Operation",
            "must be operation, got 'Operation'",
        ),
        (sales.parameter("start"), "2026-2-28", "must be a date as YYYY-MM-DD, got '2026-2-28'"),
        (sales.parameter("start"), "2026-02-30", "must be a date as YYYY-MM-DD, got '2026-02-30'"),
        (BY_NAME["source/packages"].parameter("paid"), "2", "must be 0 or 1, got '2'"),
        (PACKAGE, " \t", "missing; give a package identifier"),
    ):
        read = {
            "integer": parameter.bounded,
            "choice": parameter.choice,
            "day": parameter.day,
            "flag": parameter.flag,
            "string": parameter.identifier,
        }[parameter.kind]
        with pytest.raises(InvalidArgument) as refused:
            read({parameter.name: value})
        assert refused.value.parameter == parameter.name
        assert str(refused.value) == f"{parameter.name}: {problem}"


def test_the_readers_take_a_writes_fields_as_they_take_a_query() -> None:
    """A JSON body's values (booleans, numbers, arrays, null) go through the same readers."""
    update = BY_NAME["webhook/update"]
    enabled, events, url = (update.parameter(n) for n in ("enabled", "events", "url"))
    assert enabled.flag({"enabled": True}) is True
    assert enabled.flag({"enabled": 0}) is False
    assert enabled.flag({"enabled": " 1 "}) is True
    assert enabled.flag({"enabled": None}) is None
    assert events.items({"events": "sale.completed, sale.refunded"}) == [
        "sale.completed",
        "sale.refunded",
    ]
    assert events.items({"events": ["sale.completed"]}) == ["sale.completed"]
    assert url.text({}) is None  # not required in an update
    assert LIMIT.page_size({"limit": 7}) == 7
    for parameter, fields, problem in (
        (enabled, {"enabled": 2}, "must be 0 or 1, got 2"),
        (enabled, {"enabled": 1.5}, "must be an integer of at most 12 digits, got 1.5"),
        (events, {"events": [1]}, "must be a list of event types"),
        (url, {"url": ["https://x"]}, "must be a non-blank string"),
        (url, {"url": " "}, "missing; give an https:// address"),
        (BY_NAME["webhook/create"].parameter("events"), {}, "missing; give a list of event types"),
        (BY_NAME["webhook/test"].parameter("event_type"), {"event_type": None},
         f"missing; give one of {', '.join(EVENT_NAMES)}"),
    ):  # fmt: skip
        read = {"flag": parameter.flag, "list": parameter.items, "string": parameter.text}.get(
            parameter.kind, parameter.choice
        )
        with pytest.raises(InvalidArgument) as refused:
            read(fields)
        assert str(refused.value) == f"{parameter.name}: {problem}"
