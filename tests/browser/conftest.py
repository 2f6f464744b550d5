"""Debian's Chromium driven by Playwright, against real ``pkgcat serve`` processes on 127.0.0.1.

No browser is downloaded: Playwright launches ``/usr/bin/chromium`` (``make browser-deps``
installs it). Without it the tests skip with one line saying so, and fail under CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, ViewportSize, sync_playwright

from tests.backends import unavailable
from tests.servers import Served, demo_server

CHROMIUM = Path(os.environ.get("PKGCAT_TEST_CHROMIUM", "/usr/bin/chromium"))
"""Debian's Chromium; the variable names another only to test what happens without it."""
MISSING = "Chromium is missing for the dashboard's browser tests: make browser-deps installs it"
FLAGS = [
    "--headless",
    "--no-sandbox",  # the tests may run as root, in a container
    "--disable-gpu",
    "--no-first-run",
    # Nothing but our own server: no update checks, sync, or other background traffic.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
DESKTOP = ViewportSize(width=1280, height=800)
WIDE = ViewportSize(width=1920, height=1080)
PHONE = ViewportSize(width=390, height=844)
SIZES = (("desktop", DESKTOP), ("wide", WIDE), ("phone", PHONE))
TABLES_FIT_OR_SAY_SO = """() => [...document.querySelectorAll(".scroll")]
    .filter((box) => box.checkVisibility())
    .every((box) => {
        const table = box.querySelector("table");
        if (table.offsetWidth <= box.clientWidth) return true;
        const hint = box.previousElementSibling;
        return getComputedStyle(box).overflowX === "auto"
            && hint !== null && hint.classList.contains("scroll-hint")
            && hint.offsetParent !== null && hint.textContent.includes("scroll");
    })"""
"""Every table on show fits its box, or its box scrolls sideways and a line above says so."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium, for one module's tests.

    Playwright's synchronous API runs an event loop in this thread while it is open:
    it is closed after the module, or every later test's ``asyncio.run`` would fail.
    """
    if not CHROMIUM.exists():
        unavailable(MISSING)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def served(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The demo catalogue served on SQLite, shared by a module's tests (once there is a browser)."""
    with demo_server(tmp_path_factory.mktemp("dashboard")) as server:
        yield server


@dataclass
class Watched:
    """A page, and what its console said and which addresses it asked for."""

    page: Page
    problems: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)

    def snap(self, name: str) -> None:
        """Screenshots of the page as it is, at desktop, wide and phone widths, into build/.

        At each, the page is usable: nothing but a table's own box scrolls sideways, and a
        table that does not fit says so (it scrolls in its box)."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for width, size in SIZES:
            self.page.set_viewport_size(size)
            # Once the charts have followed, the page itself does not scroll sideways.
            self.page.wait_for_function(
                "() => document.documentElement.scrollWidth <= window.innerWidth"
            )
            self.page.wait_for_function(TABLES_FIT_OR_SAY_SO)
            self.page.screenshot(path=SCREENSHOTS / f"{name}-{width}.png", full_page=True)
        self.page.set_viewport_size(DESKTOP)


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    """A fresh browser context (empty session storage) with a desktop-sized page.

    Fails the test if the page broke its Content-Security-Policy or threw an error.
    """
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    found = Watched(page)

    def console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Refused to" in message.text:
            found.problems.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: found.problems.append(f"page error: {error}"))
    page.on("request", lambda request: found.requested.append(request.url))
    yield found
    context.close()
    assert found.problems == []
