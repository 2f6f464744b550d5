"""``pkgcat webhook``: an application's webhook endpoints, for the operator."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import admin, fail, load_settings, print_json, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.config import Settings
from pkgcat.sealing import KeyProblem
from pkgcat.storage.webhooks import Attempt, EndpointRecord, WebhookStore
from pkgcat.webhooks import manual
from pkgcat.webhooks.delivery import deliverer_for
from pkgcat.webhooks.endpoints import GRACE_SECONDS, Created, EndpointRefused, Endpoints, allowance
from pkgcat.webhooks.signing import standard_spelling

app = group("webhook")

Source = Annotated[str, typer.Option("--source", help="Source of the application.")]
Application = Annotated[str, typer.Option("--app", help="Name of the application.")]
EndpointId = Annotated[str, typer.Argument(help="The endpoint's id (we_...).")]
Events = Annotated[
    str | None,
    typer.Option("--events", help="Comma-separated event types (sale.completed,...)."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


@dataclass(frozen=True)
class _Service:
    endpoints: Endpoints
    store: WebhookStore
    settings: Settings


@contextmanager
def service(source: str, application: str) -> Iterator[tuple[Endpoints, int]]:
    """The endpoints' service on the settings' database, and the application's id."""
    with _service(source, application) as (found, app_id):
        yield found.endpoints, app_id


@contextmanager
def _service(source: str, application: str) -> Iterator[tuple[_Service, int]]:
    settings = load_settings()
    passphrase = settings.webhook_passphrase
    with admin() as handle:
        found = handle.find_application(source, application)
        store = WebhookStore(handle.engine)
        endpoints = Endpoints(
            store,
            passphrase=None if passphrase is None else passphrase.get_secret_value(),
            allowed=allowance(settings.fetch_allow, settings.webhook_allow_loopback),
            allow_http=settings.webhook_allow_loopback,
        )
        try:
            yield _Service(endpoints, store, settings), found.id
        except (EndpointRefused, KeyProblem) as error:
            fail(str(error))


def _events(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _record(endpoint: EndpointRecord) -> dict[str, object]:
    return {
        "id": endpoint.endpoint_id,
        "url": endpoint.url,
        "events": list(endpoint.events),
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "created_at": when(endpoint.created_at),
    }


def _show_secret(made: Created, as_json: bool, what: str) -> None:
    if as_json:
        spelt = standard_spelling(made.secret)
        print_json(_record(made.endpoint) | {"secret": made.secret, "standard_secret": spelt})
        return
    stdout.print(f"{what} {made.endpoint.endpoint_id} -> {made.endpoint.url}", markup=False)
    stdout.print(
        f"signing secret (shown once, store it now): [bold]{made.secret}[/]", soft_wrap=True
    )
    stdout.print(
        f"the same, for Standard Webhooks libraries: [bold]{standard_spelling(made.secret)}[/]",
        soft_wrap=True,
    )


@app.command("create")
def create(
    source: Source,
    application: Application,
    url: Annotated[str, typer.Option("--url", help="The https:// address to post events to.")],
    events: Events = None,
    as_json: AsJson = False,
) -> None:
    """Add an endpoint and print its signing secret, once."""
    if events is None:
        fail("--events: name the event types to send (sale.completed,package.published,...)", 2)
    with service(source, application) as (endpoints, app_id):
        made = endpoints.create(app_id, url, _events(events))
    _show_secret(made, as_json, "endpoint")


@app.command("list")
def list_endpoints(source: Source, application: Application, as_json: AsJson = False) -> None:
    """List the application's endpoints, disabled ones with the reason."""
    with service(source, application) as (endpoints, app_id):
        found = endpoints.list(app_id)
    records = [_record(e) | {"events": ",".join(e.events)} for e in found]
    if as_json:
        print_json([_record(e) for e in found])
        return
    print_listing(
        [
            Column("id", kind="identifier"),
            Column("url"),
            Column("events"),
            Column("enabled"),
            Column("disabled_reason", "why disabled"),
            Column("created_at", "created (UTC)", "time"),
        ],
        records,
        False,
    )


@app.command("update")
def update(
    source: Source,
    application: Application,
    endpoint: EndpointId,
    url: Annotated[str | None, typer.Option("--url", help="A new address.")] = None,
    events: Events = None,
    enabled: Annotated[
        bool | None,
        typer.Option("--enable/--disable", help="Enable (failures forgotten) or disable."),
    ] = None,
) -> None:
    """Change an endpoint's address, events, or whether it is enabled."""
    with service(source, application) as (endpoints, app_id):
        changed = endpoints.update(
            app_id,
            endpoint,
            url=url,
            events=None if events is None else _events(events),
            enabled=enabled,
        )
    state = "enabled" if changed.enabled else "disabled"
    stdout.print(f"endpoint {changed.endpoint_id} -> {changed.url} ({state})", markup=False)


@app.command("delete")
def delete(source: Source, application: Application, endpoint: EndpointId) -> None:
    """Delete an endpoint and its delivery log."""
    with service(source, application) as (endpoints, app_id):
        endpoints.delete(app_id, endpoint)
    stdout.print(f"deleted endpoint {endpoint}", markup=False)


@app.command("roll-secret")
def roll_secret(
    source: Source,
    application: Application,
    endpoint: EndpointId,
    grace: Annotated[
        int, typer.Option("--grace", min=0, help="Seconds the current secret keeps signing too.")
    ] = GRACE_SECONDS,
    as_json: AsJson = False,
) -> None:
    """Start a new signing secret (printed once); the current one signs too for --grace seconds."""
    with service(source, application) as (endpoints, app_id):
        made = endpoints.roll_secret(app_id, endpoint, grace=grace)
    _show_secret(made, as_json, "new secret for endpoint")


def _attempt(attempt: Attempt) -> dict[str, object]:
    return {
        "event_id": attempt.event_id,
        "attempted_at": when(attempt.attempted_at),
        "ok": attempt.ok,
        "status": attempt.status,
        "duration_ms": attempt.duration_ms,
        "response": attempt.response,
    }


def _show_attempt(attempt: Attempt, as_json: bool) -> None:
    if as_json:
        print_json(_attempt(attempt))
    else:
        outcome = "delivered" if attempt.ok else "not delivered"
        answer = attempt.status if attempt.status is not None else attempt.response
        stdout.print(
            f"{attempt.event_id}: {outcome} ({answer}, {attempt.duration_ms} ms)", markup=False
        )
    if not attempt.ok:
        raise typer.Exit(1)


@app.command("test")
def send_test(
    source: Source,
    application: Application,
    endpoint: EndpointId,
    event: Annotated[str, typer.Option("--event", help="The event type of the sample.")],
    as_json: AsJson = False,
) -> None:
    """Post a sample event (marked "test": true) to an endpoint now; exit 1 unless a 2xx."""
    with _service(source, application) as (found, app_id):
        deliverer = deliverer_for(found.settings, found.store)
        attempt = manual.send_test(found.endpoints, deliverer, app_id, endpoint, event)
    _show_attempt(attempt, as_json)


@app.command("redeliver")
def redeliver(
    source: Source,
    application: Application,
    endpoint: EndpointId,
    event_id: Annotated[str, typer.Option("--event-id", help="The event to send again (evt_...).")],
    as_json: AsJson = False,
) -> None:
    """Post one stored event to an endpoint again, now; exit 1 unless a 2xx."""
    with _service(source, application) as (found, app_id):
        deliverer = deliverer_for(found.settings, found.store)
        attempt = manual.redeliver(
            found.endpoints, deliverer, found.store, app_id, endpoint, event_id
        )
    _show_attempt(attempt, as_json)


@app.command("deliveries")
def deliveries(
    source: Source,
    application: Application,
    endpoint: EndpointId,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Attempts shown.")] = 50,
    as_json: AsJson = False,
) -> None:
    """List an endpoint's latest delivery attempts, newest first."""
    with _service(source, application) as (found, app_id):
        pk = found.endpoints.get(app_id, endpoint).pk
        attempts = [attempt for _, attempt in found.store.attempts(pk, limit=limit)]
    print_listing(
        [
            Column("event_id", "event", "identifier"),
            Column("attempted_at", "when (UTC)", "time"),
            Column("ok"),
            Column("status", kind="number"),
            Column("duration_ms", "ms", kind="number"),
            Column("response", "answer"),
        ],
        [_attempt(a) for a in attempts],
        as_json,
    )
