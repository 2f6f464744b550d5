"""Endpoints: addresses checked after DNS, secrets shown once and kept sealed, managed by CLI."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.client import webhooks
from pkgcat.net.addresses import Allowance
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.endpoints import EndpointRefused, Endpoints
from tests.servers import environment
from tests.webhooks.conftest import PASSPHRASE


@pytest.fixture
def strict(store: WebhookStore) -> Endpoints:
    """As a production server: https only, no loopback."""
    return Endpoints(store, passphrase=PASSPHRASE, allowed=Allowance(), allow_http=False)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://hooks.example/in", "must be an https:// address"),
        ("https://127.0.0.1/in", "refused: 127.0.0.1 is"),
        ("https://localhost:8443/in", "refused: localhost resolves to"),
        ("https://169.254.169.254/latest", "refused: 169.254.169.254 is"),
        ("https://10.1.2.3/in", "refused: 10.1.2.3 is"),
        ("https://[::1]/in", "refused: ::1 is"),
        ("https://user:pw@hooks.example/in", "must not carry a user name or password"),
        ("ftp://hooks.example/in", "must be an https:// address"),
        # Names DNS cannot carry (RFC 1035 2.3.4) or IDNA cannot write: refused before any
        # lookup, where the resolver's own IDNA codec raised UnicodeError.
        ("https://" + "a" * 300 + ".example/in", "label 'a.*' is 300 octets long; DNS allows 63"),
        ("https://" + ".".join(["a" * 60] * 5) + "/in", "is 304 octets long; DNS allows 253"),
        ("https://hooks..example/in", "has an empty label"),
        ("https://xn--zz.example/in", "'xn--zz' is not a valid IDNA A-label"),
        ("https://" + "é" * 70 + ".example/in", "Invalid IDNA hostname"),
    ],
)
def test_an_address_that_may_not_be_posted_to_is_refused_at_creation(
    strict: Endpoints, admin: CatalogueAdmin, url: str, reason: str
) -> None:
    with pytest.raises(EndpointRefused, match=reason.replace("[", r"\[")):
        strict.create(1, url, ["sale.completed"])
    assert strict.list(1) == []


def test_unknown_or_no_event_types_are_refused(endpoints: Endpoints) -> None:
    with pytest.raises(EndpointRefused, match=r"'sale\.made' is not an event type"):
        endpoints.create(1, "http://127.0.0.1:9/in", ["sale.made"])
    with pytest.raises(EndpointRefused, match="name at least one"):
        endpoints.create(1, "http://127.0.0.1:9/in", [])


def test_the_secret_is_shown_once_and_stored_sealed(
    endpoints: Endpoints, admin: CatalogueAdmin
) -> None:
    made = endpoints.create(1, "http://127.0.0.1:9/in", ["sale.completed"])
    assert made.secret.startswith("whsec_")
    with admin.engine.connect() as db:
        stored = " ".join(str(v) for v in db.execute(select(t.webhook_endpoints)).one())
    assert made.secret not in stored
    assert "BEGIN PGP MESSAGE" in stored


def test_the_operator_manages_endpoints_from_the_command_line(
    database_url: str, catalogue: dict[str, str]
) -> None:
    env = environment(database_url, webhook_passphrase=PASSPHRASE, webhook_allow_loopback="true")
    runner = CliRunner()
    app = ["--source", "Alpha", "--app", "alpha-a"]

    def pkgcat(*args: str) -> str:
        result = runner.invoke(cli, list(args), env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    made = json.loads(
        pkgcat("webhook", "create", *app, "--url", "http://127.0.0.1:9/in",
               "--events", "sale.completed,sale.refunded", "--json")
    )  # fmt: skip
    assert made["secret"].startswith("whsec_")
    # The same secret spelt in the standard base64 Standard Webhooks libraries decode.
    assert made["standard_secret"] == webhooks.standard_secret(made["secret"])
    assert made["events"] == ["sale.completed", "sale.refunded"]
    listed = json.loads(pkgcat("webhook", "list", *app, "--json"))
    assert [(e["id"], e["enabled"]) for e in listed] == [(made["id"], True)]
    assert "secret" not in listed[0]
    rolled = json.loads(pkgcat("webhook", "roll-secret", *app, made["id"], "--json"))
    assert rolled["secret"] not in (made["secret"], None)
    assert rolled["standard_secret"] == webhooks.standard_secret(rolled["secret"])
    shown = pkgcat("webhook", "roll-secret", *app, made["id"])
    (secret,) = re.findall(r"shown once, store it now\): (\S+)", shown)
    (spelt,) = re.findall(r"for Standard Webhooks libraries: (\S+)", shown)
    assert spelt == webhooks.standard_secret(secret)
    assert "disabled" in pkgcat("webhook", "update", *app, made["id"], "--disable")
    pkgcat("webhook", "delete", *app, made["id"])
    assert json.loads(pkgcat("webhook", "list", *app, "--json")) == []

    refused = runner.invoke(
        cli,
        ["webhook", "create", *app, "--url", "https://10.0.0.1/in", "--events", "sale.completed"],
        env=env,
    )
    assert refused.exit_code == 1
    assert "refused: 10.0.0.1 is" in refused.output
