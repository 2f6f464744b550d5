"""The store's sign-in page in Chromium, against a real ``pkgcat serve``: a buyer signs in with
the code the SMTP server received, under the page's Content-Security-Policy (a violation fails
the test: tests/browser/conftest.py), and the sign-in it hands to Sileo works."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.servers import Served, environment, free_port, seed, serving
from tests.store.conftest import MODEL, UDID, Mailbox
from tests.store.conftest import mailbox as mailbox  # the real SMTP server's fixture

pytestmark = [pytest.mark.server, pytest.mark.browser]


@pytest.fixture
def shop(tmp_path: Path, mailbox: tuple[Mailbox, int]) -> Iterator[Served]:
    port = free_port()
    env = environment(
        f"sqlite:///{tmp_path / 'store.db'}",
        store_url=f"http://127.0.0.1:{port}/store/",
        store_allow_http="true",
        store_platform="test",
        smtp_host="127.0.0.1",
        smtp_port=str(mailbox[1]),
        smtp_from="store@example.test",
        smtp_starttls="false",
    )
    apps = seed(env)
    with serving(env, tmp_path / "server.log", apps=apps, port=port) as served:
        yield served


def test_a_buyer_signs_in_through_the_page_and_the_app_gets_a_working_token(
    shop: Served, watched: Watched, mailbox: tuple[Mailbox, int]
) -> None:
    page = watched.page
    page.goto(f"{shop.base}/store/authenticate?udid={UDID}&model={MODEL}")
    expect(page.get_by_text("Test mode")).to_be_visible()
    page.get_by_label("Email address").fill("chromium@example.test")
    page.get_by_role("button", name="Send me a code").click()
    expect(page.get_by_text("A code was sent to chromium@example.test")).to_be_visible()
    code = mailbox[0].code_for("chromium@example.test")
    page.get_by_label("Code").fill(code)
    with page.expect_response("**/store/authenticate/code") as answered:
        page.get_by_role("button", name="Sign in").click()
    handed = answered.value
    assert handed.status == 303
    target = urlsplit(handed.headers["location"])
    assert (target.scheme, target.netloc) == ("sileo", "authentication_success")
    query = parse_qs(target.query)
    info = httpx.post(
        f"{shop.base}/store/user_info",
        json={"token": query["token"][0], "udid": UDID, "device": MODEL},
    )
    assert info.status_code == 200
    assert info.json()["user"]["email"] == "chromium@example.test"
    assert query["payment_secret"][0].startswith("pss_")
    elsewhere = [
        url
        for url in watched.requested
        if not url.startswith(shop.base) and not url.startswith("sileo:")
    ]
    assert elsewhere == []
