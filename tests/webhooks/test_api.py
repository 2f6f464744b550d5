"""The ``webhook/*`` operations through the served app, on SQLite and PostgreSQL.

A key with the ``webhooks`` scope manages its own application's endpoints; a
real receiver on 127.0.0.1 gets the test events, checked with the client's
``verify``. Another application's endpoint ids answer exactly as unknown ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import select

from pkgcat.client.webhooks import verify
from pkgcat.events import NAMES
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import Api, AppFactory
from tests.webhooks.conftest import PASSPHRASE, Receiver, event_ids, import_sales

Send = Callable[..., httpx.Response]


@pytest.fixture
def hooks(make_api: AppFactory) -> Api:
    return make_api(
        webhook_passphrase=PASSPHRASE, webhook_allow_loopback=True, webhook_delivery="separate"
    )


@pytest.fixture
def alpha(admin: CatalogueAdmin) -> str:
    """A key of alpha-a (source Alpha) with the webhooks scope."""
    return admin.create_key("Alpha", "alpha-a", ("webhooks",)).secret_key


@pytest.fixture
def beta(admin: CatalogueAdmin) -> str:
    """A key of beta-a (another source) with the webhooks scope."""
    return admin.create_key("Beta", "beta-a", ("webhooks",)).secret_key


def post(api: Api, key: str, verb: str, form: bool = False, **fields: Any) -> httpx.Response:
    """POST ``webhook/<verb>.json`` with the fields as JSON (or a form); headers as ``headers``."""
    headers = {"authorization": f"Bearer {key}", **fields.pop("headers", {})}
    path = f"/1.0/webhook/{verb}.json"
    if form:
        response: httpx.Response = api.http.post(path, data=fields, headers=headers)
    else:
        response = api.http.post(path, json=fields, headers=headers)
    return response


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["code"] == 0
    return body["response"]


def refused(response: httpx.Response, status: int, code: int) -> str:
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    message: str = response.json()["response"]
    return message


def listed(api: Api, key: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(api.get("/1.0/webhook/list.json", key))["endpoints"]
    return found


def test_an_endpoint_is_created_listed_changed_and_deleted(
    hooks: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    url = receivers().url
    made = ok(post(hooks, alpha, "create", url=url, events=["sale.completed"]))
    assert made["secret"].startswith("whsec_")
    endpoint = made["endpoint"]
    assert endpoint["url"] == url
    assert endpoint["events"] == ["sale.completed"]
    assert endpoint["enabled"] is True
    assert listed(hooks, alpha) == [endpoint]  # and no secret in the listing
    changed = ok(
        post(
            hooks, alpha, "update", endpoint=endpoint["id"], enabled=False, events=["sale.refunded"]
        )
    )
    assert changed["enabled"] is False
    assert changed["events"] == ["sale.refunded"]
    assert listed(hooks, alpha) == [changed]
    gone = ok(post(hooks, alpha, "delete", endpoint=endpoint["id"]))
    assert gone == {"id": endpoint["id"], "deleted": True}
    assert listed(hooks, alpha) == []
    assert "no webhook endpoint" in refused(
        post(hooks, alpha, "delete", endpoint=endpoint["id"]), 404, 8
    )


def test_a_form_encoded_body_is_taken_events_repeated_or_comma_separated(
    hooks: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    url = receivers().url
    made = ok(
        post(
            hooks,
            alpha,
            "create",
            form=True,
            url=url,
            events=["sale.completed,sale.refunded", "package.published"],
        )
    )
    assert made["endpoint"]["events"] == ["sale.completed", "sale.refunded", "package.published"]
    changed = ok(
        post(hooks, alpha, "update", form=True, endpoint=made["endpoint"]["id"], enabled="0")
    )
    assert changed["enabled"] is False


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"url": "https://10.1.2.3/hook", "events": ["sale.completed"]}, "url"),
        ({"url": "https://169.254.169.254/latest", "events": ["sale.completed"]}, "url"),
        ({"url": "ftp://example.org/", "events": ["sale.completed"]}, "url"),
        ({"url": "https://127.0.0.1/hook", "events": ["no.such"]}, "events"),
        ({"url": "https://127.0.0.1/hook"}, "events"),
        ({"events": ["sale.completed"]}, "url"),
    ],
)
def test_a_refused_endpoint_is_code_2_naming_the_field_and_nothing_is_stored(
    hooks: Api, alpha: str, fields: dict[str, Any], parameter: str
) -> None:
    message = refused(post(hooks, alpha, "create", **fields), 400, 2)
    assert message.startswith(f"{parameter}: "), message
    assert listed(hooks, alpha) == []


@pytest.mark.parametrize(
    "host",
    ["a" * 300 + ".example", ".".join(["a" * 60] * 5), "xn--zz.example", "hooks..example"],
)
def test_an_address_whose_name_dns_cannot_carry_is_code_2_on_create_and_update(
    hooks: Api, alpha: str, host: str
) -> None:
    """Was a 500: the resolver's IDNA codec raised UnicodeError for a label over 63 octets."""
    url = f"https://{host}/hook"
    message = refused(post(hooks, alpha, "create", url=url, events=["sale.completed"]), 400, 2)
    assert message.startswith("url: the host name"), message
    assert listed(hooks, alpha) == []
    made = ok(
        post(hooks, alpha, "create", url="http://127.0.0.1:9/hook", events=["sale.completed"])
    )
    endpoint = made["endpoint"]["id"]
    message = refused(post(hooks, alpha, "update", endpoint=endpoint, url=url), 400, 2)
    assert message.startswith("url: the host name"), message
    assert [e["url"] for e in listed(hooks, alpha)] == ["http://127.0.0.1:9/hook"]


def test_a_body_that_is_not_json_nor_a_form_is_refused(hooks: Api, alpha: str) -> None:
    answer = hooks.http.post(
        "/1.0/webhook/create.json",
        content=b"url=x",
        headers={"authorization": f"Bearer {alpha}", "content-type": "text/plain"},
    )
    assert refused(answer, 400, 2).startswith("Content-Type: ")
    broken = hooks.http.post(
        "/1.0/webhook/create.json",
        content=b"{not json",
        headers={"authorization": f"Bearer {alpha}", "content-type": "application/json"},
    )
    assert refused(broken, 400, 2).startswith("body: ")


def test_a_key_without_the_webhooks_scope_is_code_9(hooks: Api) -> None:
    read_only = hooks.keys["alpha-a"]
    assert "webhooks" in refused(post(hooks, read_only, "create", url="https://127.0.0.1/"), 403, 9)
    assert "webhooks" in refused(hooks.get("/1.0/webhook/list.json", read_only), 403, 9)


def test_another_applications_endpoint_ids_are_never_visible(
    hooks: Api, alpha: str, beta: str, receivers: Callable[[], Receiver]
) -> None:
    made = ok(post(hooks, alpha, "create", url=receivers().url, events=["sale.completed"]))
    theirs = made["endpoint"]["id"]
    assert listed(hooks, beta) == []
    unknown = "we_00000000000000000000"
    cases: list[tuple[str, dict[str, Any]]] = [
        ("update", {"enabled": False}),
        ("delete", {}),
        ("roll-secret", {}),
        ("test", {"event_type": "sale.completed"}),
        ("redeliver", {"event": "evt_x"}),
    ]
    for verb, extra in cases:
        foreign = refused(post(hooks, beta, verb, endpoint=theirs, **extra), 404, 8)
        missing = refused(post(hooks, beta, verb, endpoint=unknown, **extra), 404, 8)
        assert foreign.replace(theirs, unknown) == missing, verb
    log = hooks.get("/1.0/webhook/deliveries.json", beta, endpoint=theirs)
    assert refused(log, 404, 8)
    assert listed(hooks, alpha)[0]["enabled"] is True  # untouched


def test_a_test_event_reaches_a_real_receiver_signed_and_is_logged_in_cursor_pages(
    hooks: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    receiver = receivers()
    made = ok(post(hooks, alpha, "create", url=receiver.url, events=["sale.completed"]))
    endpoint, secret = made["endpoint"]["id"], made["secret"]
    for kind in ("sale.completed", "sale.refunded", "package.published"):
        attempt = ok(post(hooks, alpha, "test", endpoint=endpoint, event_type=kind))
        assert attempt["ok"] is True
        assert attempt["status"] == 200
    got = receiver.answered()
    assert [d.headers["Pkgcat-Event-Type"] for d in got] == [
        "sale.completed", "sale.refunded", "package.published",
    ]  # fmt: skip
    for delivery in got:
        event = verify(delivery.body, delivery.headers["Pkgcat-Signature"], secret)
        assert event["test"] is True
    first = ok(hooks.get("/1.0/webhook/deliveries.json", alpha, endpoint=endpoint, limit=2))
    assert first["has_more"] is True
    assert first["cursor"]
    newest = [d.headers["Pkgcat-Event-Id"] for d in reversed(got)]
    assert [a["event_id"] for a in first["attempts"]] == newest[:2]
    assert first["attempts"][0]["response"] == "ok"
    rest = ok(
        hooks.get(
            "/1.0/webhook/deliveries.json",
            alpha,
            endpoint=endpoint,
            limit=2,
            cursor=first["cursor"],
        )
    )
    assert [a["event_id"] for a in rest["attempts"]] == newest[2:]
    assert rest["has_more"] is False
    assert rest["cursor"] is None
    other = hooks.get(
        "/1.0/webhook/deliveries.json", alpha, endpoint="we_other", cursor=first["cursor"]
    )
    assert refused(other, 400, 2).startswith("cursor: ")  # a cursor of another endpoint's log


def test_a_rolled_secret_is_shown_once_and_both_sign_meanwhile(
    hooks: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    receiver = receivers()
    made = ok(post(hooks, alpha, "create", url=receiver.url, events=["sale.completed"]))
    endpoint = made["endpoint"]["id"]
    rolled = ok(post(hooks, alpha, "roll-secret", endpoint=endpoint))
    assert rolled["secret"] != made["secret"]
    assert rolled["secret"].startswith("whsec_")
    ok(post(hooks, alpha, "test", endpoint=endpoint, event_type="sale.completed"))
    (delivery,) = receiver.answered()
    for secret in (made["secret"], rolled["secret"]):
        verify(delivery.body, delivery.headers["Pkgcat-Signature"], secret)


def test_a_stored_event_is_redelivered_and_another_sources_is_not_found(
    hooks: Api,
    alpha: str,
    admin: CatalogueAdmin,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
) -> None:
    receiver = receivers()
    made = ok(post(hooks, alpha, "create", url=receiver.url, events=["sale.completed"]))
    endpoint = made["endpoint"]["id"]
    import_sales(admin.engine, tmp_path, ["TXN-API-1"])
    (event_id,) = event_ids(admin.engine)
    attempt = ok(post(hooks, alpha, "redeliver", endpoint=endpoint, event=event_id))
    assert attempt["event_id"] == event_id
    assert attempt["ok"] is True
    assert receiver.ids() == [event_id]
    body = verify(
        receiver.answered()[0].body,
        receiver.answered()[0].headers["Pkgcat-Signature"],
        made["secret"],
    )
    assert body.get("test") is not True
    assert "no event" in refused(
        post(hooks, alpha, "redeliver", endpoint=endpoint, event="evt_nothing"), 404, 8
    )


def test_writes_are_safe_to_retry_with_an_idempotency_key_and_secrets_are_kept_sealed(
    hooks: Api, alpha: str, admin: CatalogueAdmin, receivers: Callable[[], Receiver]
) -> None:
    url = receivers().url
    again = {"Idempotency-Key": "create-1"}
    first = ok(post(hooks, alpha, "create", url=url, events=["sale.completed"], headers=again))
    second = ok(post(hooks, alpha, "create", url=url, events=["sale.completed"], headers=again))
    assert second == first  # the same endpoint and secret, not a second endpoint
    assert [e["id"] for e in listed(hooks, alpha)] == [first["endpoint"]["id"]]
    other = post(hooks, alpha, "create", url=url, events=["sale.refunded"], headers=again)
    assert refused(other, 400, 2).startswith("Idempotency-Key: ")
    r = t.idempotency_records
    with admin.engine.connect() as db:
        kept = db.execute(select(r.c.body)).scalars().all()
    assert kept
    assert all(first["secret"].encode() not in bytes(body) for body in kept)


def test_twelve_creates_at_once_with_one_key_make_one_endpoint(
    make_api: AppFactory, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    """Two apps over one database, as two servers: the key is claimed before the endpoint is
    made, so one request makes it; the others get its answer, or code 16 while it is made."""
    settings = {"webhook_passphrase": PASSPHRASE, "webhook_allow_loopback": True}
    servers = [make_api(**settings, webhook_delivery="separate") for _ in range(2)]
    url = receivers().url
    start = threading.Barrier(12)

    def one(n: int) -> httpx.Response:
        start.wait(timeout=30)
        again = {"Idempotency-Key": "hook-race"}
        return post(
            servers[n % 2], alpha, "create", url=url, events=["sale.completed"], headers=again
        )

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(one, range(12)))
    assert {a.status_code for a in answers} <= {200, 409}, [a.text for a in answers]
    made = [ok(a) for a in answers if a.status_code == 200]
    assert all(m == made[0] for m in made)  # one endpoint and one secret
    for busy in (a for a in answers if a.status_code == 409):
        assert refused(busy, 409, 16).startswith("Idempotency-Key: ")
        assert busy.headers["retry-after"] == "1"
        again = {"Idempotency-Key": "hook-race"}
        retried = post(
            servers[0], alpha, "create", url=url, events=["sale.completed"], headers=again
        )
        assert ok(retried) == made[0]
    assert [e["id"] for e in listed(servers[0], alpha)] == [made[0]["endpoint"]["id"]]


def test_reads_are_get_and_writes_post(hooks: Api, alpha: str) -> None:
    write = hooks.http.get("/1.0/webhook/create.json", headers={"authorization": f"Bearer {alpha}"})
    assert refused(write, 405, 7)
    assert write.headers["allow"] == "POST"
    read = hooks.http.post("/1.0/webhook/list.json", headers={"authorization": f"Bearer {alpha}"})
    assert refused(read, 405, 7)
    assert read.headers["allow"] == "GET"


def test_the_listing_never_holds_a_secret(
    hooks: Api, alpha: str, receivers: Callable[[], Receiver]
) -> None:
    made = ok(post(hooks, alpha, "create", url=receivers().url, events=["sale.completed"]))
    raw = hooks.get("/1.0/webhook/list.json", alpha).content
    assert made["secret"].encode() not in raw
    assert b"secret" not in orjson.loads(raw)["response"]["endpoints"][0]


@pytest.mark.parametrize(
    ("verb", "fields", "message"),
    [
        ("create", {"events": ["sale.completed"]}, "url: missing; give an https:// address"),
        ("create", {"url": " \t", "events": ["sale.completed"]}, "url: missing; give an https:// address"),
        ("create", {"url": "https://127.0.0.1/hook"}, "events: missing; give a list of event types"),
        ("create", {"url": "https://127.0.0.1/", "events": 3}, "events: must be a list of event types"),
        ("create", {"url": 7, "events": ["sale.completed"]}, "url: must be a non-blank string"),
        ("delete", {}, "endpoint: missing; give an endpoint identifier"),
        ("update", {"endpoint": " "}, "endpoint: missing; give an endpoint identifier"),
        ("update", {"endpoint": "we_x", "enabled": 2}, "enabled: must be 0 or 1, got 2"),
        ("update", {"endpoint": "we_x", "enabled": "yes"}, "enabled: must be an integer of at most 12 digits, got 'yes'"),
        ("redeliver", {"endpoint": "we_x"}, "event: missing; give an event identifier"),
        ("test", {"endpoint": "we_x"}, f"event_type: missing; give one of {', '.join(NAMES)}"),
        ("test", {"endpoint": "we_x", "event_type": "sale.done"}, f"event_type: must be one of {', '.join(NAMES)}, got 'sale.done'"),
    ],
)  # fmt: skip
def test_fields_are_read_by_the_operation_table_in_its_words(
    hooks: Api, alpha: str, verb: str, fields: dict[str, Any], message: str
) -> None:
    assert refused(post(hooks, alpha, verb, **fields), 400, 2) == message
    # The same fields as a form (an empty one is sent with no Content-Type at all).
    if fields and all(isinstance(v, str) for v in fields.values()):
        assert refused(post(hooks, alpha, verb, form=True, **fields), 400, 2) == message


def test_the_delivery_log_reads_its_query_as_the_reads_do(hooks: Api, alpha: str) -> None:
    for query in ({}, {"endpoint": " "}):
        answer = hooks.get("/1.0/webhook/deliveries.json", alpha, **query)
        assert refused(answer, 400, 2) == "endpoint: missing; give an endpoint identifier"
    answer = hooks.get("/1.0/webhook/deliveries.json", alpha, endpoint="we_x", limit=0)
    assert refused(answer, 400, 2) == "limit: must be at least 1, got 0"


@pytest.mark.parametrize("enabled", [False, 0, "0", "false", " 0 "])
def test_a_flag_field_is_a_boolean_or_0_and_1_spelled_as_any_integer(
    hooks: Api, alpha: str, receivers: Callable[[], Receiver], enabled: object
) -> None:
    made = ok(post(hooks, alpha, "create", url=receivers().url, events=["sale.completed"]))
    changed = ok(post(hooks, alpha, "update", endpoint=made["endpoint"]["id"], enabled=enabled))
    assert changed["enabled"] is False
