"""Webhooks benchmark: what the outbox costs an import, and how fast one deliverer sends.

Measures, in the same run and interleaved round by round, on SQLite (and on
PostgreSQL with ``--postgres-url``):

- ``import``: ``pkgcat import-purchases``' write of N new purchases into a
  fresh catalogue whose source has no webhook endpoint (no event is written);
- ``import-hooked``: the same with one endpoint on the source: N
  ``sale.completed`` events written in the import's transaction;
- ``deliver``: one deliverer with one sender (one endpoint at a time, events in
  order) posting those events, signed, to a receiver on 127.0.0.1 that answers
  204 at once; events per second over the first ``--deliver`` events.

Goals (docs/webhooks.md): the hooked import at most 10% slower than the plain
one; at least 500 events/s per deliverer. Not part of the test suite.

    .venv/bin/python -m bench.webhooks                   # 100,000 purchases, 3 rounds
    .venv/bin/python -m bench.webhooks --rows 20000 --rounds 1
    .venv/bin/python -m bench.webhooks --postgres-url postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench import postgres
from pkgcat.ingest.operator_data import import_purchases
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.migrate import upgrade
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.delivery import Deliverer, DeliverySettings
from pkgcat.webhooks.endpoints import Endpoints, allowance
from pkgcat.webhooks.signing import Opener

PASSPHRASE = "a benchmark passphrase, not a secret"  # noqa: S105 - seals throwaway databases
SOURCE = "Bench"


def write_purchases(path: Path, rows: int) -> Path:
    """``rows`` whole-source purchases, each with its own transaction id."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            ["source", "nickname", "status", "total", "commission", "currency", "date",
             "txn_id", "payment_platform"]
        )  # fmt: skip
        for n in range(rows):
            writer.writerow(
                [SOURCE, f"buyer{n % 5000}", "Completed", "4.99", "0.75", "USD",
                 f"2026-01-{1 + n % 28:02d}T12:00:00Z", f"BENCH-{n:08d}", "paypal"]
            )  # fmt: skip
    return path


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per sender, as in production

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.count += 1  # type: ignore[attr-defined]  # our server's own counter
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002 - the base's signature
        return None


@contextmanager
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    server.count = 0  # type: ignore[attr-defined]
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def fresh(url: str, hooked: bool, target: str) -> CatalogueAdmin:
    upgrade(url)
    admin = CatalogueAdmin(url)
    admin.add_source(SOURCE, "https://bench.example/")
    admin.create_application(SOURCE, "shop")
    if hooked:
        endpoints = Endpoints(
            WebhookStore(admin.engine),
            passphrase=PASSPHRASE,
            allowed=allowance("", allow_loopback=True),
            allow_http=True,
        )
        endpoints.create(1, target, ["sale.completed"])
    return admin


def timed(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def deliver_rate(admin: CatalogueAdmin, server: ThreadingHTTPServer, events: int) -> float:
    """Events per second one deliverer with one sender posts, over ``events`` events."""
    deliverer = Deliverer(
        WebhookStore(admin.engine),
        Opener(PASSPHRASE),
        allowance("", allow_loopback=True),
        DeliverySettings(senders=1),
    )
    server.count = 0  # type: ignore[attr-defined]
    started = time.perf_counter()
    deliverer.start()
    deadline = started + 600
    while server.count < events:  # type: ignore[attr-defined]
        if time.perf_counter() > deadline:
            sys.exit("deliver: not done within 600 s")
        time.sleep(0.01)  # polling the receiver's count, not timing
    rate = server.count / (time.perf_counter() - started)  # type: ignore[attr-defined]
    deliverer.stop(30)
    return float(rate)


def run(urls: Callable[[str], str], backend: str, file: Path, args: argparse.Namespace) -> None:
    plain: list[float] = []
    hooked: list[float] = []
    rates: list[float] = []
    with receiver() as server:
        target = f"http://127.0.0.1:{server.server_address[1]}/hook"
        for n in range(args.rounds):
            for with_hook, into in ((False, plain), (True, hooked)):
                admin = fresh(urls(f"{n}-{with_hook}"), with_hook, target)
                try:
                    into.append(timed(lambda a=admin: import_purchases(a.engine, file)))
                    if with_hook:
                        rates.append(deliver_rate(admin, server, min(args.deliver, args.rows)))
                finally:
                    admin.close()
            print(
                f"  {backend} round {n + 1}: import {plain[-1]:.2f} s, hooked {hooked[-1]:.2f} s,"
                f" deliver {rates[-1]:,.0f} events/s",
                flush=True,
            )
    a, b = statistics.median(plain), statistics.median(hooked)
    print(f"{backend}: {args.rows:,} purchases: import {a:.2f} s, with an endpoint {b:.2f} s "
          f"({(b / a - 1) * 100:+.1f}%, goal <= +10%); one deliverer "
          f"{statistics.median(rates):,.0f} events/s (goal >= 500)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deliver", type=int, default=20_000, help="events timed per round")
    parser.add_argument("--postgres-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pkgcat-bench-webhooks-") as scratch:
        root = Path(scratch)
        file = write_purchases(root / "purchases.csv", args.rows)
        run(lambda name: f"sqlite:///{root / name}.db", "sqlite", file, args)
        if args.postgres_url:
            with ExitStack() as stack:

                def database(_name: str) -> str:
                    return stack.enter_context(postgres.fresh_database(args.postgres_url))

                run(database, "postgresql", file, args)


if __name__ == "__main__":
    main()
