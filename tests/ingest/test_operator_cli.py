"""``pkgcat import-prices``, ``import-purchases`` and ``import-stats`` on each backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f


@pytest.fixture
def pkgcat(database_url: str, admin: CatalogueAdmin, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The command on the test's database (on each backend), holding two packages."""
    admin.load(
        sources=[f.source(1, "Alpha")],
        packages=[f.package(1, 1, "com.alpha.paid"), f.package(2, 1, "com.alpha.tool")],
    )
    monkeypatch.setenv("PKGCAT_DATABASE_URL", database_url)
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, list(args), catch_exceptions=False)


def prices(admin: CatalogueAdmin) -> list[tuple[str, str]]:
    with admin.engine.connect() as db:
        query = select(t.packages.c.price, t.packages.c.currency).order_by(t.packages.c.id)
        return [(row.price, row.currency) for row in db.execute(query)]


def test_extra_columns_are_named_on_stderr_and_in_json(
    tmp_path: Path, pkgcat: Any, admin: CatalogueAdmin
) -> None:
    file = tmp_path / "prices.csv"
    file.write_text("package;price;currency;comment\ncom.alpha.paid;2.49;EUR;sale\n")
    result = pkgcat("import-prices", str(file), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "file": str(file), "rows": 1, "added": 0, "updated": 1, "unchanged": 0,
        "ignored_columns": ["comment"],
    }  # fmt: skip
    assert result.stderr == "warning: prices.csv: column 'comment' ignored\n"
    assert prices(admin)[0] == ("2.49", "EUR")


def test_a_named_delimiter_reads_the_file(
    tmp_path: Path, pkgcat: Any, admin: CatalogueAdmin
) -> None:
    file = tmp_path / "prices.csv"
    file.write_text("package\tprice\tcurrency\ncom.alpha.tool\t0\tUSD\n")
    result = pkgcat("import-prices", str(file), "--delimiter", "tab")
    assert result.exit_code == 0, result.output
    assert result.stdout == "prices: 1 rows, 0 added, 1 updated, 0 unchanged\n"
    assert prices(admin)[1] == ("0", "USD")


def test_a_bad_delimiter_option_is_a_usage_error(tmp_path: Path, pkgcat: Any) -> None:
    csv_file, jsonl_file = tmp_path / "prices.csv", tmp_path / "prices.jsonl"
    csv_file.write_text("package,price,currency\n")
    jsonl_file.write_text("")
    long = pkgcat("import-prices", str(csv_file), "--delimiter", ";;")
    assert (long.exit_code, long.stderr) == (
        2,
        "error: --delimiter: ';;'; give one character, such as ';', or 'tab'\n",
    )
    not_csv = pkgcat("import-prices", str(jsonl_file), "--delimiter", ";")
    assert (not_csv.exit_code, not_csv.stderr) == (
        2,
        "error: --delimiter: prices.jsonl is not a .csv file\n",
    )


def test_the_first_problems_are_listed_and_the_rest_counted(
    tmp_path: Path, pkgcat: Any, admin: CatalogueAdmin
) -> None:
    file = tmp_path / "stats.csv"
    rows = "".join(f"com.alpha.paid,{n},x,0\n" for n in range(30))
    file.write_text("package,total_download,total_votes,total_value_votes\n" + rows)
    result = pkgcat("import-stats", str(file))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "  line 2: column 'total_votes': 'x' is not a whole number; "
        "hint: digits only, like 1500 (0 or more)"
    )
    # 30 bad votes and 29 repeated packages: 20 shown, the other 39 counted.
    assert len(lines) == 22
    assert lines[-2:] == [
        "  ... and 39 more",
        f"error: {file}: 59 problems, nothing was imported",
    ]
    with admin.engine.connect() as db:
        downloads = db.execute(select(t.packages.c.total_download)).scalars().all()
    assert downloads == [1234, 1234]  # as the factory made them: nothing was written
