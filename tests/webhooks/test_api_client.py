"""``Client.webhook_*``, ``AsyncClient.webhook_*`` and ``pkgcat client webhook``: on a double
for what goes on the wire and its retries, and on our app in-process (SQLite and PostgreSQL)
with a real receiver for the answers."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import standardwebhooks

from pkgcat.client import (
    AsyncClient,
    Client,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    webhooks,
)
from pkgcat.client.webhooks import verify
from tests.client.conftest import BASE, KEY, Double, InProcess, Waits, answer, invoke, waits
from tests.conftest import Api, AppFactory
from tests.webhooks.conftest import PASSPHRASE, Receiver
from tests.webhooks.test_api import alpha  # the key of the webhooks scope

__all__ = ["alpha", "waits"]  # fixtures of other folders, used here

ENDPOINT: dict[str, Any] = {
    "id": "we_0123456789abcdef0123",
    "url": "https://seller.example/hook",
    "events": ["sale.completed"],
    "enabled": True,
    "disabled_reason": None,
    "created_at": "2026-11-26T12:00:00+00:00",
}
SECRET = "whsec_" + "s" * 43


def test_every_attempt_of_a_write_sends_the_same_key_and_its_fields_as_json(
    waits: Waits,
) -> None:
    double = Double(
        answer(15, "down", status=503), answer(0, {"endpoint": ENDPOINT, "secret": SECRET})
    )
    with Client(BASE, KEY, transport=double.transport, sleep=waits) as client:
        made = client.webhook_create("https://seller.example/hook", ["sale.completed"])
    assert made.secret == SECRET
    assert made.endpoint.id == ENDPOINT["id"]
    assert SECRET not in repr(made)  # a record logged does not log its secret
    first, second = double.requests
    for request in (first, second):
        assert request.method == "POST"
        assert request.url.path == "/1.0/webhook/create.json"
        assert request.headers["content-type"] == "application/json"
        assert json.loads(request.content) == {
            "url": "https://seller.example/hook",
            "events": ["sale.completed"],
        }
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]


def test_an_update_sends_only_what_changes(waits: Waits) -> None:
    double = Double(answer(0, ENDPOINT | {"enabled": False}))
    with Client(BASE, KEY, transport=double.transport, sleep=waits) as client:
        changed = client.webhook_update(ENDPOINT["id"], enabled=False, idempotency_key="off-1")
    assert changed.enabled is False
    (request,) = double.requests
    assert json.loads(request.content) == {"endpoint": ENDPOINT["id"], "enabled": False}
    assert request.headers["idempotency-key"] == "off-1"


@pytest.fixture
def served(make_api: AppFactory) -> Api:
    return make_api(
        webhook_passphrase=PASSPHRASE, webhook_allow_loopback=True, webhook_delivery="separate"
    )


def test_the_typed_client_manages_endpoints_on_our_server(
    served: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    receiver = receivers()
    with Client(BASE, alpha, transport=InProcess(served.http), max_retries=0) as client:
        made = client.webhook_create(receiver.url, ["sale.completed", "sale.refunded"])
        assert [e.id for e in client.webhook_list()] == [made.endpoint.id]
        attempt = client.webhook_test(made.endpoint.id, "sale.refunded")
        assert attempt.ok
        assert attempt.status == 200
        (delivery,) = receiver.answered()
        event = verify(delivery.body, delivery.headers["Pkgcat-Signature"], made.secret)
        assert event["type"] == "sale.refunded"
        page = client.webhook_deliveries(made.endpoint.id, limit=1)
        assert [a.event_id for a in page.attempts] == [attempt.event_id]
        assert page.has_more is False
        rolled = client.webhook_roll_secret(made.endpoint.id)
        assert rolled.secret != made.secret
        assert client.webhook_update(made.endpoint.id, enabled=False).enabled is False
        with pytest.raises(InvalidArgumentError) as refused:
            client.webhook_update(made.endpoint.id, url="https://10.9.8.7/")
        assert refused.value.parameter == "url"
        assert client.webhook_delete(made.endpoint.id) == made.endpoint.id
        with pytest.raises(NotFoundError) as missing:
            client.webhook_delete(made.endpoint.id)
        assert missing.value.code == 8
    with Client(BASE, served.keys["alpha-a"], transport=InProcess(served.http)) as reader:
        with pytest.raises(PermissionDeniedError) as denied:
            reader.webhook_list()
        assert denied.value.code == 9


def test_the_async_client_creates_and_lists(
    served: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    url = receivers().url

    async def go() -> tuple[str, list[str]]:
        transport = httpx.ASGITransport(app=served.http.app)
        async with AsyncClient(BASE, alpha, transport=transport, max_retries=0) as c:
            made = await c.webhook_create(url, ["package.published"])
            return made.endpoint.id, [e.id for e in await c.webhook_list()]

    made, listed = asyncio.run(go())
    assert listed == [made]


def test_the_command_prints_the_secret_once_and_lists_without_it(
    served: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    transport = InProcess(served.http)
    receiver = receivers()
    made = invoke(
        transport, alpha, "webhook", "create", "--url", receiver.url,
        "--events", "sale.completed", "--json",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    secret, endpoint = created["secret"], created["endpoint"]["id"]
    assert secret.startswith("whsec_")
    assert created["standard_secret"] == webhooks.standard_secret(secret)
    listed = invoke(transport, alpha, "webhook", "list")
    assert listed.exit_code == 0, listed.output
    assert endpoint in listed.stdout
    assert secret not in listed.output
    sent = invoke(transport, alpha, "webhook", "test", endpoint, "--event-type", "sale.completed")
    assert sent.exit_code == 0, sent.output
    # The spelling printed is the one a Standard Webhooks library verifies the delivery with.
    (delivery,) = receiver.answered()
    library = standardwebhooks.Webhook(created["standard_secret"])
    assert library.verify(delivery.body, delivery.headers)["test"] is True
    rolled = invoke(transport, alpha, "webhook", "roll-secret", endpoint)
    assert rolled.exit_code == 0, rolled.output
    (shown,) = re.findall(r"shown once, store it now\): (\S+)", rolled.stdout)
    (spelt,) = re.findall(r"for Standard Webhooks libraries: (\S+)", rolled.stdout)
    assert spelt == webhooks.standard_secret(shown)
    log = invoke(transport, alpha, "webhook", "deliveries", endpoint, "--json")
    assert json.loads(log.stdout)["attempts"][0]["status"] == 200
    unknown = invoke(transport, alpha, "webhook", "delete", "we_nothing")
    assert unknown.exit_code == 5
    assert "no webhook endpoint 'we_nothing'" in unknown.output
