"""The dashboard's files as served: our own origin only, and the chart library as pinned.

What the page does in a browser is tested in tests/browser/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pkgcat import events
from pkgcat.app import create_app
from pkgcat.config import Settings
from pkgcat.http import dashboard

PROJECT = Path(__file__).resolve().parents[2]
ASSETS = dashboard.FOLDER / "assets"


class _Page(HTMLParser):
    """What the page loads, and anything inline that the policy would refuse."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in found:
            if name == "style" or name.startswith("on"):
                self.inline.append(f"<{tag} {name}=...>")
        if tag == "style":
            self.inline.append("<style>")
        if tag == "script":
            self._in_script = True
            if found.get("src") is None:
                self.inline.append("<script> without src")
            else:
                self.loads.append(str(found["src"]))
        if tag == "link" and found.get("href"):
            self.loads.append(str(found["href"]))
        if tag == "img" and found.get("src"):
            self.loads.append(str(found["src"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("script text")


@pytest.fixture
def site(sqlite_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(database_url=sqlite_url))) as client:
        yield client


def _served_files() -> list[str]:
    return sorted(
        f"/dashboard/assets/{path.relative_to(ASSETS).as_posix()}"
        for path in ASSETS.rglob("*")
        if path.is_file()
    )


def test_the_page_and_every_file_carry_the_policy(site: TestClient) -> None:
    for path in ["/dashboard", *_served_files()]:
        got = site.get(path)
        assert got.status_code == 200, path
        assert got.headers["content-security-policy"] == dashboard.CONTENT_SECURITY_POLICY, path
        assert got.headers["x-frame-options"] == "DENY", path
        assert got.headers["referrer-policy"] == "no-referrer", path
        assert got.headers["x-content-type-options"] == "nosniff", path
    assert site.get("/dashboard").headers["content-type"].startswith("text/html")
    assert (
        site.get("/dashboard/assets/app.js").headers["content-type"].startswith("text/javascript")
    )
    assert site.get("/dashboard/", follow_redirects=False).headers["location"] == "/dashboard"


def test_the_policy_allows_our_own_origin_only() -> None:
    directives = dict(
        part.strip().split(" ", 1) for part in dashboard.CONTENT_SECURITY_POLICY.split(";")
    )
    assert directives["default-src"] == "'none'"
    for name in ("script-src", "style-src", "connect-src", "img-src"):
        assert directives[name] == "'self'", name  # no 'unsafe-inline', no other host
    assert directives["frame-ancestors"] == "'none'"


def test_the_page_has_nothing_inline_and_loads_only_our_files(site: TestClient) -> None:
    page = _Page()
    page.feed(site.get("/dashboard").text)
    assert page.inline == []
    assert page.loads
    for address in page.loads:
        assert address.startswith("/dashboard/assets/"), address
        assert site.get(address).status_code == 200, address
    # Our modules import one another by relative paths, every one of them a file we serve.
    for module in ASSETS.glob("*.js"):
        for imported in re.findall(r'from "(\.[^"]+)"', module.read_text()):
            assert (module.parent / imported).is_file(), f"{module.name} imports {imported}"
        # Nothing fetched from elsewhere at run time.
        assert not re.search(r"https?://", module.read_text()), module.name


class _Options(HTMLParser):
    """The options of one ``<select>``, by its id."""

    def __init__(self, select: str) -> None:
        super().__init__()
        self.select, self.inside = select, False
        self.options: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "select":
            self.inside = dict(attrs).get("id") == self.select

    def handle_endtag(self, tag: str) -> None:
        self.inside = self.inside and tag != "select"

    def handle_data(self, data: str) -> None:
        if self.inside and data.strip():
            self.options.append(data.strip())


def test_the_page_offers_a_sample_of_every_declared_event_type(site: TestClient) -> None:
    served = _Options("webhook-test-type")
    served.feed(site.get("/dashboard").text)
    assert served.options == [kind.name for kind in events.DECLARED]


def test_the_vendored_chart_library_is_the_pinned_one() -> None:
    pinned = json.loads((PROJECT / "dashboard" / "package.json").read_text())
    lock = json.loads((PROJECT / "dashboard" / "package-lock.json").read_text())
    version = pinned["dependencies"]["chart.js"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "pin an exact version"
    assert lock["packages"]["node_modules/chart.js"]["version"] == version
    assert lock["packages"][""]["dependencies"]["chart.js"] == version
    vendored = (ASSETS / "vendor" / "chart.umd.min.js").read_text()
    assert vendored.startswith(f"/*!\n * Chart.js v{version}\n"), "run make dashboard-vendor"
    assert "MIT" in (ASSETS / "vendor" / "chart.js.LICENSE.md").read_text()


def test_the_demo_prints_the_dashboard_with_a_key_that_signs_in(run: Any) -> None:
    printed = run("demo").stdout
    key = re.search(r"secret key: (pkc_[0-9A-Za-z]{40})", printed)
    link = re.search(r"dashboard: http://127\.0\.0\.1:8000(/\S*) ", printed)
    assert key is not None, printed
    assert link is not None, printed
    assert link.group(1) == dashboard.PATH
    assert key.group(1) not in link.group(0)
    with TestClient(create_app(Settings(database_url=run.url))) as demo:
        assert demo.get(link.group(1)).status_code == 200
        usage = demo.get(
            "/1.0/application/usage.json", headers={"Authorization": f"Bearer {key.group(1)}"}
        )
        assert usage.json()["code"] == 0


@pytest.mark.parametrize("ci", [None, "true"])
def test_without_chromium_one_line_says_so_and_ci_fails(ci: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PKGCAT_TEST_CHROMIUM"] = str(PROJECT / "no-such-chromium")
    if ci is not None:
        env["CI"] = ci
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--no-cov",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/browser",
        ],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = [line for line in ran.stdout.splitlines() if "make browser-deps" in line]
    if ci is None:
        assert ran.returncode == 0, ran.stdout
        assert len(said) == 1, ran.stdout
        assert re.fullmatch(r"skipped \d+ test\(s\): Chromium is missing.*", said[0]), said
    else:
        assert ran.returncode == 1, ran.stdout
        assert "CI must run this test" in ran.stdout
