"""The ASGI application: the three API operations on a lean path, the rest on Starlette.

The API paths are answered here directly, without a framework's routing and
middleware: the benchmark goal for a details request (key check, rate limit,
durable count, lookup and serialization at 0.30x of a bare ASGI app, see
docs/architecture.md) leaves no room for them. Everything else (the OpenAPI
document, the documentation page, the health check) goes to a Starlette app.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pkgcat.domain import RateDecision
from pkgcat.errors import (
    ApiError,
    InternalError,
    InvalidArgument,
    MethodNotAllowed,
    RateLimited,
    TooManyFailures,
    Unauthenticated,
    UnknownEndpoint,
    UnknownVersion,
)
from pkgcat.http.auth import presented_key
from pkgcat.http.errors import Headers, error_response
from pkgcat.http.routes import RESPONSE_CACHE_SIZE, ROUTES, VERSION, Handler, Query, ResponseCache
from pkgcat.http.throttle import AuthThrottle
from pkgcat.services import CatalogueService

log = logging.getLogger("pkgcat.http")

_API_PREFIX = f"/{VERSION}/"
_LOOKS_LIKE_VERSION = re.compile(r"/v?\d+(\.\d+)*(/|$)")
_JSON = (b"content-type", b"application/json")
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_NO_STORE = (b"cache-control", b"no-store")
_API_HEADERS = (_JSON, _NO_STORE, _NOSNIFF)
"""Every API answer's fixed headers: JSON, never stored by a cache (it is one key's data,
and a key may be in the query), and never sniffed as anything else by a browser."""


_NEEDS_DECODING = re.compile(rb"[%+\x80-\xff]")


def parse_query(raw: bytes) -> tuple[Query, set[str]]:
    """The query's parameters, and the names given more than once."""
    query: Query = {}
    repeated: set[str] = set()
    if _NEEDS_DECODING.search(raw) is None:
        # Plain ASCII with nothing to decode (what clients send): split it as
        # parse_qsl would, in a fifth of its time.
        pairs = [pair.partition("=")[::2] for pair in raw.decode("ascii").split("&") if pair]
    else:
        # Clients should percent-encode; raw non-ASCII bytes are read as UTF-8 all the same.
        text = raw.decode("utf-8", "replace")
        pairs = parse_qsl(text, keep_blank_values=True, errors="replace")
    for name, value in pairs:
        if name in query:
            repeated.add(name)
        query[name] = value
    return query, repeated


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _presents_a_key(scope: Scope) -> bool:
    """Whether the request sent a key at all (read again on the failure path only)."""
    return _header(scope, b"authorization") is not None or bool(
        parse_query(scope["query_string"])[0].get("secret_key")
    )


def _rate_headers(decision: RateDecision) -> Headers:
    return [
        (b"ratelimit-limit", str(decision.limit).encode()),
        (b"ratelimit-remaining", str(decision.remaining).encode()),
        (b"ratelimit-reset", str(decision.reset_after).encode()),
    ]


def _with_request_id(send: Send, request_id: str) -> Send:
    """``send``, adding the request id, ``nosniff`` and, unless the site chose one, ``no-store``."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [
                *message.get("headers", []),
                (b"x-request-id", request_id.encode()),
                _NOSNIFF,
            ]
            if not any(name.lower() == b"cache-control" for name, _ in headers):
                headers.append(_NO_STORE)
            message = {**message, "headers": headers}
        await send(message)

    return sending


class ApiApp:
    """The whole server as one ASGI callable."""

    def __init__(self, service: CatalogueService, site: ASGIApp, throttle: AuthThrottle) -> None:
        self.service = service
        self.site = site
        self.throttle = throttle
        self.responses = ResponseCache(RESPONSE_CACHE_SIZE)
        # Request ids: a random per-process prefix and a counter; unique, and cheap.
        self._prefix = secrets.token_hex(4)
        self._ids = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.site(scope, receive, send)
            return
        path: str = scope["path"]
        handler = ROUTES.get(path)
        request_id = f"{self._prefix}-{next(self._ids)}"
        if (
            handler is None
            and not path.startswith(_API_PREFIX)
            and path != _API_PREFIX[:-1]
            and not _LOOKS_LIKE_VERSION.match(path)
        ):
            await self.site(scope, receive, _with_request_id(send, request_id))
            return
        status, body, headers = await self._answer(scope, path, handler, request_id)
        headers.extend(_API_HEADERS)
        headers.append((b"x-request-id", request_id.encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _answer(
        self, scope: Scope, path: str, handler: Handler | None, request_id: str
    ) -> tuple[int, bytes, Headers]:
        rate: Headers = []
        try:
            if handler is None:
                if path.startswith(_API_PREFIX) or path == _API_PREFIX[:-1]:
                    raise UnknownEndpoint(f"unknown endpoint {path!r}; see /openapi.json")
                raise UnknownVersion(
                    f"unknown API version in {path!r}; this server speaks {VERSION}"
                )
            if scope["method"] != "GET":
                raise MethodNotAllowed(f"method {scope['method']} not allowed; use GET")
            query, repeated = parse_query(scope["query_string"])
            throttle = self.throttle
            if throttle.refused:  # some address guessed too many keys: is it this one?
                wait = throttle.refusal(throttle.client(scope))
                if wait is not None:
                    raise TooManyFailures(throttle.allowance, wait)
            if "secret_key" in repeated:
                raise Unauthenticated("secret_key: given more than once")
            key = presented_key(query.get("secret_key"), _header(scope, b"authorization"))
            caller, decision = await self.service.admit(key)
            rate = _rate_headers(decision)
            if repeated:
                raise InvalidArgument(min(repeated), "given more than once")
            return 200, await handler(self.service, caller, query, self.responses), rate
        except RateLimited as error:
            status, body, headers = error_response(error)
            return status, body, _rate_headers(error.decision) + headers
        except Unauthenticated as error:
            if _presents_a_key(scope):  # a missing key is not a guess
                throttle = self.throttle
                wait = await throttle.failed(throttle.client(scope))
                if wait is not None:
                    refused = TooManyFailures(throttle.allowance, wait)
                    status, body, headers = error_response(refused)
                    return status, body, _rate_headers(refused.decision) + headers
            status, body, headers = error_response(error)
            return status, body, rate + headers
        except ApiError as error:
            status, body, headers = error_response(error)
            if isinstance(error, MethodNotAllowed):
                headers.append((b"allow", b"GET"))
            return status, body, rate + headers
        except Exception:
            # The body says only that it failed; the log has the trace, under the same id.
            log.exception("request %s to %s failed", request_id, path)
            status, body, headers = error_response(
                InternalError(f"internal error; request id {request_id}")
            )
            return status, body, rate + headers
