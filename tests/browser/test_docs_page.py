"""The API reference at /docs in Chromium: Swagger UI renders the document under its
Content-Security-Policy (a violation fails the test: tests/browser/conftest.py), and
asks nothing of another origin."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from pkgcat.http.openapi import served as served_operations
from tests.browser.conftest import Watched
from tests.servers import Served

pytestmark = [pytest.mark.server, pytest.mark.browser]


def test_the_reference_renders_every_operation_from_this_server_alone(
    served: Served, watched: Watched
) -> None:
    page = watched.page
    page.goto(f"{served.base}/docs")
    for operation in served_operations():
        expect(page.get_by_text(operation.path, exact=True)).to_be_visible()
    # An operation opened, and tried out: its parameters' form and its responses' table.
    page.get_by_text("/1.0/package/details.json", exact=True).click()
    page.get_by_role("button", name="Try it out").click()
    expect(page.get_by_placeholder("package")).to_be_visible()
    expect(page.get_by_text("Not Modified", exact=False).first).to_be_visible()
    page.get_by_placeholder("package").fill("com.havoclabs.velvet")
    page.get_by_role("button", name="Execute").click()
    # Sent from the page to this server (no key given: refused), and its answer shown.
    expect(page.locator(".live-responses-table tbody .response-col_status")).to_have_text("401")
    elsewhere = [url for url in watched.requested if not url.startswith(served.base)]
    assert elsewhere == []
