"""The dashboard's webhooks view in Chromium: endpoints, their delivery log, a test event and
the resend button, against a served demo catalogue and a real receiver on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from pkgcat.client.webhooks import verify
from pkgcat.ingest.operator_data import import_purchases
from pkgcat.storage.engine import engine_for
from tests.browser.conftest import Watched
from tests.browser.test_dashboard import column, sign_in
from tests.ingest.test_operator_data import PURCHASE, write_csv
from tests.servers import PKGCAT, Served, environment, seed, serving
from tests.webhooks.conftest import PASSPHRASE, Receiver, event_ids, receivers

__all__ = ["receivers"]  # the webhook tests' fixture, used here

pytestmark = [pytest.mark.server, pytest.mark.browser]


@pytest.fixture
def hooked(
    tmp_path: Path, watched: Watched
) -> Iterator[tuple[Served, dict[str, str], str]]:  # watched first: skips without Chromium
    """A demo catalogue served with webhooks on; its environment and a key of the scope."""
    env = environment(
        f"sqlite:///{tmp_path / 'served.db'}",
        webhook_passphrase=PASSPHRASE,
        webhook_allow_loopback="true",
        webhook_delivery="separate",
    )
    apps = seed(env)
    app = apps[0]
    granted = subprocess.run(
        [PKGCAT, "key", "create", "--source", app["source"], "--app", app["name"],
         "--scope", "webhooks", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    with serving(env, tmp_path / "server.log", apps=apps) as server:
        yield server, env, json.loads(granted.stdout)["secret_key"]


def test_endpoints_their_log_a_test_event_and_a_resend(
    hooked: tuple[Served, dict[str, str], str],
    watched: Watched,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
) -> None:
    server, env, key = hooked
    receiver = receivers()
    made = httpx.post(
        f"{server.base}/1.0/webhook/create.json",
        json={"url": receiver.url, "events": ["sale.completed"]},
        headers={"authorization": f"Bearer {key}"},
    ).json()["response"]
    endpoint, secret = made["endpoint"]["id"], made["secret"]
    app = server.apps[0]
    sale = PURCHASE | {"package": app["paid_package"], "txn_id": "TXN-DASHBOARD-1", "source": ""}
    engine = engine_for(env["PKGCAT_DATABASE_URL"])
    try:
        import_purchases(engine, write_csv(tmp_path / "sale.csv", [sale]))
        (stored,) = event_ids(engine)  # the sale's event, in the outbox
    finally:
        engine.dispose()
    page = watched.page
    sign_in(page, server.base, key)
    page.get_by_role("button", name="Webhooks").click()
    endpoints = page.locator("#webhooks-table")
    expect(endpoints.locator("tbody tr")).to_have_count(1)
    assert column(endpoints, 0) == [endpoint]
    assert column(endpoints, 3) == ["enabled"]
    assert secret not in page.content()  # the listing never holds a secret
    page.get_by_role("button", name=f"Delivery log of {endpoint}").click()
    expect(page.locator("#webhook-log-empty")).to_be_visible()
    page.get_by_label("Sample event").select_option("sale.refunded")
    page.get_by_role("button", name="Send a test event").click()
    log = page.locator("#webhook-log")
    expect(log.locator("tbody tr")).to_have_count(1)
    assert column(log, 2) == ["delivered"]
    (test_event,) = receiver.answered()
    assert verify(test_event.body, test_event.headers["Pkgcat-Signature"], secret)["test"]
    # The sale's event in the log (sent once through the API), then again by its row's button.
    httpx.post(
        f"{server.base}/1.0/webhook/redeliver.json",
        json={"endpoint": endpoint, "event": stored},
        headers={"authorization": f"Bearer {key}"},
    )
    page.get_by_role("button", name=f"Delivery log of {endpoint}").click()
    expect(log.locator("tbody tr")).to_have_count(2)
    page.get_by_role("button", name=f"Resend {stored}").click()
    expect(log.locator("tbody tr")).to_have_count(3)
    expect(page.locator("#webhook-sent")).to_contain_text(f"Resent {stored}: delivered")
    assert receiver.ids()[-2:] == [stored, stored]
    for delivery in receiver.answered():
        verify(delivery.body, delivery.headers["Pkgcat-Signature"], secret)
    watched.snap("webhooks")
