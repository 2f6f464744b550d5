"""Everything that is not an API operation: the OpenAPI document, its page, a health check.

Served by Starlette, off the hot path. The documentation page is Swagger UI,
served from the ``swagger-ui-py`` package's files, so it works offline: the two it
loads, and no other (the package also ships an editor and an OAuth2 redirect page,
which nothing here uses). No redirect is built from the request's ``Host``: the
router adds no slash (``/docs/`` is unknown, not sent to ``http://<Host>/docs``),
and the redirects there are relative.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import orjson
import swagger_ui
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Scope

from pkgcat.errors import (
    ApiError,
    MethodNotAllowed,
    NotReady,
    TooManyFailures,
    Unauthenticated,
    UnknownEndpoint,
)
from pkgcat.http import dashboard
from pkgcat.http.errors import error_response
from pkgcat.http.openapi import openapi_json
from pkgcat.http.throttle import AuthThrottle
from pkgcat.workers import obey_stops_noted_between_runs

if TYPE_CHECKING:
    from pkgcat.metrics import Metrics

_SWAGGER_STATIC = Path(swagger_ui.__file__).with_name("static")
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css")
"""The files of Swagger UI the page loads: the only ones served under ``/docs/static``."""

_DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>pkgcat: Package Catalogue API</title>
  <link rel="stylesheet" href="/docs/static/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/static/swagger-ui-bundle.js"></script>
  <script src="/docs/start.js"></script>
</body>
</html>
"""
_DOCS_SCRIPT = b"""// Swagger UI on this server's document; no validator badge (it would call another site).
window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", validatorUrl: null});
"""
DOCS_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        # Swagger UI draws its icons as data: images.
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
"""The documentation page's Content-Security-Policy: our own origin, never framed."""
DOCS_HEADERS = {
    "content-security-policy": DOCS_POLICY,
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


REVALIDATE = {"cache-control": "no-cache"}
"""The OpenAPI document and its page: a cache may keep them but must ask again before each
use, so that an upgrade's new document is seen at once."""
STATIC_CACHE = "public, max-age=86400"
"""Swagger UI's files change only with the installed package: a day in any cache."""


class _SwaggerFiles(StaticFiles):
    """The :data:`SWAGGER_FILES`, with :data:`STATIC_CACHE` and :data:`DOCS_HEADERS`."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        if path not in SWAGGER_FILES:
            raise HTTPException(404)
        return await super().get_response(path, scope)

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update({"cache-control": STATIC_CACHE} | DOCS_HEADERS)
        return response


Readiness = Callable[[], Awaitable[dict[str, object]]]
"""Checks the backends; returns what it found, raises when one is not usable."""

log = logging.getLogger("pkgcat.http")


def caches(found: dict[str, object]) -> str | None:
    """Where a worker's caches stand, in one word: ``current`` (it has heard of every change
    committed so far), ``behind`` (not yet), ``off`` (it hears of none, so reads everything
    from the database); ``None`` when the generations could not be read."""
    database, seen = found.get("catalogue_generation"), found.get("seen_generation")
    if not isinstance(database, int) or not isinstance(seen, int):
        return None
    if seen < 0:
        return "off"
    return "current" if seen >= database else "behind"


def _envelope(error: ApiError, headers: dict[str, str] | None = None) -> Response:
    status, body, extra = error_response(error)
    fields = {name.decode(): value.decode() for name, value in extra} | (headers or {})
    return Response(body, status, fields, media_type="application/json")


class Background(Protocol):
    """Work a worker runs beside the requests, in a thread of its own."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


def create_site(
    on_shutdown: Callable[[], Awaitable[None]],
    ready: Readiness,
    throttle: AuthThrottle,
    metrics: Metrics | None = None,
    repository: ASGIApp | None = None,
    background: Sequence[Background] = (),
    store: ASGIApp | None = None,
    extra: Sequence[BaseRoute] = (),
    on_startup: Callable[[], Awaitable[None]] | None = None,
) -> Starlette:
    """The Starlette app; ``/metrics`` is served only when ``metrics`` is given.

    ``on_startup`` runs at the worker's start, on its event loop, before any request (the
    storage's listener: the caches follow changes from then on, requested or not).

    ``throttle`` counts a wrong metrics token as a failed authentication, as the API counts
    a wrong key: a token is guessed no faster than a key. ``repository``: the served APT
    repository's app, mounted at ``/repo``; ``store``: the store's, at ``/store``;
    ``extra``: more routes (the demo's webhook receiver).
    ``background``: threads of the worker (the webhook deliverer), started with the app and
    stopped before it closes."""
    document = openapi_json()

    async def openapi(_request: Request) -> Response:
        return Response(document, media_type="application/json", headers=REVALIDATE)

    async def docs(_request: Request) -> Response:
        return HTMLResponse(_DOCS_PAGE, headers=REVALIDATE | DOCS_HEADERS)

    async def docs_script(_request: Request) -> Response:
        return Response(
            _DOCS_SCRIPT, media_type="text/javascript", headers=REVALIDATE | DOCS_HEADERS
        )

    async def health(_request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def readiness(_request: Request) -> Response:
        # Liveness (/healthz) says the process answers; readiness says it can serve:
        # the database answers (and Redis, when the limit is shared), and how far
        # this worker's caches have caught up.
        # The generations themselves stay private: they count the catalogue's changes.
        try:
            found = await ready()
        except Exception as error:
            found = error.found if isinstance(error, NotReady) else {}
            reason = str(error) if isinstance(error, NotReady) else type(error).__name__
            log.warning("not ready: %s", reason)
            body: dict[str, object] = {"status": "unavailable", "reason": reason}
            if (word := caches(found)) is not None:
                body["caches"] = word
            return Response(orjson.dumps(body), status_code=503, media_type="application/json")
        body = {"status": "ready", "caches": caches(found)}
        return Response(orjson.dumps(body), media_type="application/json")

    async def scrape(request: Request) -> Response:
        assert metrics is not None
        authorization = request.headers.get("authorization")
        client = throttle.client(request.scope)
        # An address refused for guessing keys or tokens is refused a right token too:
        # an answer that differed would tell it which guess was right.
        wait = throttle.refusal(client) if throttle.refused else None
        if wait is None:
            if metrics.allows(authorization):
                return Response(metrics.exposition(), media_type=metrics.content_type)
            if authorization is not None:  # no token is no guess
                wait = await throttle.failed(client)
        if wait is not None:
            return _envelope(TooManyFailures(throttle.allowance, wait, throttle.window))
        return _envelope(
            Unauthenticated("/metrics needs Authorization: Bearer <PKGCAT_METRICS_TOKEN>"),
            {"www-authenticate": 'Bearer realm="metrics"'},
        )

    async def home(_request: Request) -> Response:
        return RedirectResponse("/docs")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error = (
            MethodNotAllowed(f"method {request.method} not allowed here")
            if exc.status_code == 405
            else UnknownEndpoint(f"unknown endpoint {request.url.path!r}; see /docs")
        )
        status, body, headers = error_response(error)
        return Response(
            body,
            status_code=status,
            media_type="application/json",
            headers={**(exc.headers or {}), **{k.decode(): v.decode() for k, v in headers}},
        )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        obey_stops_noted_between_runs(asyncio.get_running_loop())
        if on_startup is not None:
            await on_startup()
        if metrics is not None:
            metrics.start()
        for task in background:
            task.start()
        yield
        for task in background:
            await anyio.to_thread.run_sync(task.stop)
        if metrics is not None:
            await metrics.stop()
        await on_shutdown()

    site = Starlette(
        routes=[
            Route("/", home),
            Route("/openapi.json", openapi),
            Route("/docs", docs),
            Route("/docs/start.js", docs_script),
            Mount("/docs/static", _SwaggerFiles(directory=_SWAGGER_STATIC), name="swagger"),
            *dashboard.ROUTES,
            Route("/healthz", health),
            Route("/readyz", readiness),
            # Off, /metrics is an unknown endpoint like any other.
            *([Route("/metrics", scrape)] if metrics is not None else []),
            *([Mount("/repo", app=repository)] if repository is not None else []),
            *([Mount("/store", app=store)] if store is not None else []),
            *extra,
        ],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    # No redirect to the same path with a slash added or removed: Starlette builds its
    # address from the request's Host, which the client chooses.
    site.router.redirect_slashes = False
    return site
