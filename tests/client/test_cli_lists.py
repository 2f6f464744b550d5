"""``pkgcat client packages | check | sales``, usage by range, buyers by cursor: every format."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from typing import Any

import pytest

from pkgcat.cli.client import jsonable
from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.client.conftest import (
    KEY,
    TERMINAL,
    Connect,
    Double,
    Run,
    answer,
    invoke,
    recorded,
    shown,
)


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def as_csv(value: object) -> str:
    """A canonical value as the CSV writes it."""
    shown = jsonable(value)
    return "" if shown is None else shown if isinstance(shown, str) else json.dumps(shown)


@pytest.fixture
def sales_catalogue(admin: CatalogueAdmin, clock: Any, catalogue: dict[str, str]) -> None:
    admin.load(
        purchases=[
            f.purchase(1, 4, clock.now - timedelta(hours=n), txn_id=f"W-{n:03d}", currency="EUR")
            for n in range(1, 6)
        ]
        + [f.purchase(1, 1, clock.now - timedelta(hours=9), txn_id="R-1", status="Refunded")]
    )


@pytest.mark.parametrize("app", ["alpha-a", "alpha-b"])
def test_packages_csv_is_the_apis_data(run: Run, connect: Connect, app: str) -> None:
    result = run(app, "packages", "--format", "csv")
    assert result.exit_code == 0, result.output
    expected = connect(app).packages().packages
    parsed = rows(result.stdout)
    assert [r["package"] for r in parsed] == [p.package for p in expected]
    for row, package in zip(parsed, expected, strict=True):
        assert row == {name: as_csv(getattr(package, name)) for name in row}
    assert parsed[0]["updated"] == "2024-03-10T12:00:00+00:00"  # the same in both shapes


def test_packages_json_table_and_filters(run: Run) -> None:
    page = json.loads(run("alpha-a", "packages", "--paid", "--online", "--json").stdout)
    assert [p["package"] for p in page["packages"]] == ["com.alpha.other", "com.alpha.paid"]
    assert page["packages"][1]["price"] == "1.99"
    assert (page["has_more"], page["cursor"]) == (False, None)
    first = json.loads(run("alpha-a", "packages", "--limit", "1", "--json").stdout)
    assert first["has_more"] is True
    second = json.loads(
        run("alpha-a", "packages", "--limit", "1", "--cursor", first["cursor"], "--json").stdout
    )
    assert [p["package"] for p in second["packages"]] == ["com.alpha.offline"]
    every = json.loads(run("alpha-a", "packages", "--all", "--limit", "1", "--json").stdout)
    assert len(every) == 4
    table = shown(run("alpha-a", "packages", env=TERMINAL))
    assert "com.alpha.offline" in table
    assert "free" in table
    assert "4 packages; the last page" in table


def test_check_in_every_format(run: Run, admin: CatalogueAdmin, clock: Any) -> None:
    admin.load(
        purchases=[
            f.purchase(1, None, clock.now - timedelta(days=6), nickname="ada", txn_id="ADA-1"),
        ]
    )
    args = ("check", "com.alpha.paid", "--nickname", "ada")
    as_json = json.loads(run("alpha-b", *args, "--format", "json").stdout)
    assert as_json == {
        "package": "com.alpha.paid",
        "owned": True,
        "since": "2024-03-25T12:00:00+00:00",
        "purchase": {"txn_id": "ADA-1", "allowed_for": "source"},
        "udid": None,  # a check by buyer: no device asked about
        "check": None,
    }
    assert rows(run("alpha-a", *args, "--csv").stdout) == [
        {
            "package": "com.alpha.paid",
            "owned": "true",
            "since": "2024-03-25T12:00:00+00:00",
            "txn_id": "ADA-1",
            "allowed_for": "source",
        }
    ]
    table = shown(run("alpha-a", *args, env=TERMINAL))
    assert "com.alpha.paid: owned" in table
    assert "ADA-1" in table
    not_owned = run("alpha-a", "check", "com.alpha.paid", "--nickname", "nobody")
    assert not_owned.exit_code == 0
    assert not_owned.stdout.splitlines()[1].split("\t")[:2] == ["com.alpha.paid", "false"]
    missing = run("alpha-a", "check", "com.alpha.paid")
    assert missing.exit_code == 4  # code 2: no buyer named
    assert missing.stderr.startswith("error: ")


@pytest.mark.usefixtures("sales_catalogue")
def test_sales_csv_all_is_the_apis_data(run: Run, connect: Connect) -> None:
    result = run("alpha-a", "sales", "--all", "--limit", "4", "--csv")
    assert result.exit_code == 0, result.output
    expected = list(connect("alpha-a").iter_sales())
    parsed = rows(result.stdout)
    assert len(parsed) == len(expected) == 10
    for row, sale in zip(parsed, expected, strict=True):
        assert row == {name: as_csv(getattr(sale, name)) for name in row}


@pytest.mark.usefixtures("sales_catalogue")
def test_sales_totals_per_currency(run: Run, connect: Connect) -> None:
    totals = json.loads(run("alpha-b", "sales", "--totals", "--json").stdout)
    assert [t["currency"] for t in totals] == ["EUR", "USD"]
    assert totals[0] == {
        "currency": "EUR",
        "sales": 5,
        "gross": "9.95",
        "commission": "1.50",
        "net": "8.45",
        "refunds": 0,
        "refunded": "0.00",
        "fee": "0.00",
    }
    assert (totals[1]["refunds"], totals[1]["refunded"]) == (1, "1.99")
    as_csv_rows = rows(run("alpha-a", "sales", "--totals", "--csv").stdout)
    assert [r["net"] for r in as_csv_rows] == [t["net"] for t in totals]
    whole = json.loads(run("alpha-a", "sales", "--all", "--limit", "3", "--json").stdout)
    assert len(whole["sales"]) == 10
    assert whole["totals"] == totals
    assert (whole["has_more"], whole["cursor"]) == (False, None)
    table = shown(run("alpha-a", "sales", "--limit", "3", env=TERMINAL))
    assert "Totals from 2024-03-02 to 2024-03-31" in table
    assert "W-001" in table
    assert "(whole source)" in table or "S-MID" not in table
    eur = next(line for line in table.splitlines() if line.strip("│ ").startswith("EUR"))
    assert "9.95" in eur
    assert "8.45" in eur


@pytest.mark.usefixtures("sales_catalogue")
def test_sales_filters_and_range(run: Run, connect: Connect) -> None:
    refunded = json.loads(run("alpha-a", "sales", "--status", "Refunded", "--json").stdout)
    assert [s["txn_id"] for s in refunded["sales"]] == ["R-1"]
    one_day = json.loads(
        run("alpha-a", "sales", "--start", "2024-03-30", "--end", "2024-03-30", "--json").stdout
    )
    assert (one_day["start"], one_day["end"]) == ("2024-03-30", "2024-03-30")
    assert [s["txn_id"] for s in one_day["sales"]] == ["P-NEW"]
    late = run("alpha-a", "sales", "--end", "2024-04-02")
    assert late.exit_code == 4
    assert "end" in late.stderr
    bad = run("alpha-a", "sales", "--start", "30-03-2024")
    assert bad.exit_code == 2


def test_buyers_one_cursor_page_and_its_cursor(run: Run) -> None:
    page = json.loads(
        run("alpha-a", "buyers", "com.alpha.paid", "--cursor", "", "--limit", "2", "--json").stdout
    )
    assert (page["limit"], page["total"], page["has_more"]) == (2, 3, True)
    assert [b["txn_id"] for b in page["buyers"]] == ["P-NEW", "S-MID"]
    rest = run("alpha-a", "buyers", "com.alpha.paid", "--cursor", page["cursor"], "--csv")
    assert [r["txn_id"] for r in rows(rest.stdout)] == ["P-OLD"]
    table = shown(run("alpha-a", "buyers", "com.alpha.paid", "--cursor", "", env=TERMINAL))
    assert "3 of 3 buyers; the last page" in table


def test_buyers_all_on_a_terminal_shows_the_table_after_its_progress(run: Run) -> None:
    table = shown(run("alpha-a", "buyers", "com.alpha.paid", "--all", "--limit", "1", env=TERMINAL))
    assert "3 buyers of com.alpha.paid" in table


def test_usage_csv_and_json_by_operation_from_a_recording() -> None:
    body = recorded("usage_operations_a")["response"]
    result = invoke(Double(answer(0, body)).transport, KEY, "usage", "--by", "operation", "--csv")
    parsed = rows(result.stdout)
    assert list(parsed[0]) == [
        "date", "usage", "application/usage", "package/buyers", "package/check",
        "package/details", "source/sales",
    ]  # fmt: skip
    assert parsed[0]["package/details"] == "100"
    assert parsed[1]["package/details"] == "0"  # a day without it
    as_json = invoke(Double(answer(0, body)).transport, KEY, "usage", "--by", "operation", "--json")
    assert json.loads(as_json.stdout)[0]["operations"] == {
        "package/details": 100,
        "package/buyers": 43,
    }
    table = shown(
        invoke(Double(answer(0, body)).transport, KEY, "usage", "--by", "operation", env=TERMINAL)
    )
    assert "package/details" in table
    wrong = invoke(Double(answer(0, body)).transport, KEY, "usage", "--by", "day")
    assert wrong.exit_code == 2


@pytest.mark.parametrize(
    "args",
    [
        ["usage", "--format", "xml"],
        ["usage", "--format", "json", "--csv"],
        ["packages", "--all", "--cursor", "x"],
        ["buyers", "p", "--page", "2", "--cursor", ""],
    ],
)
def test_usage_errors_of_the_new_options(args: list[str]) -> None:
    double = Double(answer(0, []))
    result = invoke(double.transport, KEY, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert double.requests == []


def test_usage_by_operation_against_the_server_in_csv(run: Run, clock: Any) -> None:
    day = clock.now.date().isoformat()
    result = run("alpha-b", "usage", "--start", day, "--end", day, "--by", "operation", "--csv")
    assert rows(result.stdout) == [
        {"date": "2024-03-31T00:00:00+00:00", "usage": "1", "application/usage": "1"}
    ]


def test_package_csv_is_field_and_value(run: Run, connect: Connect) -> None:
    result = run("alpha-b", "package", "com.alpha.paid", "--format", "csv")
    fields = {r["field"]: r["value"] for r in rows(result.stdout)}
    package = connect("alpha-b").package("com.alpha.paid")
    assert fields["date"] == as_csv(package.date) == "2024-03-10T12:00:00+00:00"
    assert (fields["price"], fields["sha256"], fields["source.origin"]) == ("1.99", "", "")
    assert fields["depends"] == package.depends.raw
