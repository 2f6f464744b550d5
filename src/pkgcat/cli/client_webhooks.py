"""``pkgcat client webhook``: the key's application's webhook endpoints, through the API.

The key needs the ``webhooks`` scope. A signing secret is printed once, on
stdout, by ``create`` and ``roll-secret`` (as shown, and spelt for Standard Webhooks
libraries); nothing else prints or logs it.
Every write sends one ``Idempotency-Key`` with all its attempts (``--idempotency-key``,
else a random one per run), so a retry changes nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from pkgcat.cli._tables import Column, print_rows
from pkgcat.cli.client_config import Cursor, Limit, Options, Output, client_options
from pkgcat.cli.client_render import canonical, print_json
from pkgcat.client import WebhookAttempt, WebhookEndpoint, WebhookSecret
from pkgcat.client.webhooks import standard_secret

app = typer.Typer(
    help="Your application's webhook endpoints (a key with the webhooks scope).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

EndpointId = Annotated[str, typer.Argument(metavar="ENDPOINT", help="The endpoint's id (we_...).")]
Events = Annotated[
    str | None,
    typer.Option(
        "--events", help="Comma-separated event types (sale.completed,package.published)."
    ),
]
Url = Annotated[str | None, typer.Option("--url", help="The https:// address to post events to.")]
IdempotencyKey = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        help="Sent with every attempt, so that a retry changes nothing twice "
        "(default: a random one per run).",
    ),
]

_options = client_options(without=("output_format", "as_csv"))
"""The shared options, but the output is a table or, with ``--json``, JSON: no --format nor --csv."""

_ENDPOINT_COLUMNS = ("id", "url", "events", "enabled", "disabled_reason", "created_at")
_ATTEMPT_COLUMNS = ("event_id", "attempted_at", "ok", "status", "duration_ms", "response")


def _events(text: str | None) -> list[str] | None:
    return None if text is None else [name.strip() for name in text.split(",") if name.strip()]


def _show_endpoints(endpoints: Sequence[WebhookEndpoint], output: Output) -> None:
    if output == "json":
        print_json(list(endpoints))
        return
    rows = [
        [
            canonical(",".join(e.events) if name == "events" else getattr(e, name))
            for name in _ENDPOINT_COLUMNS
        ]
        for e in endpoints
    ]
    print_rows([Column(name) for name in _ENDPOINT_COLUMNS], rows)


def _show_secret(made: WebhookSecret, output: Output) -> None:
    if output == "json":
        spelt = standard_secret(made.secret)
        print_json({"endpoint": made.endpoint, "secret": made.secret, "standard_secret": spelt})
        return
    _show_endpoints([made.endpoint], "table")
    typer.echo(f"signing secret (shown once, store it now): {made.secret}")
    typer.echo(f"the same, for Standard Webhooks libraries: {standard_secret(made.secret)}")


def _show_attempts(attempts: Sequence[WebhookAttempt], output: Output) -> None:
    if output == "json":
        print_json(list(attempts))
        return
    rows = [[canonical(getattr(a, name)) for name in _ATTEMPT_COLUMNS] for a in attempts]
    print_rows([Column(name) for name in _ATTEMPT_COLUMNS], rows)


def _sent(attempt: WebhookAttempt, output: Output) -> None:
    """The attempt; exit 1 unless the receiver answered 2xx in time."""
    if output == "json":
        print_json(attempt)
    else:
        _show_attempts([attempt], "table")
    if not attempt.ok:
        raise typer.Exit(1)


@app.command("create")
@_options
def create(
    url: Url = None,
    events: Events = None,
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Add an endpoint; print it and its signing secret, once."""
    wanted = _events(events)
    if url is None or not wanted:
        typer.echo("error: give --url and --events", err=True)
        raise typer.Exit(2)
    with options.client() as client:
        made = client.webhook_create(url, wanted, idempotency_key)
    _show_secret(made, options.output)


@app.command("list")
@_options
def list_endpoints(
    *,
    options: Options,
) -> None:
    """The application's endpoints; disabled ones say why. Never their secrets."""
    with options.client() as client:
        found = client.webhook_list()
    _show_endpoints(found, options.output)


@app.command("update")
@_options
def update(
    endpoint: EndpointId,
    url: Url = None,
    events: Events = None,
    enabled: Annotated[
        bool | None,
        typer.Option("--enable/--disable", help="Enable (failures forgotten) or disable."),
    ] = None,
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Change an endpoint's address, events, or whether it is enabled."""
    with options.client() as client:
        changed = client.webhook_update(endpoint, url, _events(events), enabled, idempotency_key)
    _show_endpoints([changed], options.output)


@app.command("delete")
@_options
def delete(
    endpoint: EndpointId,
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Delete an endpoint and its delivery log."""
    with options.client() as client:
        gone = client.webhook_delete(endpoint, idempotency_key)
    if options.output == "json":
        print_json({"id": gone, "deleted": True})
    else:
        typer.echo(f"deleted endpoint {gone}")


@app.command("roll-secret")
@_options
def roll_secret(
    endpoint: EndpointId,
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Start a new signing secret, printed once; the current one signs too for 24 hours."""
    with options.client() as client:
        made = client.webhook_roll_secret(endpoint, idempotency_key)
    _show_secret(made, options.output)


@app.command("deliveries")
@_options
def deliveries(
    endpoint: EndpointId,
    limit: Limit = None,
    cursor: Cursor = None,
    *,
    options: Options,
) -> None:
    """A page of the endpoint's delivery log, newest first (--cursor for the next)."""
    with options.client() as client:
        page = client.webhook_deliveries(endpoint, limit or 25, cursor)
    if options.output == "json":
        print_json(page)
        return
    _show_attempts(page.attempts, "table")
    if page.cursor is not None:
        typer.echo(f"more follow: --cursor {page.cursor}", err=True)


@app.command("redeliver")
@_options
def redeliver(
    endpoint: EndpointId,
    event: Annotated[str, typer.Option("--event", help="The event to send again (evt_...).")],
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Send one stored event to the endpoint again, now; exit 1 unless a 2xx."""
    with options.client() as client:
        attempt = client.webhook_redeliver(endpoint, event, idempotency_key)
    _sent(attempt, options.output)


@app.command("test")
@_options
def send_test(
    endpoint: EndpointId,
    event_type: Annotated[
        str, typer.Option("--event-type", help="The sample's event type (sale.completed...).")
    ],
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Send a sample event (marked "test": true) to the endpoint now; exit 1 unless a 2xx."""
    with options.client() as client:
        attempt = client.webhook_test(endpoint, event_type, idempotency_key)
    _sent(attempt, options.output)
