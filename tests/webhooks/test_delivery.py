"""Delivery to real receivers on 127.0.0.1: signed, in order, retried, never lost."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks
from sqlalchemy import func, select
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli
from pkgcat.client import webhooks
from pkgcat.ingest import ImportOptions, import_repository
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.delivery import Deliverer
from pkgcat.webhooks.endpoints import Endpoints
from pkgcat.webhooks.signing import new_secret, seal_secret
from tests.ingest.conftest import stanza, write_repo
from tests.servers import environment
from tests.webhooks.conftest import PASSPHRASE, Receiver, event_ids, import_sales, until

Start = Callable[..., Deliverer]


def failed_attempts(admin: CatalogueAdmin) -> int:
    a = t.webhook_attempts
    with admin.engine.connect() as db:
        query = select(func.count()).select_from(a).where(a.c.ok.is_(False))
        return int(db.execute(query).scalar_one())


def test_each_event_is_signed_in_its_applications_shape_and_in_order(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    wanted = ["sale.completed", "package.published"]
    a, b = receivers(), receivers()
    secret_a = endpoints.create(1, a.url, wanted).secret  # alpha-a: shape A
    secret_b = endpoints.create(2, b.url, wanted).secret  # alpha-b: shape B
    import_sales(admin.engine, tmp_path, ["S-1", "S-2", "S-3"])
    write_repo(tmp_path / "repo", [stanza("com.alpha.hook", Name="Hook")])
    import_repository(admin.engine, str(tmp_path / "repo"), ImportOptions(source="Alpha", jobs=1))
    deliverers()
    until(lambda: len(a.answered()) == 4 and len(b.answered()) == 4, "four events to each")

    for receiver, secret, shape in ((a, secret_a, "A"), (b, secret_b, "B")):
        got = [
            webhooks.verify(d.body, d.headers["Pkgcat-Signature"], secret)
            for d in receiver.answered()
        ]
        assert [e["id"] for e in got] == [d.headers["Pkgcat-Event-Id"] for d in receiver.answered()]
        assert [e["type"] for e in got] == ["sale.completed"] * 3 + ["package.published"]
        assert [e["data"]["txn_id"] for e in got[:3]] == ["S-1", "S-2", "S-3"]
        assert {e["source"] for e in got} == {"Alpha"}
        assert got[0]["data"]["gross"] == "1.99"
        package = got[3]["data"]
        assert package["package"] == "com.alpha.hook"
        # Shape A: ISO 8601 dates and its own fields; shape B: neither.
        assert ("architecture" in package) is (shape == "A")
        assert ("T" in got[3]["created"]) is (shape == "A")
    assert event_ids(admin.engine) == [d.headers["Pkgcat-Event-Id"] for d in a.answered()]


def test_a_receiver_down_then_up_gets_every_event_once(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    down = receivers()
    down.status = 503
    endpoints.create(1, down.url, ["sale.completed"])
    import_sales(admin.engine, tmp_path, [f"D-{n}" for n in range(5)])
    deliverers()
    until(lambda: failed_attempts(admin) >= 3, "three failed attempts")
    down.status = 200
    until(lambda: len(down.answered()) == 5, "every event once the receiver is up")
    assert down.ids() == event_ids(admin.engine)  # each once, in order


def test_a_hanging_receiver_holds_no_other_endpoint_back(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    hanging, healthy = receivers(), receivers()
    hanging.hold = threading.Event()
    endpoints.create(1, hanging.url, ["sale.completed"])
    endpoints.create(2, healthy.url, ["sale.completed"])
    import_sales(admin.engine, tmp_path, [f"H-{n}" for n in range(3)])
    deliverers(timeout=30.0)
    until(lambda: hanging.arrived == 1, "the hanging receiver to be reached")
    until(lambda: len(healthy.answered()) == 3, "the healthy receiver's events")
    assert hanging.answered() == []  # still hanging while the other got everything
    hanging.hold.set()
    until(lambda: len(hanging.answered()) == 3, "the hanging receiver's events once it answers")


def test_an_attempt_longer_than_the_lease_keeps_it_by_heartbeats(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    """Each answer takes twice the lease, and another deliverer waits for the endpoint: the
    holder's heartbeats keep its lease, so no event is sent twice. Before, a lease ended
    unrenewed while an attempt ran, and the other deliverer sent the same event again."""
    slow = receivers()
    slow.delay = 2.0
    endpoints.create(1, slow.url, ["sale.completed"])
    import_sales(admin.engine, tmp_path, ["HB-1", "HB-2"])
    deliverers(lease_seconds=1.0)
    deliverers(lease_seconds=1.0)
    until(lambda: len(slow.answered()) == 2, "both events")
    assert slow.ids() == event_ids(admin.engine)
    assert slow.arrived == 2  # each sent once


def test_an_endpoint_failing_for_the_whole_window_is_disabled(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    broken = receivers()
    broken.status = 500
    made = endpoints.create(1, broken.url, ["sale.completed"]).endpoint
    import_sales(admin.engine, tmp_path, ["X-1"])
    deliverers(retry_window=1)

    def disabled() -> bool:
        return not endpoints.get(1, made.endpoint_id).enabled

    until(disabled, "the endpoint to be disabled")
    reason = endpoints.get(1, made.endpoint_id).disabled_reason or ""
    assert reason.startswith("failing since ")
    arrived = broken.arrived
    broken.status = 200
    endpoints.update(1, made.endpoint_id, enabled=True)
    until(lambda: len(broken.answered()) == 1, "the event once enabled again")
    assert broken.arrived == arrived + 1


def standard(secret: str) -> standardwebhooks.Webhook:
    """The verifier of the Standard Webhooks specification's own Python library.

    Its ``Webhook(secret)`` base64-decodes what follows ``whsec_``, and ``verify``
    reads ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` (any case),
    splits the signature on spaces and each part on ``,``, and compares every ``v1``
    with the base64 HMAC-SHA256 of ``"{id}.{timestamp}.{body}"``, the timestamp within
    five minutes (standard-webhooks/standard-webhooks, libraries/python/standardwebhooks/
    webhooks.py: ``Webhook.__init__``, ``Webhook.verify``, ``Webhook.sign``).
    """
    return standardwebhooks.Webhook(webhooks.standard_secret(secret))


def test_every_attempt_verifies_with_a_standard_webhooks_library_under_one_id(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    flaky = receivers()
    flaky.status = 503
    secret = endpoints.create(1, flaky.url, ["sale.completed"]).secret
    import_sales(admin.engine, tmp_path, ["W-1"])
    deliverers()
    until(lambda: flaky.arrived >= 3, "three attempts")
    flaky.status = 200
    until(lambda: len(flaky.answered()) == 1, "the event once the receiver is up")
    (stored,) = event_ids(admin.engine)
    attempts = flaky.attempts()
    assert len(attempts) >= 4
    for attempt in attempts:
        # The same webhook-id on every retry: the receivers' idempotency key.
        assert attempt.headers["webhook-id"] == stored == attempt.headers["Pkgcat-Event-Id"]
        assert standard(secret).verify(attempt.body, attempt.headers)["data"]["txn_id"] == "W-1"
        # Both schemes sign the same attempt at the same time.
        header = attempt.headers["Pkgcat-Signature"]
        assert header.startswith(f"t={attempt.headers['webhook-timestamp']},")
        assert webhooks.verify(attempt.body, header, secret)["id"] == stored
        # The SDK takes the headers alone, and checks the Standard Webhooks scheme without
        # Pkgcat-Signature, with the secret spelt either way.
        theirs = {k: v for k, v in attempt.headers.items() if k != "Pkgcat-Signature"}
        for spelling in (secret, webhooks.standard_secret(secret)):
            assert webhooks.verify(attempt.body, theirs, spelling)["id"] == stored
            assert webhooks.verify(attempt.body, attempt.headers, spelling)["id"] == stored
    with pytest.raises(standardwebhooks.WebhookVerificationError, match="No matching signature"):
        standard(new_secret()).verify(attempts[-1].body, attempts[-1].headers)


def test_the_docs_standard_webhooks_receiver_verifies_a_real_delivery(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    page = (Path(__file__).parents[2] / "docs" / "webhooks.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "def handle" in b]
    (shell,) = [b for b in re.findall(r"```sh\n(.*?)```", page, re.S) if "tr -- " in b]
    namespace: dict[str, Any] = {}
    exec(block, namespace)  # noqa: S102 - the documentation's own example, run as written
    receiver = receivers()
    secret = endpoints.create(1, receiver.url, ["sale.completed"]).secret
    import_sales(admin.engine, tmp_path, ["DOC-1"])
    deliverers()
    until(lambda: len(receiver.answered()) == 1, "the event")
    (delivery,) = receiver.answered()
    event = namespace["handle"](delivery.body, delivery.headers, secret)
    assert (event["id"], event["data"]["txn_id"]) == (delivery.headers["webhook-id"], "DOC-1")
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        namespace["handle"](delivery.body + b" ", delivery.headers, secret)
    for shown in [secret] + [new_secret() for _ in range(50)]:
        spelt = subprocess.run(
            ["sh", "-c", shell], env={"secret": shown}, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert namespace["standard_secret"](shown) == webhooks.standard_secret(shown) == spelt


def test_during_a_roll_both_secrets_sign(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    receiver = receivers()
    made = endpoints.create(1, receiver.url, ["sale.completed"])
    rolled = endpoints.roll_secret(1, made.endpoint.endpoint_id)
    assert rolled.secret != made.secret
    import_sales(admin.engine, tmp_path, ["R-1"])
    deliverers()
    until(lambda: len(receiver.answered()) == 1, "the event")
    (delivery,) = receiver.answered()
    header = delivery.headers["Pkgcat-Signature"]
    assert header.count("v1=") == 2
    for secret in (made.secret, rolled.secret):
        assert webhooks.verify(delivery.body, header, secret)["data"]["txn_id"] == "R-1"
        assert standard(secret).verify(delivery.body, delivery.headers)["data"]["txn_id"] == "R-1"
    assert len(delivery.headers["webhook-signature"].split(" ")) == 2


def test_test_events_redeliveries_and_the_log_from_the_command_line(
    database_url: str,
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
) -> None:
    receiver = receivers()
    made = endpoints.create(2, receiver.url, ["sale.completed"])  # alpha-b: shape B
    import_sales(admin.engine, tmp_path, ["L-1"])
    (stored,) = event_ids(admin.engine)
    env = environment(database_url, webhook_passphrase=PASSPHRASE, webhook_allow_loopback="true")
    hook = ["webhook"]
    app = ["--source", "Alpha", "--app", "alpha-b", made.endpoint.endpoint_id]

    def pkgcat(*args: str) -> Result:
        return CliRunner().invoke(cli, [*hook, *args], env=env, catch_exceptions=False)

    tested = pkgcat("test", *app, "--event", "sale.refunded", "--json")
    assert tested.exit_code == 0, tested.output
    again = pkgcat("redeliver", *app, "--event-id", stored)
    assert again.exit_code == 0, again.output
    sample, redelivered = (
        webhooks.verify(d.body, d.headers["Pkgcat-Signature"], made.secret)
        for d in receiver.answered()
    )
    assert (sample["type"], sample["test"], sample["data"]["status"]) == (
        "sale.refunded", True, "Refunded",
    )  # fmt: skip
    assert json.loads(tested.output)["event_id"] == sample["id"]
    assert (redelivered["id"], redelivered["test"]) == (stored, False)
    assert "T" not in redelivered["created"]  # shape B's dates
    log = json.loads(pkgcat("deliveries", *app, "--json").output)
    assert [(a["event_id"], a["ok"], a["status"]) for a in log] == [
        (stored, True, 200), (sample["id"], True, 200),
    ]  # fmt: skip

    receiver.status = 503
    refused = pkgcat("test", *app, "--event", "package.published")
    assert refused.exit_code == 1
    assert "not delivered (503" in refused.output
    unknown = pkgcat("redeliver", *app, "--event-id", "evt_nothing")
    assert unknown.exit_code == 1
    assert "no event 'evt_nothing' for this endpoint's source" in unknown.output


def test_a_stored_secret_that_is_not_base64url_is_named_and_signs_nothing(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    receiver = receivers()
    made = endpoints.create(1, receiver.url, ["sale.completed"]).endpoint
    e = t.webhook_endpoints
    with admin.engine.begin() as db:  # a row edited by hand: no secret pkgcat makes is so
        sealed = seal_secret("whsec_not base64url!", PASSPHRASE)
        db.execute(
            e.update().where(e.c.endpoint_id == made.endpoint_id).values(sealed_secret=sealed)
        )
    import_sales(admin.engine, tmp_path, ["M-1"])
    with caplog.at_level(logging.ERROR, logger="pkgcat.webhooks.delivery"):
        deliverers()
        until(lambda: "not whsec_ and base64url: roll it" in caplog.text, "the named problem")
    assert f"webhook endpoint {made.endpoint_id}: the signing secret" in caplog.text
    assert receiver.arrived == 0
    assert "not base64url!" not in caplog.text  # the secret itself is never logged


def test_an_endpoint_stored_with_a_name_dns_cannot_carry_fails_its_attempts_and_holds_none_back(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    store: WebhookStore,
    receivers: Callable[[], Receiver],
    deliverers: Start,
    tmp_path: Path,
) -> None:
    """An address stored before its name was checked (a label of 300 octets): each attempt is
    logged as failed with no answer. Before, the resolver's UnicodeError escaped the fetcher's
    errors: the sender failed and no attempt was logged."""
    healthy = receivers()
    endpoints.create(2, healthy.url, ["sale.completed"])
    store.create(
        application_id=1,
        url="https://" + "a" * 300 + ".example/hook",
        events=["sale.completed"],
        sealed_secret=seal_secret(new_secret(), PASSPHRASE),
        now=int(time.time()),
    )
    import_sales(admin.engine, tmp_path, ["N-1", "N-2"])
    deliverers()
    until(lambda: failed_attempts(admin) >= 2, "two failed attempts")
    until(lambda: len(healthy.answered()) == 2, "the healthy endpoint's events")
    a = t.webhook_attempts
    with admin.engine.connect() as db:
        failed = db.execute(select(a.c.status, a.c.response).where(a.c.ok.is_(False))).all()
    assert {status for status, _ in failed} == {None}  # no answer: nothing was sent
    assert all(said.startswith("https://aaaa") for _, said in failed)
