"""The dashboard's whitelist view in Chromium: a package's devices, added and removed with a
key of the whitelist scope, against a served demo catalogue; what it shows is what the API
answers the same key."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.browser.test_dashboard import answer, column, sign_in
from tests.servers import PKGCAT, Served, environment, seed, serving

pytestmark = [pytest.mark.server, pytest.mark.browser]

DEVICES = [f"00008030-{n:016X}" for n in range(27)]


@pytest.fixture
def granted(tmp_path: Path, watched: Watched) -> Iterator[tuple[Served, str]]:
    """A demo catalogue served, and a key of the whitelist scope (watched first: no Chromium,
    no server)."""
    env = environment(f"sqlite:///{tmp_path / 'served.db'}")
    apps = seed(env)
    app = apps[0]
    made = subprocess.run(
        [PKGCAT, "key", "create", "--source", app["source"], "--app", app["name"],
         "--scope", "whitelist", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    with serving(env, tmp_path / "server.log", apps=apps) as server:
        yield server, json.loads(made.stdout)["secret_key"]


def test_devices_are_added_paged_and_removed(granted: tuple[Served, str], watched: Watched) -> None:
    server, key = granted
    package = server.apps[0]["paid_package"]
    page = watched.page
    sign_in(page, server.base, key)
    page.get_by_role("button", name="Whitelist").click()
    view = page.get_by_role("region", name="Whitelist")
    view.get_by_label("Package of the whitelist").select_option(package)
    view.get_by_role("button", name="Show its whitelist").click()
    expect(page.locator("#whitelist-empty")).to_be_visible()

    view.get_by_label("UDIDs to add").fill("\n".join(DEVICES[:20]) + "," + ",".join(DEVICES[20:]))
    view.get_by_label("Description").fill("beta testers")
    view.get_by_role("button", name="Add to the whitelist").click()
    expect(page.locator("#whitelist-changed")).to_have_text(f"{package}: 27 added.")
    table = page.locator("#whitelist-table")
    expect(table.locator("tbody tr")).to_have_count(25)
    listed = answer(server.base, key, "package/whitelist", package=package)
    assert column(table, 0) == [e["udid"] for e in listed["whitelist"]] == DEVICES[:25]
    assert set(column(table, 1)) == {"beta testers"}
    expect(page.locator("#whitelist-summary")).to_have_text(f"{package}: 27 devices; page 1 of 2")
    watched.snap("whitelist")

    view.get_by_role("button", name="Next page").click()
    expect(table.locator("tbody tr")).to_have_count(2)
    assert column(table, 0) == DEVICES[25:]
    view.get_by_role("button", name=f"Remove {DEVICES[26]}").click()
    expect(page.locator("#whitelist-changed")).to_have_text(f"{package}: 1 removed.")
    expect(table.locator("tbody tr")).to_have_count(1)
    assert answer(server.base, key, "package/whitelist", package=package)["total"] == 26
    assert not [url for url in watched.requested if key in url], "the key went into an address"
