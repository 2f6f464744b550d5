"""The demo as a newcomer meets it: a fresh database, ``pkgcat demo``, then ``pkgcat serve
--env-file`` with the settings file the demo wrote (what ``make run`` does), and every piece the
map names answers: apt-get verifies the repository with the printed key, a paid package is bought
through the store's sign-in page in Chromium with the code read from the server's log (the
console mail backend), downloaded through ``authorize_download`` for the architecture asked, and
the sale shows in ``buyers``, ``sales`` and the demo receiver's page."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from debian.deb822 import Deb822
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.repository.test_apt import Apt
from tests.servers import PKGCAT, Served, environment, free_port, serving
from tests.store.conftest import MODEL, UDID

pytestmark = [pytest.mark.server, pytest.mark.browser, pytest.mark.slow]

EMAIL = "newcomer@example.test"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[Served, dict[str, Any]]]:
    port = free_port()
    env = environment(f"sqlite:///{tmp_path / 'pkgcat.db'}", port=str(port))
    made = subprocess.run(
        [PKGCAT, "demo", "--json"], env=env, capture_output=True, text=True, check=True
    )
    printed = json.loads(made.stdout)
    env_file = Path(printed["store"]["env_file"])
    assert env_file == tmp_path / "pkgcat-demo.env"
    assert env_file.stat().st_mode & 0o077 == 0  # the demo's passphrases: its owner's only
    args = ["--env-file", str(env_file)]
    with serving(
        env, tmp_path / "server.log", apps=printed["applications"], port=port, args=args
    ) as served:
        yield served, printed


def _logged_code(served: Served, email: str) -> str:
    """The sign-in code the console mail backend wrote to the server's log."""
    deadline = time.monotonic() + 10
    pattern = re.compile(rf"sign-in code (\d{{6}}) for {re.escape(email)}")
    while True:
        served.log.flush()
        found = pattern.search(Path(served.log.name).read_text())
        if found:
            return found[1]
        assert time.monotonic() < deadline, "no sign-in code in the server's log within 10 s"
        time.sleep(0.05)  # polling for the log line, not timing anything


def _store(served: Served, path: str, **body: str) -> httpx.Response:
    # Sileo's payment provider API: every POST names the device (tests/store/sileo.py).
    return httpx.post(f"{served.base}/store/{path}", json={"udid": UDID, "device": MODEL} | body)


def test_the_demo_serves_a_signed_repository_a_store_and_a_receiver(
    demo: tuple[Served, dict[str, Any]], watched: Watched, tmp_path: Path
) -> None:
    served, printed = demo
    store = printed["store"]
    key = printed["applications"][0]["secret_key"]
    paid = store["paid_package"]

    # The banner says where sign-in codes go.
    served.log.flush()
    assert "console: sign-in codes are written to this output" in Path(served.log.name).read_text()

    # apt-get, with the key the map says to fetch.
    keyring = tmp_path / "pkgcat.asc"
    keyring.write_bytes(httpx.get(store["key"]).content)
    apt = Apt(tmp_path / "apt")
    apt.source(store["repository"], keyring)
    update = apt.run("update")
    assert update.returncode == 0, update.stdout + update.stderr
    assert "W:" not in update.stderr, update.stderr
    assert "E:" not in update.stderr, update.stderr

    # The paid package has a file for each iOS architecture.
    packages = httpx.get(f"{served.base}/repo/Packages").text
    stanzas = [Deb822(s) for s in packages.split("\n\n") if s.strip()]
    files = {s["Architecture"]: s for s in stanzas if s["Package"] == paid}
    assert set(files) == {"iphoneos-arm", "iphoneos-arm64"}
    version = files["iphoneos-arm64"]["Version"]

    # Signed in through the page in Chromium, the code read from the log.
    page = watched.page
    page.goto(f"{served.base}/store/authenticate?udid={UDID}&model={MODEL}")
    expect(page.get_by_text("Test mode")).to_be_visible()
    page.get_by_label("Email address").fill(EMAIL)
    page.get_by_role("button", name="Send me a code").click()
    expect(page.get_by_text(f"A code was sent to {EMAIL}")).to_be_visible()
    page.get_by_label("Code").fill(_logged_code(served, EMAIL))
    with page.expect_response("**/store/authenticate/code") as answered:
        page.get_by_role("button", name="Sign in").click()
    handed = parse_qs(urlsplit(answered.value.headers["location"]).query)
    token, secret = handed["token"][0], handed["payment_secret"][0]

    bought = _store(served, f"package/{paid}/purchase", token=token, payment_secret=secret)
    assert bought.status_code == 200, bought.text
    authorized = _store(
        served,
        f"package/{paid}/authorize_download",
        token=token,
        version=version,
        repo=store["repository"],
        architecture="iphoneos-arm64",
    )
    assert authorized.status_code == 200, authorized.text
    deb = httpx.get(authorized.json()["url"])
    assert deb.status_code == 200
    assert hashlib.sha256(deb.content).hexdigest() == files["iphoneos-arm64"]["SHA256"]

    # The sale, where a seller looks.
    auth = {"Authorization": f"Bearer {key}"}
    buyers = httpx.get(
        f"{served.base}/1.0/package/buyers.json",
        params={"package": paid, "limit": 100},
        headers=auth,
    ).json()
    assert EMAIL in json.dumps(buyers)
    sales = httpx.get(f"{served.base}/1.0/source/sales.json", headers=auth).json()
    assert EMAIL in json.dumps(sales)

    # The demo's receiver got the event, its signature checked.
    deadline = time.monotonic() + 20
    while True:
        shown = httpx.get(store["receiver"]).text
        if "sale.completed" in shown:
            break
        assert time.monotonic() < deadline, f"no sale.completed delivered within 20 s: {shown}"
        time.sleep(0.1)  # polling for the deliverer, not timing it
    [row] = [r for r in shown.split("<tr>") if "sale.completed" in r]
    assert "signature checked" in row
    assert paid in row
    page.goto(store["receiver"])
    expect(page.get_by_role("heading", name="Webhook deliveries")).to_be_visible()
    watched.snap("demo-receiver")
