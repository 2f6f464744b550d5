"""The ASGI application: the API operations on a lean path, the rest on Starlette.

The API paths are answered here directly, without a framework's routing and
middleware: the benchmark goal for a details request (key check, rate limit,
durable count, lookup and serialization at 0.30x of a bare ASGI app, see
docs/architecture.md) leaves no room for them. Everything else (the OpenAPI
document, the documentation page, the health check) goes to a Starlette app.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import re
import secrets
from collections.abc import Callable
from functools import lru_cache
from time import perf_counter, time
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pkgcat import keys
from pkgcat.domain import Caller, RateDecision
from pkgcat.errors import (
    ApiError,
    DeadlineExceeded,
    InternalError,
    InvalidArgument,
    KeyKindRefused,
    KeyMissing,
    MethodNotAllowed,
    QueryKeyRefused,
    RateLimited,
    TooManyFailures,
    Unauthenticated,
    Unavailable,
    UnknownEndpoint,
    UnknownVersion,
)
from pkgcat.http.auth import presented_key
from pkgcat.http.bodies import BodyDeadline
from pkgcat.http.errors import Headers, error_response
from pkgcat.http.licences import (
    DRM_MAX_BODY,
    DRM_PATHS,
    LicenceCall,
    drm_answer,
    drm_refusal,
    drm_request,
)
from pkgcat.http.licences import Handler as LicenceHandler
from pkgcat.http.money import Call as MoneyCall
from pkgcat.http.money import Desk
from pkgcat.http.money import Handler as MoneyHandler
from pkgcat.http.operations import BY_PATH
from pkgcat.http.routes import (
    LICENCE_ROUTES,
    MONEY_ROUTES,
    ROUTES,
    TAGGED,
    VERSION,
    WEBHOOK_ROUTES,
    WRITE_ROUTES,
    Handler,
    Incoming,
    Query,
    WriteHandler,
    operation_name,
    response_cache,
)
from pkgcat.http.throttle import AuthThrottle
from pkgcat.http.webhooks import Call
from pkgcat.http.webhooks import Handler as WebhookHandler
from pkgcat.keys import KEY_PREFIX
from pkgcat.logs import REQUEST_ID, redact, request_text
from pkgcat.loops import RunningLoop
from pkgcat.services import CatalogueService
from pkgcat.storage.blobs import BlobsUnavailable
from pkgcat.storage.cache import GenerationCache

if TYPE_CHECKING:
    from pkgcat.access_log import AccessLog
    from pkgcat.licences import LicenceService
    from pkgcat.metrics import Metrics
    from pkgcat.repository.uploads import Uploads
    from pkgcat.storage.writes.idempotency import Answers
    from pkgcat.webhooks.managed import Managed

log = logging.getLogger("pkgcat.http")

_API_PREFIX = f"/{VERSION}/"
_LOOKS_LIKE_VERSION = re.compile(r"/v?\d+(\.\d+)*(/|$)")
_JSON = (b"content-type", b"application/json")
_BODILESS = frozenset(("GET", "HEAD", "OPTIONS"))
"""Methods whose requests this server never reads a body of: no body deadline (nor its cost)."""
_GIVEN_ID = re.compile(rb"[A-Za-z0-9][A-Za-z0-9_.:=+/-]{0,127}")
"""An incoming ``X-Request-Id`` that is kept: at most 128 characters, none that needs escaping
(so that it goes into log lines and the response header as it came)..."""
_KEY = KEY_PREFIX.encode()
"""...and that does not hold a secret key (a client that sends one there by mistake), nor
anything else the log would redact."""
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_NO_STORE = (b"cache-control", b"no-store")
_API_HEADERS = (_JSON, _NO_STORE, _NOSNIFF)
SWEEP_EVERY = 0.1
"""Seconds between two looks for requests past their deadline (one timer for them all:
a timer per request would cost more than a tenth of a request)."""
"""Every API answer's fixed headers: JSON, never stored by a cache (it is one key's data,
and a key may be in the query), and never sniffed as anything else by a browser."""


_PUBLIC = frozenset(path for path, operation in BY_PATH.items() if operation.public)
"""The paths a public key may call (package/check): a set, looked up once a request."""
_LICENCE_READS = frozenset(p for p in LICENCE_ROUTES if BY_PATH[p].method == "GET")
"""The whitelist's read: under the request deadline, as the other reads are."""
INVALID_FORMAT = b"Invalid format"
"""YouRepo's answer to an output type it does not serve (HTTP 415): the message alone."""


def _other_format(path: str) -> bool:
    """Whether ``path`` asks an operation for another output type than JSON
    (``/1.0/package/details.xml``): Disqus served json, jsonp and rss; this API JSON only."""
    stem, dot, extension = path.rpartition(".")
    return (
        bool(dot)
        and path.startswith(_API_PREFIX)
        and extension != "json"
        and f"{stem}.json" in BY_PATH
    )


def entity_tag(body: bytes) -> bytes:
    """A body's strong ``ETag``: 32 hex digits of its BLAKE2b-128, quoted."""
    return b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'


def matches(if_none_match: bytes, tag: bytes) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (weak comparison, RFC 9110) or is ``*``."""
    if if_none_match.strip() == b"*":
        return True
    return any(
        candidate.strip().removeprefix(b"W/") == tag for candidate in if_none_match.split(b",")
    )


_NEEDS_DECODING = re.compile(rb"[%+\x80-\xff]")


def parse_query(raw: bytes) -> tuple[Query, set[str]]:
    """The query's parameters, and the names given more than once."""
    query: Query = {}
    repeated: set[str] = set()
    if _NEEDS_DECODING.search(raw) is None:
        # Plain ASCII with nothing to decode (what clients send): split it as
        # parse_qsl would, in a fifth of its time.
        text = raw.decode("ascii")
        if "&" not in text:  # one parameter (or none), as most requests have: no list
            if text:
                name, _, value = text.partition("=")
                query[name] = value
            return query, repeated
        pairs = [pair.partition("=")[::2] for pair in text.split("&") if pair]
    else:
        # Clients should percent-encode; raw non-ASCII bytes are read as UTF-8 all the same.
        text = raw.decode("utf-8", "replace")
        pairs = parse_qsl(text, keep_blank_values=True, errors="replace")
    for name, value in pairs:
        if name in query:
            repeated.add(name)
        query[name] = value
    return query, repeated


def _refused(error: RateLimited) -> tuple[int, bytes, Headers]:
    """A 429's status, body and headers: the envelope, with the spent limit's headers."""
    status, body, headers = error_response(error)
    return status, body, _rate_headers(error.decision) + headers


_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(:[0-9]*)?")
"""A ``Host`` value: ``uri-host [ ":" port ]`` (RFC 9110, section 7.2), its host not empty."""


def _malformed(scope: Scope, hosts: int, host: bytes | None) -> ApiError | None:
    """Why a request's target or ``Host`` is not one to answer, if it is not (RFC 9112).

    Nothing the server sends is built from ``Host`` (every redirect is relative), but a
    request an origin server must refuse is refused: without ``Host`` in HTTP/1.1 (an
    HTTP/1.0 request may leave it out: granian gives it as empty), with two, or with a
    value that is no host; and a target that is no path, such as ``CONNECT``'s
    ``host:port``.
    """
    if scope["method"] == "CONNECT":
        return MethodNotAllowed("method CONNECT not allowed: this server is no proxy")
    if scope["path"][:1] != "/":
        return InvalidArgument("request target", "must be a path that starts with /")
    if hosts == 1 and host == b"" and scope["http_version"] in ("1", "1.0"):
        return None
    if hosts != 1 or not _HOST.fullmatch(host or b""):
        return InvalidArgument(
            "Host", "send exactly one Host header naming this server (RFC 9112, section 3.2)"
        )
    return None


async def _refuse(send: Send, request_id: str, error: ApiError) -> None:
    """Answer ``error`` in the envelope, before any routing."""
    status, body, headers = error_response(error)
    if isinstance(error, MethodNotAllowed):
        headers.append((b"allow", b"GET, HEAD"))
    headers.extend(_API_HEADERS)
    headers.append((b"x-request-id", request_id.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@lru_cache(maxsize=64)
def _policy_headers(limit: int, window: int) -> tuple[tuple[bytes, bytes], tuple[bytes, bytes]]:
    """The two rate-limit headers that depend only on the limit (few: built once each)."""
    return (
        (b"ratelimit-limit", b"%d" % limit),
        # draft-ietf-httpapi-ratelimit-headers: the quota and its window, in seconds.
        (b"ratelimit-policy", b"%d;w=%d" % (limit, window)),
    )


def _rate_headers(decision: RateDecision) -> Headers:
    limit, policy = _policy_headers(decision.limit, decision.window)
    return [
        limit,
        (b"ratelimit-remaining", b"%d" % decision.remaining),
        (b"ratelimit-reset", b"%d" % decision.reset_after),
        policy,
    ]


def _with_request_id(send: Send, request_id: str, answering: Callable[[int], None]) -> Send:
    """``send``, adding the request id, ``nosniff`` and, unless the site chose one, ``no-store``.

    ``answering`` is called with the status before the response starts.
    """

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            answering(message["status"])
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

    def __init__(
        self,
        service: CatalogueService,
        site: ASGIApp,
        throttle: AuthThrottle,
        unavailable: Callable[[Exception], bool] = lambda _error: False,
        *,
        cache_bytes: int,
        metrics: Metrics | None = None,
        query_keys: bool = True,
        access_log: AccessLog | None = None,
        deadline: float = 5.0,
        body_timeout: float = 60.0,
        uploads: Uploads | None = None,
        webhooks: Managed | None = None,
        money: Desk | None = None,
        licences: LicenceService | None = None,
        answers: Answers | None = None,
    ) -> None:
        """``cache_bytes``: the worker's cache budget, of which the rendered answers take a share;
        ``query_keys`` false refuses a key in the query string (``PKGCAT_QUERY_KEYS``).

        ``access_log``: where each request's line goes (none: no line). ``deadline``: the
        seconds an API request may take (``PKGCAT_REQUEST_DEADLINE``), then it is 503.
        ``body_timeout``: the seconds a request's body may take to arrive
        (``PKGCAT_BODY_READ_TIMEOUT``), then it is 408 (:mod:`pkgcat.http.bodies`).
        ``uploads``: what the write operations publish with (none: they answer code 15).
        ``webhooks``: what the ``webhook/*`` operations manage endpoints with (none: code 15).
        ``money``: what the money operations read and refund with (none: code 15).
        ``licences``: the public keys' checks, the whitelist and the DRM check (none: a check
        takes secret keys only, and the others answer code 15); ``answers``: where the
        whitelist's writes keep theirs under an ``Idempotency-Key``.
        """
        self.service = service
        self.licences = licences
        self.answers = answers
        self.uploads = uploads
        self.webhooks = webhooks
        self.money = money
        self.query_keys = query_keys
        self.site = site
        self.throttle = throttle
        # Whether a failure means the database is locked or unreachable (503), not a bug (500).
        self._unavailable = unavailable
        self.responses = response_cache(cache_bytes)
        self._metrics = metrics
        self.access_log = access_log
        # Each answer body's ETag, beside it: keyed by the body itself (the very object the
        # response cache holds, whose hash Python keeps), so a cached answer's tag is
        # computed once per catalogue generation.
        self.etags: GenerationCache[bytes, bytes] = GenerationCache(self.responses.max_bytes // 4)
        if metrics is not None:
            metrics.watch_cache("responses", self.responses)
        # Request ids: a random per-process prefix and a counter; unique, and cheap.
        self._prefix = secrets.token_hex(4)
        self._ids = itertools.count(1)
        # Each API request under way (by a token of its own: a server may run several in one
        # task) to its task and the loop time its deadline falls at, oldest first (every
        # request has the same deadline); one timer a tenth of a second looks for late ones.
        self._deadline = deadline
        self._body_timeout = body_timeout
        # A count must reach the database this long before the deadline, or it counts nothing:
        # its reply then has that long to come back before the request is answered 503.
        self._cutoff_after = deadline - min(1.0, deadline / 4)
        self._inflight: dict[int, tuple[asyncio.Task[object], float]] = {}
        self._late: set[int] = set()
        self._sweeping: asyncio.AbstractEventLoop | None = None
        self._running = RunningLoop()

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the requests past their deadline; look again while any is under way."""
        if not self._inflight or loop.is_closed():
            self._sweeping = None
            return
        now = loop.time()
        for token, (task, ends) in self._inflight.items():
            if ends > now:
                break  # the rest came later
            if token not in self._late:
                self._late.add(token)
                task.cancel()
        loop.call_later(SWEEP_EVERY, self._sweep, loop)

    async def _public_key(self, key: str | None, query: Query, public: bool) -> str:
        """The public key a request presents (``public_key=``, or a ``pkp_`` key in the
        Bearer header), where the operation takes one; :class:`KeyKindRefused` (code 9),
        once the key is known live, where it does not."""
        given = query.get("public_key") or None
        if given is not None:
            if not keys.is_public(given):
                raise Unauthenticated("public_key: not a valid public key (pkp_...)")
            if key is not None and key != given:
                raise Unauthenticated(
                    "public_key: the query parameter and the other key sent differ"
                )
            key = given
        assert key is not None
        if not public:
            await self.service.authenticate_public(key)  # code 5 unless live
            raise KeyKindRefused(
                "public_key: this is a public key, which may only check a device's licence "
                "(package/check with udid); this operation needs a secret key"
            )
        return key

    async def _drm(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: str,
        authorization: bytes | None,
        started: float,
    ) -> None:
        """The Packix/Havoc DRM check (:mod:`pkgcat.http.licences`): its own answers, in its
        own language, each with the headers of every API answer."""
        status, body, headers, code, application = await self._drm_answer(
            scope, receive, authorization
        )
        headers.extend(_API_HEADERS)
        headers.append((b"x-request-id", request_id.encode()))
        if self.access_log is not None:
            self.access_log.line(
                scope["method"], scope["path"], "drm/check", status, code, application,
                request_id, started,
            )  # fmt: skip
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _drm_answer(
        self, scope: Scope, receive: Receive, authorization: bytes | None
    ) -> tuple[int, bytes, Headers, int, int | None]:
        rate: Headers = []
        application: int | None = None
        caller: Caller | None = None
        token: bytes | None = None
        try:
            try:
                if scope["method"] != "POST":
                    raise MethodNotAllowed(f"method {scope['method']} not allowed; use POST")
                if self.licences is None:
                    raise InternalError("this server answers no DRM checks")
                throttle = self.throttle
                if throttle.refused:
                    wait = throttle.refusal(throttle.client(scope))
                    if wait is not None:
                        raise TooManyFailures(throttle.allowance, wait, throttle.window)
                for name, value in scope["headers"]:
                    if name == b"token":
                        token = bytes(value)
                body = await _bounded_body(
                    BodyDeadline(receive, self._body_timeout).receive, DRM_MAX_BODY
                )
                request = drm_request(body, token, authorization)
                answer, caller, decision = await self.licences.drm_check(
                    request, "drm/check", time() + self._cutoff_after
                )
                application = caller.application.id
                rate.extend(_rate_headers(decision))
                return 200, drm_answer(answer.status), rate, 0, application
            except RateLimited as error:
                status, _, headers = _refused(error)
                return status, drm_refusal(error), headers, error.code, error.application_id
            except Unauthenticated as error:
                throttle = self.throttle
                # A token sent and refused is a guess; none sent (code 4) is not.
                wait = None
                if not isinstance(error, KeyMissing):
                    wait = await throttle.failed(throttle.client(scope))
                if wait is not None:
                    refused = TooManyFailures(throttle.allowance, wait, throttle.window)
                    status, _, headers = _refused(refused)
                    return status, drm_refusal(refused), headers, refused.code, None
                status, _, headers = error_response(error)
                return status, drm_refusal(error), rate + headers, error.code, application
            except ApiError as error:
                status, _, headers = error_response(error)
                if isinstance(error, MethodNotAllowed):
                    headers.append((b"allow", b"POST"))
                return status, drm_refusal(error), rate + headers, error.code, application
        except Exception as error:
            request_id = REQUEST_ID.get()
            if self._unavailable(error):
                if caller is not None:
                    self.service.retract(caller, "drm/check")
                log.warning("request %s to the DRM check: database unavailable", request_id)
                failed: ApiError = Unavailable(
                    f"database unavailable; retry shortly; request id {request_id}"
                )
            else:
                log.exception("request %s to the DRM check failed", request_id)
                failed = InternalError(f"internal error; request id {request_id}")
            status, _, headers = error_response(failed)
            return status, drm_refusal(failed), rate + headers, failed.code, application

    def _unavailable_answer(
        self, request_id: str, path: str, why: str, rate: Headers, what: str = "database"
    ) -> tuple[int, bytes, Headers, int]:
        """The 503 of a database (or object store) locked, unreachable or silent: one log
        line, no trace."""
        # Expected while it lasts, and no bug: one line, no trace.
        log.warning("request %s to %s: %s", request_id, request_text(path), why)
        unavailable = Unavailable(f"{what} unavailable; retry shortly; request id {request_id}")
        status, body, headers = error_response(unavailable)
        return status, body, rate + headers, unavailable.code

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.site(scope, receive, send)
            return
        # One pass over the headers for the four this app reads.
        authorization = given_id = if_none_match = host = None
        hosts = 0
        for name, value in scope["headers"]:
            if name == b"authorization":
                if authorization is None:
                    authorization = bytes(value)
            elif name == b"x-request-id":
                given_id = value
            elif name == b"if-none-match":
                if_none_match = bytes(value)
            elif name == b"host":
                hosts += 1
                host = value
        request_id = None
        if given_id is not None and _GIVEN_ID.fullmatch(given_id) and _KEY not in given_id:
            request_id = given_id.decode("ascii")
            if redact(request_id) != request_id:
                request_id = None
        if request_id is None:
            request_id = f"{self._prefix}-{next(self._ids)}"
        REQUEST_ID.set(request_id)  # each request runs in a context of its own
        access = self.access_log
        started = perf_counter() if access is not None or self._metrics is not None else 0.0
        path: str = scope["path"]
        if hosts != 1 or not _HOST.fullmatch(host or b"") or path[:1] != "/":
            refusal = _malformed(scope, hosts, host)
            if refusal is not None:
                if access is not None:
                    access.line(
                        scope["method"],
                        path,
                        None,
                        refusal.status,
                        refusal.code,
                        None,
                        request_id,
                        started,
                    )
                await _refuse(send, request_id, refusal)
                return
        handler = ROUTES.get(path)
        if handler is None and path in DRM_PATHS:
            await self._drm(scope, receive, send, request_id, authorization, started)
            return
        if handler is None and _other_format(path):
            # YouRepo's one answer outside the envelope: the message alone (415).
            if access is not None:
                access.line(scope["method"], path, None, 415, None, None, request_id, started)
            await send(
                {
                    "type": "http.response.start",
                    "status": 415,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        _NO_STORE,
                        _NOSNIFF,
                        (b"x-request-id", request_id.encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": INVALID_FORMAT})
            return
        if (
            handler is None
            and not path.startswith(_API_PREFIX)
            and path != _API_PREFIX[:-1]
            and not _LOOKS_LIKE_VERSION.match(path)
        ):
            answered = False

            def answering(status: int) -> None:
                nonlocal answered
                answered = True
                if access is not None:
                    access.line(
                        scope["method"], path, None, status, None, None, request_id, started
                    )

            sending = _with_request_id(send, request_id, answering)
            try:
                if scope["method"] in _BODILESS:
                    await self.site(scope, receive, sending)
                else:
                    reading = BodyDeadline(receive, self._body_timeout, sending)
                    try:
                        await self.site(scope, reading.receive, reading.send)
                    except Exception:
                        if not reading.answered:
                            raise
                        # Answered 408 already: the app failed at the body it did not get.
                        log.info(
                            "request %s to %s: no body within %g s, answered 408",
                            request_id,
                            request_text(path),
                            self._body_timeout,
                        )
            finally:
                if not answered and access is not None:  # it failed before answering
                    access.line(scope["method"], path, None, 500, None, None, request_id, started)
            return
        if scope["method"] not in _BODILESS:
            receive = BodyDeadline(receive, self._body_timeout).receive
        status_code, body, headers, code, application = await self._answer(
            scope, path, handler, request_id, authorization, if_none_match, receive
        )
        if self._metrics is not None:
            self._metrics.request(path, status_code, code, perf_counter() - started)
        headers.extend(_API_HEADERS)
        headers.append((b"x-request-id", request_id.encode()))
        if access is not None:  # before the answer leaves: an answer sent has its line
            operation = (
                None
                if handler is None
                and path not in WRITE_ROUTES
                and path not in WEBHOOK_ROUTES
                and path not in MONEY_ROUTES
                and path not in LICENCE_ROUTES
                else operation_name(path)
            )
            access.line(
                scope["method"],
                path,
                operation,
                status_code,
                code,
                application,
                request_id,
                started,
            )
        await send({"type": "http.response.start", "status": status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _answer(
        self,
        scope: Scope,
        path: str,
        handler: Handler | None,
        request_id: str,
        authorization: bytes | None,
        if_none_match: bytes | None,
        receive: Receive,
    ) -> tuple[int, bytes, Headers, int, int | None]:
        """Status, body, headers, API code, and the caller's application id once known.

        A request still under way at its deadline is cancelled and answered 503; one answered
        503 once counted has its count taken back: a 503 is never counted.
        """
        rate: Headers = []
        token = id(rate)  # unique while the request lasts
        task = None
        # Reads only: a write (an upload) lasts as long as its body takes to arrive.
        if handler is not None or path in _LICENCE_READS:
            loop = self._running()
            task = asyncio.current_task(loop)
            if task is not None:
                self._inflight[token] = (task, loop.time() + self._deadline)
                if self._sweeping is not loop:
                    self._sweeping = loop
                    loop.call_later(SWEEP_EVERY, self._sweep, loop)
        application: int | None = None
        query: Query = {}
        caller: Caller | None = None
        write: WriteHandler | None = None
        hook: WebhookHandler | None = None
        desk: MoneyHandler | None = None
        licence: LicenceHandler | None = None
        try:
            try:
                if handler is None:
                    write = WRITE_ROUTES.get(path)
                    hook = WEBHOOK_ROUTES.get(path) if write is None else None
                    if write is None and hook is None:
                        licence = LICENCE_ROUTES.get(path)
                    if write is None and hook is None and licence is None:
                        desk = MONEY_ROUTES.get(path)
                    if write is None and hook is None and licence is None and desk is None:
                        if path.startswith(_API_PREFIX) or path == _API_PREFIX[:-1]:
                            raise UnknownEndpoint(f"unknown endpoint {path!r}; see /openapi.json")
                        raise UnknownVersion(
                            f"unknown API version in {path!r}; this server speaks {VERSION}"
                        )
                    method = BY_PATH[path].method  # a write is POST, and only POST
                    if scope["method"] != method:
                        raise MethodNotAllowed(
                            f"method {scope['method']} not allowed; use {method}"
                        )
                elif scope["method"] != "GET":
                    raise MethodNotAllowed(f"method {scope['method']} not allowed; use GET")
                query, repeated = parse_query(scope["query_string"])
                throttle = self.throttle
                if throttle.refused:  # some address guessed too many keys: is it this one?
                    wait = throttle.refusal(throttle.client(scope))
                    if wait is not None:
                        raise TooManyFailures(throttle.allowance, wait, throttle.window)
                if "secret_key" in repeated:
                    raise Unauthenticated("secret_key: given more than once")
                if "public_key" in repeated:
                    raise Unauthenticated("public_key: given more than once")
                key = presented_key(
                    query.get("secret_key"), authorization, query_keys=self.query_keys
                )
                public = path in _PUBLIC and self.licences is not None
                if query.get("public_key") or (public and key is not None and keys.is_public(key)):
                    key = await self._public_key(key, query, public)
                cutoff = time() + self._cutoff_after
                if public:
                    assert self.licences is not None
                    udid = query.get("udid")
                    caller, decision = await self.licences.admit(
                        key, udid, operation_name(path), cutoff
                    )
                else:
                    caller, decision = await self.service.admit(key, operation_name(path), cutoff)
                application = caller.application.id
                rate.extend(_rate_headers(decision))
                if repeated:
                    raise InvalidArgument(min(repeated), "given more than once")
                if licence is not None:
                    operation = BY_PATH[path]
                    self.service.require_scope(caller, operation.scope, operation.name)
                    if self.licences is None or self.answers is None:
                        raise InternalError("this server keeps no whitelists")
                    licence_call = LicenceCall(
                        self.licences,
                        self.answers,
                        caller,
                        query,
                        Incoming(scope["headers"], receive),
                    )
                    return 200, await licence(licence_call), rate, 0, application
                if hook is not None:
                    operation = BY_PATH[path]
                    self.service.require_scope(caller, operation.scope, operation.name)
                    if self.webhooks is None:
                        raise InternalError("this server manages no webhooks")
                    call = Call(
                        self.service,
                        self.webhooks,
                        caller,
                        query,
                        Incoming(scope["headers"], receive),
                    )
                    return 200, await hook(call), rate, 0, application
                if desk is not None:
                    operation = BY_PATH[path]
                    self.service.require_scope(caller, operation.scope, operation.name)
                    if self.money is None:
                        raise InternalError("this server keeps no sellers' money")
                    money = MoneyCall(
                        self.money, caller, query, Incoming(scope["headers"], receive)
                    )
                    return 200, await desk(money), rate, 0, application
                if write is not None:
                    operation = BY_PATH[path]
                    self.service.require_scope(caller, operation.scope, operation.name)
                    if self.uploads is None:
                        raise InternalError("this server takes no writes")
                    incoming = Incoming(scope["headers"], receive)
                    return (
                        200,
                        await write(self.service, self.uploads, caller, incoming),
                        rate,
                        0,
                        application,
                    )
                assert handler is not None
                body = await handler(self.service, caller, query, self.responses)
                if handler in TAGGED:
                    tag = self.etags.get(caller.generation, body)
                    if tag is None:
                        tag = entity_tag(body)
                        self.etags.put(caller.generation, body, tag)
                    rate.append((b"etag", tag))
                    if if_none_match is not None and matches(if_none_match, tag):
                        return 304, b"", rate, 0, application  # counted and limited all the same
                return 200, body, rate, 0, application
            except RateLimited as error:
                return *_refused(error), error.code, error.application_id
            except Unauthenticated as error:
                # No key is not a guess, nor is a key the deployment refuses unread in the query.
                guess = (
                    authorization is not None or query.get("secret_key") or query.get("public_key")
                )
                if guess and not isinstance(error, QueryKeyRefused):
                    throttle = self.throttle
                    wait = await throttle.failed(throttle.client(scope))
                    if wait is not None:
                        refused = TooManyFailures(throttle.allowance, wait, throttle.window)
                        return *_refused(refused), refused.code, application
                status, body, headers = error_response(error)
                return status, body, rate + headers, error.code, application
            except ApiError as error:
                status, body, headers = error_response(error)
                if isinstance(error, MethodNotAllowed):
                    allowed = BY_PATH[path].method if path in BY_PATH else "GET"
                    headers.append((b"allow", allowed.encode()))
                return status, body, rate + headers, error.code, application
            except BlobsUnavailable as error:  # an upload's object store down (its retries spent)
                if caller is not None:  # counted before the store failed: taken back
                    self.service.retract(caller, operation_name(path))
                why = f"object store unavailable ({error})"
                answer = self._unavailable_answer(request_id, path, why, rate, "object store")
                return *answer, application
            except Exception as error:
                if self._unavailable(error):
                    if caller is not None:  # counted before the database failed: taken back
                        self.service.retract(caller, operation_name(path))
                    why = f"database unavailable ({type(error).__name__})"
                    return *self._unavailable_answer(request_id, path, why, rate), application
                # The body says only that it failed; the log has the trace, under the same id.
                log.exception("request %s to %s failed", request_id, request_text(path))
                internal = InternalError(f"internal error; request id {request_id}")
                status, body, headers = error_response(internal)
                return status, body, rate + headers, internal.code, application
        except asyncio.CancelledError:  # the deadline's, or the server's
            if token not in self._late or task is None:
                raise  # not ours: the server's
            task.uncancel()
            if caller is not None:  # counted before the deadline: taken back
                self.service.retract(caller, operation_name(path))
            # Code 16, the API family's "your request timed out"; not counted, retry.
            log.warning(
                "request %s to %s: no answer within %g s",
                request_id,
                request_text(path),
                self._deadline,
            )
            late = DeadlineExceeded(
                f"your request timed out: no answer within {self._deadline:g} s; "
                f"not counted, retry shortly; request id {request_id}"
            )
            status, body, headers = error_response(late)
            return status, body, rate + headers, late.code, application
        finally:
            if task is not None:
                self._inflight.pop(token, None)
                self._late.discard(token)


async def _bounded_body(receive: Receive, limit: int) -> bytes:
    """A small body, whole: code 2 past ``limit`` bytes or when the client goes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise InvalidArgument("body", "the request was interrupted before its end")
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise InvalidArgument("body", f"larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
