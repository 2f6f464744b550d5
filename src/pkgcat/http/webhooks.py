"""The ``webhook/*`` operations: the caller's application's endpoints, through the API.

A write's fields come in its body, a JSON object (``application/json``) or a
form (``application/x-www-form-urlencoded``), read whole up to
:data:`MAX_BODY` bytes. With an ``Idempotency-Key`` each write is done once, as an
upload is (:mod:`pkgcat.http.idempotency`; an answer holding a signing secret
kept sealed): the same key with the same body gets the first answer again, with
another body code 2. The work itself is
synchronous (:class:`~pkgcat.webhooks.managed.Managed`) and runs in a thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple, TypeVar
from urllib.parse import parse_qsl
from zoneinfo import ZoneInfo

import anyio
import orjson
from python_multipart.multipart import parse_options_header

from pkgcat.domain import Caller
from pkgcat.errors import InternalError, InvalidArgument, WebhookNotFound
from pkgcat.http.errors import envelope
from pkgcat.http.idempotency import idempotency_key, idempotent
from pkgcat.http.operations import (
    BY_NAME,
    CURSOR,
    ENDPOINT,
    FIELDS,
    JSON,
    LIMIT,
    Given,
    Operation,
)
from pkgcat.http.params import Query
from pkgcat.http.uploads import Incoming
from pkgcat.repository.keys import KeyProblem
from pkgcat.services import CatalogueService
from pkgcat.storage.webhooks import Attempt, EndpointRecord
from pkgcat.webhooks.endpoints import Created, EndpointRefused, NotFound
from pkgcat.webhooks.managed import Managed

MAX_BODY = 64 * 1024
"""The largest body of a webhook write: a URL and a few event types need far less."""


class Call(NamedTuple):
    """What a webhook operation's handler is given."""

    service: CatalogueService
    managed: Managed
    caller: Caller
    query: Query
    incoming: Incoming


Handler = Callable[[Call], Awaitable[bytes]]
"""``async def h(call) -> bytes``: the operation's whole answer body."""
Fields = dict[str, Any]
T = TypeVar("T")


async def _run(call: Callable[[], T]) -> T:
    """``call`` in a thread, its refusals in the envelope's terms."""
    try:
        return await anyio.to_thread.run_sync(call)
    except NotFound as error:
        raise WebhookNotFound(str(error)) from None
    except EndpointRefused as error:
        problem = str(error).partition(": ")[2] or str(error)
        raise InvalidArgument(error.field, problem) from None
    except KeyProblem as error:  # no PKGCAT_WEBHOOK_PASSPHRASE: the operator's to set
        raise InternalError(f"webhooks are not configured on this server: {error}") from None


async def read_fields(incoming: Incoming) -> tuple[Fields, bytes]:
    """The body's fields, and the body itself; code 2 naming what is unfit."""
    media, _ = parse_options_header(incoming.header(b"content-type") or b"")
    kind = media.decode("latin-1").lower()
    if kind not in FIELDS:
        raise InvalidArgument("Content-Type", f"must be {' or '.join(FIELDS)}")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await incoming.receive()
        if message["type"] == "http.disconnect":
            raise InvalidArgument("body", "the request was interrupted before its end")
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise InvalidArgument("body", f"larger than {MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    fields = _fields(kind, body)
    for name, value in fields.items():  # a flag given as a boolean in words: true or false
        if value in _BOOLEANS and name in _FLAGS:
            fields[name] = value == "true"
    return fields, body


_BOOLEANS = ("true", "false")
_LISTS = frozenset(
    p.name for o in BY_NAME.values() if o.fields for p in o.parameters if p.kind == "list"
)
_FLAGS = frozenset(
    p.name for o in BY_NAME.values() if o.fields for p in o.parameters if p.kind == "flag"
)


def _fields(kind: str, body: bytes) -> Fields:
    if kind == JSON:
        try:
            fields = orjson.loads(body or b"{}")
        except orjson.JSONDecodeError as error:
            raise InvalidArgument("body", f"not JSON: {error}") from None
        if not isinstance(fields, dict):
            raise InvalidArgument("body", "must be a JSON object of the operation's fields")
        return fields
    form: Fields = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        if name in _LISTS:  # repeated or comma-separated
            form.setdefault(name, []).extend(v.strip() for v in value.split(",") if v.strip())
        elif name in form:
            raise InvalidArgument(name, "given more than once")
        else:
            form[name] = value
    return form


def _moment(seconds: int, caller: Caller) -> str:
    return datetime.fromtimestamp(seconds, ZoneInfo(caller.timezone)).isoformat()


def endpoint_body(endpoint: EndpointRecord, caller: Caller) -> dict[str, Any]:
    """An endpoint as the API shows it: never its secrets."""
    return {
        "id": endpoint.endpoint_id,
        "url": endpoint.url,
        "events": list(endpoint.events),
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "created_at": _moment(endpoint.created_at, caller),
    }


def attempt_body(attempt: Attempt, caller: Caller) -> dict[str, Any]:
    return {
        "event_id": attempt.event_id,
        "attempted_at": _moment(attempt.attempted_at, caller),
        "ok": attempt.ok,
        "status": attempt.status,
        "duration_ms": attempt.duration_ms,
        "response": attempt.response,
    }


def _secret_body(made: Created, caller: Caller) -> dict[str, Any]:
    return {"endpoint": endpoint_body(made.endpoint, caller), "secret": made.secret}


_SECRET_HOLDING = frozenset({"webhook/create", "webhook/roll-secret"})


async def _write(
    operation: Operation,
    managed: Managed,
    caller: Caller,
    incoming: Incoming,
    work: Callable[[Given], Callable[[], dict[str, Any]]],
) -> bytes:
    """Read the fields and do ``work(fields)``, once per Idempotency-Key."""
    key = idempotency_key(incoming)
    fields, raw = await read_fields(incoming)
    call = work(fields)  # the fields are checked before the key is claimed or anything done
    sealed = operation.name in _SECRET_HOLDING
    answers = managed.sealed_answers if sealed else managed.answers

    async def done() -> bytes:
        return envelope(await _run(call))

    digest = hashlib.sha256(raw).hexdigest()
    return await idempotent(answers, caller.application.id, key, operation.name, digest, done)


async def create(call: Call) -> bytes:
    _, managed, caller, _, incoming = call
    operation = BY_NAME["webhook/create"]

    def work(fields: Given) -> Callable[[], dict[str, Any]]:
        url = operation.parameter("url").identifier(fields)
        events = operation.parameter("events").items(fields)
        assert events is not None  # required
        return lambda: _secret_body(managed.create(caller.application.id, url, events), caller)

    return await _write(operation, managed, caller, incoming, work)


async def update(call: Call) -> bytes:
    _, managed, caller, _, incoming = call
    operation = BY_NAME["webhook/update"]

    def work(fields: Given) -> Callable[[], dict[str, Any]]:
        endpoint = ENDPOINT.identifier(fields)
        url = operation.parameter("url").text(fields)
        events = operation.parameter("events").items(fields)
        enabled = operation.parameter("enabled").flag(fields)
        if url is None and events is None and enabled is None:
            raise InvalidArgument("url", "give url, events or enabled to change")
        changed = partial(
            managed.update, caller.application.id, endpoint, url=url, events=events,
            enabled=enabled,
        )  # fmt: skip
        return lambda: endpoint_body(changed(), caller)

    return await _write(operation, managed, caller, incoming, work)


async def delete(call: Call) -> bytes:
    _, managed, caller, _, incoming = call

    def work(fields: Given) -> Callable[[], dict[str, Any]]:
        endpoint = ENDPOINT.identifier(fields)

        def deleted() -> dict[str, Any]:
            managed.delete(caller.application.id, endpoint)
            return {"id": endpoint, "deleted": True}

        return deleted

    return await _write(BY_NAME["webhook/delete"], managed, caller, incoming, work)


async def roll_secret(call: Call) -> bytes:
    _, managed, caller, _, incoming = call

    def work(fields: Given) -> Callable[[], dict[str, Any]]:
        endpoint = ENDPOINT.identifier(fields)
        return lambda: _secret_body(managed.roll_secret(caller.application.id, endpoint), caller)

    return await _write(BY_NAME["webhook/roll-secret"], managed, caller, incoming, work)


async def redeliver(call: Call) -> bytes:
    _, managed, caller, _, incoming = call
    operation = BY_NAME["webhook/redeliver"]

    def work(fields: Given) -> Callable[[], dict[str, Any]]:
        endpoint = ENDPOINT.identifier(fields)
        event = operation.parameter("event").identifier(fields)
        sent = partial(managed.redeliver, caller.application.id, endpoint, event)
        return lambda: attempt_body(sent(), caller)

    return await _write(operation, managed, caller, incoming, work)


async def send_test(call: Call) -> bytes:
    _, managed, caller, _, incoming = call
    operation = BY_NAME["webhook/test"]

    def work(fields: Given) -> Callable[[], dict[str, Any]]:
        endpoint = ENDPOINT.identifier(fields)
        kind = EVENT_TYPE.choice(fields)
        assert kind is not None  # required
        sent = partial(managed.send_test, caller.application.id, endpoint, kind)
        return lambda: attempt_body(sent(), caller)

    return await _write(operation, managed, caller, incoming, work)


EVENT_TYPE = BY_NAME["webhook/test"].parameter("event_type")


async def list_endpoints(call: Call) -> bytes:
    _, managed, caller, _, _ = call
    found = await _run(partial(managed.list, caller.application.id))
    return envelope({"endpoints": [endpoint_body(e, caller) for e in found]})


async def deliveries(call: Call) -> bytes:
    service, managed, caller, query, _ = call
    endpoint = ENDPOINT.identifier(query)
    limit = LIMIT.page_size(query)
    cursors = await service.cursors()
    filters = (("endpoint", endpoint),)
    before = None
    cursor = CURSOR.cursor(query)
    if cursor is not None:
        position = cursors.read(cursor, "webhook/deliveries", caller.application.id, filters)
        if len(position) != 1 or not isinstance(position[0], int):
            raise InvalidArgument("cursor", "not a cursor of this list; start again without it")
        before = position[0]
    page = await _run(
        partial(managed.attempts, caller.application.id, endpoint, limit=limit, before=before)
    )
    following = None
    if page.has_more:
        last = page.attempts[-1][0]
        following = cursors.make("webhook/deliveries", caller.application.id, filters, (last,))
    return envelope(
        {
            "attempts": [attempt_body(a, caller) for _, a in page.attempts],
            "limit": limit,
            "has_more": page.has_more,
            "cursor": following,
        }
    )


HANDLERS: dict[str, Handler] = {
    "webhook/create": create,
    "webhook/list": list_endpoints,
    "webhook/update": update,
    "webhook/delete": delete,
    "webhook/roll-secret": roll_secret,
    "webhook/redeliver": redeliver,
    "webhook/test": send_test,
    "webhook/deliveries": deliveries,
}
