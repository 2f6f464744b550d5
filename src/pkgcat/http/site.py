"""Everything that is not an API operation: the OpenAPI document, its page, a health check.

Served by Starlette, off the hot path. The documentation page is Swagger UI,
served from the ``swagger-ui-py`` package's files, so it works offline.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import swagger_ui
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from pkgcat.errors import MethodNotAllowed, NotReady, Unauthenticated, UnknownEndpoint
from pkgcat.http import dashboard
from pkgcat.http.errors import error_response
from pkgcat.http.openapi import openapi_document

if TYPE_CHECKING:
    from pkgcat.metrics import Metrics

_SWAGGER_STATIC = Path(swagger_ui.__file__).with_name("static")

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
  <script>
    window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui"});
  </script>
</body>
</html>
"""


REVALIDATE = {"cache-control": "no-cache"}
"""The OpenAPI document and its page: a cache may keep them but must ask again before each
use, so that an upgrade's new document is seen at once."""
STATIC_CACHE = "public, max-age=86400"
"""Swagger UI's files change only with the installed package: a day in any cache."""


class _StaticFiles(StaticFiles):
    """Swagger UI's files, with :data:`STATIC_CACHE`."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["cache-control"] = STATIC_CACHE
        return response


Readiness = Callable[[], Awaitable[dict[str, object]]]
"""Checks the backends; returns what it found, raises when one is not usable."""

log = logging.getLogger("pkgcat.http")


def create_site(
    on_shutdown: Callable[[], Awaitable[None]],
    ready: Readiness,
    metrics: Metrics | None = None,
    repository: ASGIApp | None = None,
) -> Starlette:
    """The Starlette app; ``/metrics`` is served only when ``metrics`` is given.

    ``repository``: the served APT repository's app, mounted at ``/repo``.
    """
    document = orjson.dumps(openapi_document())

    async def openapi(_request: Request) -> Response:
        return Response(document, media_type="application/json", headers=REVALIDATE)

    async def docs(_request: Request) -> Response:
        return HTMLResponse(_DOCS_PAGE, headers=REVALIDATE)

    async def health(_request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def readiness(_request: Request) -> Response:
        # Liveness (/healthz) says the process answers; readiness says it can serve:
        # the database answers (and Redis, when the limit is shared), and how far
        # this worker's caches have caught up.
        try:
            found = await ready()
        except Exception as error:
            found = error.found if isinstance(error, NotReady) else {}
            reason = str(error) if isinstance(error, NotReady) else type(error).__name__
            log.warning("not ready: %s", reason)
            body = {"status": "unavailable", "reason": reason, **found}
            return Response(orjson.dumps(body), status_code=503, media_type="application/json")
        return Response(orjson.dumps({"status": "ready", **found}), media_type="application/json")

    async def scrape(request: Request) -> Response:
        assert metrics is not None
        if not metrics.allows(request.headers.get("authorization")):
            status, body, _ = error_response(
                Unauthenticated("/metrics needs Authorization: Bearer <PKGCAT_METRICS_TOKEN>")
            )
            headers = {"www-authenticate": 'Bearer realm="metrics"'}
            return Response(body, status, headers, media_type="application/json")
        return Response(metrics.exposition(), media_type=metrics.content_type)

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
        if metrics is not None:
            metrics.start()
        yield
        if metrics is not None:
            await metrics.stop()
        await on_shutdown()

    return Starlette(
        routes=[
            Route("/", home),
            Route("/openapi.json", openapi),
            Route("/docs", docs),
            Mount("/docs/static", _StaticFiles(directory=_SWAGGER_STATIC), name="swagger"),
            *dashboard.ROUTES,
            Route("/healthz", health),
            Route("/readyz", readiness),
            # Off, /metrics is an unknown endpoint like any other.
            *([Route("/metrics", scrape)] if metrics is not None else []),
            *([Mount("/repo", app=repository)] if repository is not None else []),
        ],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
