"""Hostile HTTP servers on 127.0.0.1 (or [::1]), built by the tests: bombs, endless and dripping
bodies, redirects anywhere.

Each server counts the connections it accepts, so a test can prove that a refused address
was never connected to, and each answer stops by itself (a bounded number of bytes, a
bounded time) whether or not the client hangs up. :func:`connect_attempts` records every
TCP connect the process tries and lets only loopback ones through: a test can show that no
attempt was made to a metadata address without any packet leaving the machine.
"""

from __future__ import annotations

import gzip
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Route = Callable[["Handler"], None]
PIECE = 64 * 1024


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    routes: dict[str, Route]
    connections: int
    sent: dict[str, int]
    hosts: list[str]

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        super().process_request(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("Host", ""))
        route = self.server.routes.get(self.path.partition("?")[0])
        if route is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        route(self)

    def count(self, size: int) -> None:
        path = self.path.partition("?")[0]
        self.server.sent[path] = self.server.sent.get(path, 0) + size

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Hostile:
    """A server whose answers are ``routes`` (path to what it does); 404 for any other path."""

    def __init__(
        self,
        routes: dict[str, Route] | None = None,
        *,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        kind = _Server6 if ":" in host else _Server
        self._server = kind((host, 0), Handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._server.routes = dict(routes or {})
        self._server.connections = 0
        self._server.sent = {}
        self._server.hosts = []
        self.port: int = self._server.server_address[1]
        self.host = f"[{host}]" if ":" in host else host
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def url(self, path: str = "/") -> str:
        scheme = "https" if isinstance(self._server.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://{self.host}:{self.port}{path}"

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        return self._server.connections

    @property
    def hosts(self) -> list[str]:
        """The ``Host`` header of each request, in order."""
        return self._server.hosts

    def sent(self, path: str) -> int:
        """Bytes of body written for ``path`` (accepted by the kernel) so far."""
        return self._server.sent.get(path, 0)

    def route(self, path: str, answer: Route) -> None:
        self._server.routes[path] = answer

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def hostile() -> Iterator[Callable[..., Hostile]]:
    """Start hostile servers: ``hostile(routes, host=..., tls=...)``; all stopped after the test."""
    started: list[Hostile] = []

    def start(routes: dict[str, Route] | None = None, **options: Any) -> Hostile:
        server = Hostile(routes, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


# Answers ---------------------------------------------------------------------------------------


def body(data: bytes, *, status: int = 200, headers: dict[str, str] | None = None) -> Route:
    """``data`` as a whole body with its length."""

    def answer(handler: Handler) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        handler.count(len(data))

    return answer


def gzip_bomb(expanded: int) -> bytes:
    """gzip of ``expanded`` zero bytes: about a thousandth of it."""
    return gzip.compress(b"\0" * expanded, compresslevel=9)


def redirect(location: str, status: int = 302) -> Route:
    return body(b"", status=status, headers={"Location": location})


def endless(most: int = 256 * 1024 * 1024) -> Route:
    """A body without a length that goes on until the client hangs up (``most`` bytes at most)."""

    def answer(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        piece = b"x" * PIECE
        try:
            for _ in range(most // PIECE):
                handler.wfile.write(piece)
                handler.count(PIECE)
        except OSError:  # the client hung up: what the test expects
            return

    return answer


def drip(every: float = 0.05, most_seconds: float = 20.0) -> Route:
    """A byte every ``every`` seconds of a 1 MB body, for ``most_seconds`` at most."""

    def answer(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(1_000_000))
        handler.end_headers()
        ends = time.monotonic() + most_seconds
        try:
            while time.monotonic() < ends:
                handler.wfile.write(b"x")
                handler.wfile.flush()
                handler.count(1)
                time.sleep(every)  # the drip itself: what the server under test does
        except OSError:
            return

    return answer


# Connections the process tries -----------------------------------------------------------------


@pytest.fixture
def connect_attempts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connect the test's process tries, as (address, port); only loopback ones go out.

    Any other connect fails at once with ``ConnectionRefusedError``, before a packet is
    sent: no test reaches another host, whatever the code under test tries.
    """
    attempts: list[tuple[str, int]] = []
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host, port = str(address[0]), int(address[1])
            attempts.append((host, port))
            if host != "::1" and not host.startswith("127."):
                raise ConnectionRefusedError(f"the test lets no connection leave: {host}")
        original(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts
