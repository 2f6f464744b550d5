"""Webhook fixtures: the test catalogue's endpoints, and real receivers on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from pkgcat.ingest.operator_data import import_purchases
from pkgcat.net.addresses import Allowance
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.delivery import Deliverer, DeliverySettings
from pkgcat.webhooks.endpoints import Endpoints, allowance
from pkgcat.webhooks.signing import Opener
from tests.ingest.test_operator_data import PURCHASE, write_csv
from tests.repository.conftest import blob_dir, cli_env, pkgcat
from tests.servers import connection_owner, poll

__all__ = ["blob_dir", "cli_env", "pkgcat"]  # the repository's fixtures: `pkgcat publish` here too

PASSPHRASE = "a webhook passphrase of some length"
LOOPBACK: Allowance = allowance("", allow_loopback=True)


@dataclass
class Delivery:
    """One request a receiver got."""

    headers: dict[str, str]
    body: bytes
    at: float = 0.0
    """When it arrived (``time.monotonic()``)."""
    sender: int | None = None
    """The pid of the process it came from, when the receiver is told whose it may be."""


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records every POST and answers as told.

    ``status``: the answer (503 while "down"); ``hold``: when set, each request
    waits for it to be set before answering (a receiver that hangs); ``delay``: seconds
    each answer takes (a receiver that does some work); ``senders``: the pids a request
    may come from, each request's own named in its :attr:`Delivery.sender` (Linux).
    """

    server: ThreadingHTTPServer
    status: int = 200
    hold: threading.Event | None = None
    delay: float = 0.0
    senders: tuple[int, ...] = ()
    got: list[Delivery] = field(default_factory=list)
    """Requests answered with a 2xx."""
    seen: list[Delivery] = field(default_factory=list)
    """Every request received, whatever its answer (the failed attempts too)."""
    arrived: int = 0
    """Requests received, answered or not yet."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def ids(self) -> list[str]:
        with self.lock:
            return [d.headers["Pkgcat-Event-Id"] for d in self.got]

    def answered(self) -> list[Delivery]:
        with self.lock:
            return list(self.got)

    def attempts(self) -> list[Delivery]:
        with self.lock:
            return list(self.seen)


def _handler(receiver: Callable[[], Receiver]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Connections kept alive, as the deliverer's client keeps them: one handler a
        # connection, which looks its sender up once (/proc/net/tcp can be long to read).
        protocol_version = "HTTP/1.1"
        sender: int | None = None

        def do_POST(self) -> None:
            me = receiver()
            at = time.monotonic()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if me.senders and self.sender is None:
                self.sender = connection_owner(self.client_address[1], me.port, me.senders)
            delivery = Delivery(dict(self.headers.items()), body, at, self.sender)
            with me.lock:
                me.arrived += 1
                me.seen.append(delivery)
            if me.hold is not None:
                me.hold.wait(30)
            if me.delay:
                time.sleep(me.delay)  # the receiver's own work, not a test's timing
            status = me.status
            if 200 <= status < 300:
                with me.lock:
                    me.got.append(delivery)
            try:
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except (BrokenPipeError, ConnectionResetError):  # its sender was killed meanwhile
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002 - the base's signature
            return None

    return Handler


@pytest.fixture
def receivers() -> Iterator[Callable[[], Receiver]]:
    """Start receivers on 127.0.0.1 (any free port); all stopped after the test."""
    made: list[Receiver] = []

    def start() -> Receiver:
        box: list[Receiver] = []
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(lambda: box[0]))
        server.daemon_threads = True
        box.append(Receiver(server))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        made.append(box[0])
        return box[0]

    yield start
    for receiver in made:
        if receiver.hold is not None:
            receiver.hold.set()
        receiver.server.shutdown()
        receiver.server.server_close()


@pytest.fixture
def store(admin: CatalogueAdmin, catalogue: dict[str, str]) -> WebhookStore:
    return WebhookStore(admin.engine)


@pytest.fixture
def endpoints(store: WebhookStore) -> Endpoints:
    return Endpoints(store, passphrase=PASSPHRASE, allowed=LOOPBACK, allow_http=True)


def events(engine: Engine) -> list[tuple[str, int, str]]:
    """(type, source id, data) of every event in the outbox, oldest first."""
    v = t.webhook_events
    with engine.connect() as db:
        found = db.execute(select(v.c.type, v.c.source_id, v.c.data).order_by(v.c.seq))
        return [(kind, source, data) for kind, source, data in found]


def event_count(engine: Engine) -> int:
    with engine.connect() as db:
        return int(db.execute(select(func.count()).select_from(t.webhook_events)).scalar_one())


@pytest.fixture
def deliverers(store: WebhookStore) -> Iterator[Callable[..., Deliverer]]:
    """Start in-process deliverers (fast retries); each stopped after the test."""
    started: list[Deliverer] = []

    def start(**over: Any) -> Deliverer:
        settings = DeliverySettings(**({"timeout": 5.0, "retry_seconds": 0.05} | over))
        deliverer = Deliverer(store, Opener(PASSPHRASE), LOOPBACK, settings)
        deliverer.start()
        started.append(deliverer)
        return deliverer

    yield start
    for deliverer in started:
        deliverer.stop(30)


def import_sales(engine: Engine, directory: Path, txns: list[str], **over: str) -> None:
    """Record a purchase of com.alpha.paid (source Alpha) for each transaction id, in order."""
    rows = [PURCHASE | {"txn_id": txn, "source": ""} | over for txn in txns]
    import_purchases(engine, write_csv(directory / f"{txns[0]}.csv", rows))


def event_ids(engine: Engine) -> list[str]:
    v = t.webhook_events
    with engine.connect() as db:
        return list(db.execute(select(v.c.event_id).order_by(v.c.seq)).scalars())


def until(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    """Poll ``check`` (see :func:`tests.servers.poll`) until it holds."""
    poll(lambda: True if check() else None, what, within)
