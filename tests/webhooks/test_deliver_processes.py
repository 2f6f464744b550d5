"""`pkgcat deliver` processes: a killed one loses nothing, two together send each event once."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.webhooks.endpoints import Endpoints
from tests.servers import PKGCAT, environment, serving, stop
from tests.webhooks.conftest import PASSPHRASE, Receiver, event_ids, import_sales, until


def webhook_env(database_url: str, **settings: str) -> dict[str, str]:
    """The environment of a process that delivers to the test's receivers (fast retries)."""
    return environment(
        database_url,
        webhook_passphrase=PASSPHRASE,
        webhook_allow_loopback="true",
        webhook_retry_seconds="0.05",
        **settings,
    )


@contextmanager
def delivering(database_url: str, log: Path, **settings: str) -> Iterator[subprocess.Popen[bytes]]:
    """``pkgcat deliver`` until the block ends (then stopped, or killed if it hangs)."""
    env = webhook_env(database_url, **settings)
    with log.open("ab") as output:
        process = subprocess.Popen([PKGCAT, "deliver"], env=env, stdout=output, stderr=output)
        try:
            yield process
        finally:
            stop(process)


def test_a_deliverer_killed_mid_send_loses_nothing(
    database_url: str,
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
) -> None:
    receiver = receivers()
    receiver.hold = threading.Event()
    endpoints.create(1, receiver.url, ["sale.completed"])
    import_sales(admin.engine, tmp_path, [f"K-{n}" for n in range(4)])
    log = tmp_path / "deliver.log"
    fast = {"webhook_lease_seconds": "3", "webhook_timeout": "2"}
    with delivering(database_url, log, **fast) as first:
        until(lambda: receiver.arrived == 1, "the first event to be in flight")
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert receiver.answered() == []  # nothing answered before the kill
    receiver.hold.set()
    with delivering(database_url, log, **fast):
        until(
            lambda: set(receiver.ids()) == set(event_ids(admin.engine)),
            "every event after the restart",
        )
    # At least once: the event in flight at the kill may come twice, no other.
    ids = receiver.ids()
    assert len(ids) - len(set(ids)) <= 1


def test_two_deliverers_send_each_event_once(
    database_url: str,
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
) -> None:
    healthy = [receivers() for _ in range(4)]
    for application, receiver in zip((1, 2, 1, 2), healthy, strict=True):
        endpoints.create(application, receiver.url, ["sale.completed"])
    log = tmp_path / "deliver.log"
    with delivering(database_url, log), delivering(database_url, log):
        for batch in range(4):  # while both run: each claims as events come
            import_sales(admin.engine, tmp_path, [f"T-{batch}-{n}" for n in range(50)])
        until(lambda: all(len(r.answered()) >= 200 for r in healthy), "200 events to each receiver")
    expected = event_ids(admin.engine)
    for receiver in healthy:
        assert receiver.ids() == expected  # each once, in order


def test_pkgcat_serve_delivers_by_default_and_shows_it_in_metrics(
    database_url: str,
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
) -> None:
    receiver, down = receivers(), receivers()
    down.status = 503
    endpoints.create(1, receiver.url, ["sale.completed"])
    endpoints.create(2, down.url, ["sale.completed"])
    env = webhook_env(database_url, metrics="true")
    with serving(env, tmp_path / "serve.log", workers=2) as served:
        import_sales(admin.engine, tmp_path, ["M-1", "M-2", "M-3"])
        until(lambda: receiver.ids() == event_ids(admin.engine), "the events, once each")

        def scraped() -> str:
            return httpx.get(f"{served.base}/metrics", timeout=5).text

        until(
            lambda: 'pkgcat_webhook_deliveries_total{result="delivered"} 3.0' in scraped(),
            "3 delivered",
        )
        until(lambda: 'pkgcat_webhook_outbox_events{state="stored"} 3.0' in scraped(), "the outbox")
        until(
            lambda: 'pkgcat_webhook_outbox_events{state="pending"} 3.0' in scraped(), "the backlog"
        )
        until(lambda: "pkgcat_webhook_retries_total 0.0" not in scraped(), "retries")
