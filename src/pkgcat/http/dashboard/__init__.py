"""The seller dashboard at ``/dashboard``: a static page and our own scripts, off the hot path.

The page calls the public API from the browser with ``Authorization: Bearer``; the
server keeps no session and renders nothing per seller. Every file it loads is in this
folder (the chart library under ``assets/vendor/``, copied there by ``make dashboard-vendor``
from the version pinned in ``dashboard/package-lock.json``), and every answer carries a
Content-Security-Policy that allows our own origin only, with no inline script or style.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pkgcat import events

FOLDER = Path(__file__).parent
PATH = "/dashboard"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
"""Our own origin only: no inline script or style, nothing from elsewhere, never framed."""

HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    # The files change only with an upgrade: a cache keeps them but asks again first.
    "cache-control": "no-cache",
}
"""The headers of every dashboard answer, the page and its files alike."""


class _Assets(StaticFiles):
    """The page's scripts, style and the vendored chart library, with :data:`HEADERS`."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(HEADERS)
        return response


EVENT_TYPES = "<!-- event types -->"
"""Where the page lists the event types a sample can be sent of."""


@cache
def page() -> bytes:
    """The page, its list of event types filled in from their declarations (:mod:`pkgcat.events`)."""
    text = (FOLDER / "index.html").read_text(encoding="utf-8")
    assert EVENT_TYPES in text, "index.html no longer says where the event types go"
    options = "".join(f"<option>{html.escape(name)}</option>" for name in events.NAMES)
    return text.replace(EVENT_TYPES, options).encode()


async def _page(_request: Request) -> Response:
    return Response(page(), headers=HEADERS, media_type="text/html")


async def _with_slash(_request: Request) -> Response:
    return RedirectResponse(PATH)


ROUTES = [
    Route(PATH, _page),
    Route(f"{PATH}/", _with_slash),
    Mount(f"{PATH}/assets", _Assets(directory=FOLDER / "assets"), name="dashboard"),
]
"""The Starlette routes of the dashboard."""
