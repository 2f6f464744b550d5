"""The licence operations over HTTP: YouRepo's whitelist (a read and two writes) and the
Packix/Havoc DRM check.

The whitelist's operations are the table's (:mod:`pkgcat.http.operations`): their
parameters read through it, the writes' fields from a JSON or form body (as the webhook
writes take theirs), each write done once per ``Idempotency-Key``
(:mod:`pkgcat.http.idempotency`). The use cases are :class:`~pkgcat.licences.LicenceService`'s.

The DRM check is not an operation of the ``/1.0/`` API: it speaks Packix's own language at
Packix's own path (:data:`DRM_PATHS`), so that a seller's middleman only changes its base
address. It takes ``{"user": {"udid", "model", "identifier", "token"}}`` as JSON and answers
``{"status": "completed"}`` or ``{"status": "failed"}`` with HTTP 200; anything else is an
error, which a middleman tells by its status (not 200) and by a ``status`` of ``error``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import orjson

from pkgcat import models
from pkgcat.domain import Caller
from pkgcat.errors import ApiError, InvalidArgument
from pkgcat.http.errors import envelope
from pkgcat.http.idempotency import idempotency_key, idempotent
from pkgcat.http.operations import BY_NAME, DRM_PATH, LIMIT, PACKAGE, PAGE, Given, Operation
from pkgcat.http.params import Query
from pkgcat.http.uploads import Incoming
from pkgcat.http.webhooks import read_fields
from pkgcat.licences import DrmRequest, LicenceService
from pkgcat.storage.writes.idempotency import Answers

DRM_PATHS = frozenset({DRM_PATH, DRM_PATH + "/"})
"""Packix's path, as a middleman posts to it (and with the slash some add)."""
DRM_MAX_BODY = 4096
"""A DRM check's body: four short fields need far less."""


class LicenceCall(NamedTuple):
    """What a whitelist operation's handler is given."""

    licences: LicenceService
    answers: Answers
    caller: Caller
    query: Query
    incoming: Incoming


Handler = Callable[[LicenceCall], Awaitable[bytes]]
"""``async def h(call) -> bytes``: the operation's whole answer body."""

_ADD = BY_NAME["package/whitelist/add"]
_REMOVE = BY_NAME["package/whitelist/remove"]
_UDIDS = _ADD.parameter("udid")
_DESCRIPTION = _ADD.parameter("description")


async def whitelist(call: LicenceCall) -> bytes:
    """A page of a package's whitelist, as YouRepo pages it."""
    licences, _, caller, query, _ = call
    package_id = PACKAGE.identifier(query)
    limit, page = LIMIT.page_size(query), PAGE.bounded(query)
    found = await licences.whitelist(caller, package_id, limit, page)
    return envelope(models.whitelist_body(found))


def _udids(fields: Given) -> list[str]:
    udids = _UDIDS.items(fields)
    assert udids is not None  # required
    return udids


async def _write(
    call: LicenceCall, operation: Operation, work: Callable[[Given], Awaitable[Any]]
) -> bytes:
    """Read the fields and do ``work(fields)``, once per Idempotency-Key."""
    _, answers, caller, _, incoming = call
    key = idempotency_key(incoming)
    fields, raw = await read_fields(incoming)

    async def done() -> bytes:
        return envelope(models.whitelist_change_body(await work(fields)))

    digest = hashlib.sha256(raw).hexdigest()
    return await idempotent(answers, caller.application.id, key, operation.name, digest, done)


async def whitelist_add(call: LicenceCall) -> bytes:
    """Devices put on a package's whitelist, each with the request's description."""
    licences, caller = call.licences, call.caller

    async def work(fields: Given) -> Any:
        package_id = PACKAGE.identifier(fields)
        description = fields.get("description")
        if description is None:
            description = ""
        elif not isinstance(description, str):
            raise _DESCRIPTION.missing()
        entries = [(udid, description) for udid in _udids(fields)]
        return await licences.whitelist_add(caller, package_id, entries, _ADD.name)

    return await _write(call, _ADD, work)


async def whitelist_remove(call: LicenceCall) -> bytes:
    """Devices taken off a package's whitelist."""
    licences, caller = call.licences, call.caller

    async def work(fields: Given) -> Any:
        package_id = PACKAGE.identifier(fields)
        return await licences.whitelist_remove(caller, package_id, _udids(fields), _REMOVE.name)

    return await _write(call, _REMOVE, work)


HANDLERS: dict[str, Handler] = {
    "package/whitelist": whitelist,
    "package/whitelist/add": whitelist_add,
    "package/whitelist/remove": whitelist_remove,
}
"""This module's operations by name: :data:`pkgcat.http.routes.LICENCE_ROUTES` serves them."""


# --- the Packix/Havoc DRM check --------------------------------------------------------------


def drm_request(body: bytes, token_header: bytes | None, authorization: bytes | None) -> DrmRequest:
    """A middleman's request: ``{"user": {...}}`` (or the four fields at the top), its token
    from the body, else a ``token`` header, else ``Authorization`` (``Bearer <token>`` or the
    token alone). Code 2 naming what is unfit."""
    try:
        given = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError as error:
        raise InvalidArgument("body", f"not JSON: {error}") from None
    if not isinstance(given, dict):
        raise InvalidArgument("body", 'must be a JSON object: {"user": {"udid": ..., ...}}')
    user = given.get("user", given)
    if not isinstance(user, dict):
        raise InvalidArgument("user", "must be an object of udid, model, identifier and token")
    fields = {name: _text(user, name) for name in ("udid", "model", "identifier", "token")}
    token = fields["token"]
    if token is None and token_header is not None:
        token = token_header.decode("latin-1").strip() or None
    if token is None and authorization is not None:
        scheme, _, rest = authorization.decode("latin-1").strip().partition(" ")
        token = (rest.strip() if scheme.lower() == "bearer" else scheme) or None
    return DrmRequest(token, fields["udid"], fields["model"], fields["identifier"])


def _text(user: dict[str, Any], name: str) -> str | None:
    value = user.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(name, "must be a string")
    return value


def drm_answer(status: str) -> bytes:
    """The answer a middleman reads: ``completed`` (owned) or ``failed`` (not owned)."""
    return orjson.dumps({"status": status})


def drm_refusal(error: ApiError) -> bytes:
    """An error as a middleman sees it: a ``status`` that is neither ``completed`` nor
    ``failed``, with the API's code and message beside it."""
    return orjson.dumps({"status": "error", "code": error.code, "message": error.message})
