"""``/demo/receiver``: the demo's own webhook receiver, so a newcomer sees deliveries arrive.

Served only when ``PKGCAT_DEMO_RECEIVER_FILE`` and ``PKGCAT_DEMO_RECEIVER_SECRET`` are set
(``pkgcat demo`` writes both to its settings file). It checks what arrives as docs/webhooks.md
tells a receiver to (the server imports nothing of the client, so it recomputes the signature
with :func:`pkgcat.webhooks.signing.signature_header`):

- ``POST``: the body checked against ``Pkgcat-Signature`` with the endpoint's secret; a
  genuine delivery is answered 200, anything else 400 (so the sender retries it, as a real
  receiver's refusal would make it). Either way one line is appended to the file (under an
  exclusive lock, so every worker of every process can write to it), saying whether the
  signature held.
- ``GET``: a page listing what arrived, newest first; every value is escaped, and the page
  runs no script (its Content-Security-Policy allows only its own style).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import html
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from pkgcat.webhooks.signing import SigningKey, signature_header

STYLE = (
    "body{font:15px/1.5 -apple-system,system-ui,sans-serif;margin:2em auto;max-width:60em;"
    "padding:0 1em}table{border-collapse:collapse;display:block;overflow-x:auto}"
    "th,td{text-align:left;padding:.3em .8em .3em 0;border-bottom:1px solid #ddd;"
    "vertical-align:top}td.id{overflow-wrap:anywhere}"
)
HEADERS = {
    # No script at all; the page's one style, allowed by its digest.
    "content-security-policy": "default-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()}'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
MAX_BODY = 256 * 1024
"""The largest delivery the receiver reads; events are a few hundred bytes."""
TOLERANCE = 300
"""Seconds a signature's timestamp may be from now, as docs/webhooks.md advises receivers."""
SHOWN = 200
"""Deliveries the page lists, the newest."""


class Receiver:
    """Appends what arrives to one file, and shows it."""

    def __init__(self, path: Path, secret: str) -> None:
        self.path = path
        self._key = SigningKey(secret.encode(), b"")  # Pkgcat-Signature keys by the text

    def _append(self, entry: Mapping[str, Any]) -> None:
        line = orjson.dumps(entry) + b"\n"
        with self.path.open("ab") as file:
            fcntl.flock(file, fcntl.LOCK_EX)  # one whole line at a time, from any process
            file.write(line)

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with self.path.open("rb") as file:
            fcntl.flock(file, fcntl.LOCK_SH)
            lines = file.read().splitlines()
        return [orjson.loads(line) for line in lines[-SHOWN:] if line.strip()][::-1]

    async def receive(self, request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return JSONResponse({"error": "too large"}, status_code=413)
        now = int(time.time())
        entry: dict[str, Any] = {"received_at": now}
        problem = self._refusal(body, request.headers.get("pkgcat-signature", ""), now)
        if problem is not None:
            entry |= {"verified": False, "error": problem}
            await anyio.to_thread.run_sync(self._append, entry)
            return JSONResponse({"error": problem}, status_code=400)
        try:
            event = orjson.loads(body)
        except orjson.JSONDecodeError:
            event = {}
        entry |= {"verified": True, "event": event}
        await anyio.to_thread.run_sync(self._append, entry)
        return JSONResponse({"received": True})

    def _refusal(self, body: bytes, header: str, now: int) -> str | None:
        """Why ``header`` does not sign ``body`` now (None: it does), as docs/webhooks.md says a
        receiver checks it: the timestamp within 5 minutes, one ``v1`` this secret's HMAC."""
        fields = [part.partition("=") for part in header.split(",")]
        stamps = [value for name, _, value in fields if name.strip() == "t"]
        given = [value for name, _, value in fields if name.strip() == "v1"]
        if len(stamps) != 1 or not stamps[0].isdigit() or not given:
            return "no Pkgcat-Signature of the form t=...,v1=..."
        stamp = int(stamps[0])
        if abs(now - stamp) > TOLERANCE:
            return f"the signature is {abs(now - stamp)} s from now, past {TOLERANCE} s"
        [expected] = signature_header(body, [self._key], stamp).split(",v1=")[1:]
        if not any(hmac.compare_digest(expected, value) for value in given):
            return "no v1 signature matches the body with this endpoint's secret"
        return None

    async def page(self, _request: Request) -> Response:
        entries = await anyio.to_thread.run_sync(self._read)
        return HTMLResponse(render(entries), headers=HEADERS)


def _facts(event: Mapping[str, Any]) -> str:
    data = event.get("data")
    found = data.get("object", data) if isinstance(data, Mapping) else None
    if not isinstance(found, Mapping):
        return ""
    shown = [
        f"{name}: {found[name]}"
        for name in ("package", "version", "architecture", "nickname", "total", "currency")
        if isinstance(found.get(name), str | int | float)
    ]
    return ", ".join(shown)


def render(entries: list[dict[str, Any]]) -> str:
    """The page: one row per delivery, every value escaped."""
    rows = []
    for entry in entries:
        event = entry.get("event") if isinstance(entry.get("event"), Mapping) else {}
        assert isinstance(event, Mapping)
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(entry.get("received_at", 0)))
        check = "signature checked" if entry.get("verified") else f"refused: {entry.get('error')}"
        cells = (
            when,
            str(event.get("type", "")),
            str(event.get("id", "")),
            check,
            _facts(event),
        )
        rows.append(
            "<tr>"
            + "".join(
                f'<td class="id">{html.escape(c)}</td>' if n == 2 else f"<td>{html.escape(c)}</td>"
                for n, c in enumerate(cells)
            )
            + "</tr>"
        )
    table = (
        "<table><thead><tr><th>received</th><th>event</th><th>id</th><th>signature</th>"
        "<th>what</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        if rows
        else "<p>No delivery yet: buy a package through the store, or publish one.</p>"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>pkgcat demo: webhook deliveries</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>Webhook deliveries</h1>"
        f"<p>{len(entries)} received by the demo's receiver, newest first.</p>{table}</body></html>"
    )


def receiver_route(path: Path, secret: str) -> Route:
    """The receiver's route, for the site to serve at ``/demo/receiver``."""
    receiver = Receiver(path, secret)

    async def endpoint(request: Request) -> Response:
        if request.method == "POST":
            return await receiver.receive(request)
        return await receiver.page(request)

    return Route("/demo/receiver", endpoint, methods=["GET", "POST"])
