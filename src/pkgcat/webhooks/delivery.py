"""The deliverer: claims endpoints, posts their events in order, retries, disables.

One thread claims (:meth:`pkgcat.storage.webhooks.WebhookStore.claim`) its fair
share of the endpoints with events to send (:mod:`pkgcat.storage.webhook_leases`),
so every worker of every host delivers some; up to ``PKGCAT_WEBHOOK_SENDERS``
threads send, one endpoint each: a receiver that hangs holds its own sender for
the timeout at most, never another endpoint. Another thread beats every third of
``PKGCAT_WEBHOOK_LEASE_SECONDS`` (5 s), renewing the deliverer's leases while its
attempts are under way, however long they take: a deliverer killed outright
(``kill -9``, its host lost) stops beating, and its endpoints are taken over
within one lease.

An endpoint's events go out one at a time in ``seq`` order; each 2xx is recorded
(the cursor moved past the event, the attempt logged, the lease renewed) before
the next event is sent, so the next holder of a lease resends only the attempt
that was under way when its deliverer was lost: an answer that never reached the
database. A sender whose lease may have lapsed (no heartbeat nor record has
reached the database for a lease) sends nothing more: another deliverer may hold
the endpoint by then.

An attempt succeeds on a 2xx within ``PKGCAT_WEBHOOK_TIMEOUT`` (10 s), the whole
exchange included. The fetcher of :mod:`pkgcat.net` makes it: the address is
resolved and checked at each delivery (refused ranges, as at creation), no
redirect is followed (a 3xx is a failure), and at most 64 KiB of the answer is
read (a larger answer fails). Anything else is retried after
``PKGCAT_WEBHOOK_RETRY_SECONDS`` doubled at each failure (at most 6 hours),
with jitter (between half and all of it), until the endpoint has failed for
``PKGCAT_WEBHOOK_RETRY_WINDOW`` (3 days) in a row: then it is disabled.
The secret is never logged: only the endpoint's id, the event's and the outcome.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol
from zoneinfo import ZoneInfo

import httpx

from pkgcat.domain import Shape
from pkgcat.net.addresses import Allowance
from pkgcat.net.errors import OutboundError
from pkgcat.net.fetcher import Fetcher, Limits, Policy
from pkgcat.repository.keys import KeyProblem
from pkgcat.storage.webhook_leases import Recorder
from pkgcat.storage.webhooks import Attempt, EndpointRecord, StoredEvent, WebhookStore
from pkgcat.webhooks.bodies import render
from pkgcat.webhooks.endpoints import allowance
from pkgcat.webhooks.heartbeat import Heartbeat
from pkgcat.webhooks.signing import Opener, SigningKey, signature_header, standard_headers

if TYPE_CHECKING:
    from pkgcat.config import Settings

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 64 * 1024
KEPT_ANSWER_CHARS = 256
"""Characters of an answer (or of the reason there was none) the delivery log keeps."""
MAX_DELAY = 6 * 3600.0
BATCH = 200
"""Events read per endpoint and lease: a deliverer then gives the endpoint back, so a
deliverer that starts meanwhile gets its share."""
IDLE_POLL = 0.25
"""Seconds between claims when there was nothing to claim."""


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    timeout: float = 10.0
    retry_seconds: float = 30.0
    retry_window: int = 3 * 24 * 3600
    lease_seconds: float = 5.0
    senders: int = 4
    default_shape: Shape = "A"
    default_timezone: str = "UTC"


class Watch(Protocol):
    """What the deliverer tells the metrics (:class:`pkgcat.metrics.Metrics` is one)."""

    def webhook_result(self, result: str) -> None:
        """An attempt's result: ``delivered``, ``failed`` (a retry will follow) or ``disabled``."""

    def webhook_levels(self, disabled: int, stored: int, pending: int) -> None:
        """Endpoints disabled, events in the outbox, events some enabled endpoint has yet to pass."""


LEVELS_INTERVAL = 5.0
"""Seconds between two reads of the levels :class:`Watch` is told of."""
KEEP_SECONDS = 30 * 24 * 3600
"""How long delivered events and logged attempts are kept (30 days)."""
PRUNE_INTERVAL = 600.0
"""Seconds between two prunings by one deliverer."""


def backoff(attempts: int, base: float, *, draw: Callable[[], float] = random.random) -> float:
    """Seconds before the next attempt after ``attempts`` failures in a row."""
    full = min(base * 2.0 ** min(attempts - 1, 40), MAX_DELAY)
    return full * (0.5 + draw() / 2)


class Deliverer:
    """Delivers webhook events from one process until stopped."""

    def __init__(
        self,
        store: WebhookStore,
        opener: Opener,
        allowed: Allowance,
        settings: DeliverySettings,
        *,
        watch: Watch | None = None,
    ) -> None:
        self._store = store
        self._opener = opener
        self._settings = settings
        self._watch = watch
        self._levels_due = 0.0
        self._prune_due = 0.0
        self._policy = Policy(allow=allowed, timeout=settings.timeout)
        self.owner = f"{os.getpid()}-{secrets.token_hex(8)}"
        self._lease_ms = int(settings.lease_seconds * 1000)
        self._heart = Heartbeat(
            store, self.owner, lease=settings.lease_seconds, senders=settings.senders
        )
        self._local = threading.local()
        self._fetchers: list[Fetcher] = []
        self._fetchers_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # The loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        """Claim and send until :meth:`stop`; senders finish their current attempt first."""
        busy: set[Future[None]] = set()
        senders = self._settings.senders
        self._heart.start()
        try:
            with ThreadPoolExecutor(senders, "pkgcat-webhook") as pool:
                while not self._stop.is_set():
                    free = senders - len(busy)
                    claimed: list[EndpointRecord] = []
                    started = time.monotonic()
                    if free > 0:
                        try:
                            claimed = self._store.claim(
                                self.owner, lease_ms=self._lease_ms, limit=free, senders=senders
                            )
                        except Exception:  # the database away: try again, never die
                            log.exception("webhook deliverer: claiming endpoints failed")
                    for endpoint in claimed:
                        future = pool.submit(self._serve, endpoint, started)
                        busy.add(future)
                        future.add_done_callback(self._done(busy))
                    self._tell_levels()
                    self._prune()
                    if not claimed:
                        self._wake.wait(IDLE_POLL)
                        self._wake.clear()
        finally:  # the senders are done: their leases are given back or recorded
            self._heart.stop()
            self.close()

    def close(self) -> None:
        """Close the connections of every thread's fetcher (those of manual sends too)."""
        with self._fetchers_lock:
            fetchers, self._fetchers = self._fetchers, []
        for fetcher in fetchers:
            fetcher.close()

    def _prune(self) -> None:
        if time.monotonic() < self._prune_due:
            return
        self._prune_due = time.monotonic() + PRUNE_INTERVAL
        try:
            self._store.prune(before=int(time.time()) - KEEP_SECONDS)
        except Exception:  # the next pruning will do it
            log.exception("webhook deliverer: pruning the outbox failed")

    def _tell_levels(self) -> None:
        if self._watch is None or time.monotonic() < self._levels_due:
            return
        self._levels_due = time.monotonic() + LEVELS_INTERVAL
        try:
            self._watch.webhook_levels(*self._store.counts())
        except Exception:  # a metric must never stop the deliveries
            log.exception("webhook deliverer: reading the outbox's levels failed")

    def _done(self, busy: set[Future[None]]) -> Callable[[Future[None]], None]:
        def done(future: Future[None]) -> None:
            busy.discard(future)
            if future.exception() is not None:
                log.error("webhook deliverer: a sender failed", exc_info=future.exception())
            self._wake.set()

        return done

    def start(self) -> None:
        """Run in a daemon thread of this process (the server's workers)."""
        self._thread = threading.Thread(target=self.run, name="pkgcat-webhooks", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        """Claim now rather than at the next poll."""
        self._wake.set()

    # One endpoint ------------------------------------------------------------------------------

    def _serve(self, endpoint: EndpointRecord, renewed: float) -> None:
        """Send the endpoint's events from its cursor; ``renewed``: when its lease was taken."""
        store, owner = self._store, self.owner
        try:
            keys = self._keys(endpoint)
        except KeyProblem as problem:
            log.error("webhook endpoint %s: %s", endpoint.endpoint_id, problem)
            store.advance(
                endpoint.pk, owner, position=endpoint.position, delivered=[], lease_ms=None
            )
            return
        audience = self._audience(endpoint)
        events = store.events_after(endpoint.source_id, endpoint.position, limit=BATCH)
        with store.recording() as recorder:  # after the reads: one connection at a time
            position = self._send_batch(endpoint, events, recorder, keys, audience, renewed)
        if position is not None:
            store.advance(endpoint.pk, owner, position=position, delivered=[], lease_ms=None)

    def _send_batch(
        self,
        endpoint: EndpointRecord,
        events: list[StoredEvent],
        recorder: Recorder,
        keys: list[SigningKey],
        audience: tuple[Shape, ZoneInfo, str],
        renewed: float,
    ) -> int | None:
        """Send the next events in order, each recorded before the next; the cursor to give
        the endpoint back at, or None when its lease ended otherwise (failed, lost)."""
        store, owner, position = self._store, self.owner, endpoint.position
        shape, zone, source = audience
        any_delivered = False
        for event in events:
            if self._stop.is_set():
                break
            if event.type not in endpoint.events:
                position = event.seq
                continue
            if time.monotonic() >= self._heart.held_until(renewed):
                log.warning(
                    "webhook endpoint %s: lease not renewed for %g s; sending stops",
                    endpoint.endpoint_id,
                    self._settings.lease_seconds,
                )
                return None
            body = render(
                event, shape=shape, zone=zone, source=source, package_row=store.package_row
            )
            attempt = self.send(endpoint.url, event, body, keys)
            if not attempt.ok:
                self._failed(endpoint, [attempt], position, any_delivered)
                return None
            position = event.seq
            any_delivered = True
            if self._watch is not None:
                self._watch.webhook_result("delivered")
            # Recorded before the next is sent: a deliverer taking the lease over sends again
            # only an attempt whose answer never reached the database.
            recording = time.monotonic()
            held = recorder.record(
                endpoint.pk, owner, position=position, lease_ms=self._lease_ms, attempt=attempt
            )
            if not held:
                log.warning(
                    "webhook endpoint %s: lease lost; another deliverer goes on",
                    endpoint.endpoint_id,
                )
                return None
            renewed = recording
        return position

    def _audience(self, endpoint: EndpointRecord) -> tuple[Shape, ZoneInfo, str]:
        """The shape, time zone and source name of the endpoint's bodies."""
        audience = self._store.audience(endpoint.application_id)
        shape: Shape = audience.shape or self._settings.default_shape  # type: ignore[assignment]  # 'A' or 'B' by the table's check
        zone = ZoneInfo(audience.timezone or self._settings.default_timezone)
        return shape, zone, audience.source_name

    def post_now(self, endpoint: EndpointRecord, event: StoredEvent, *, test: bool) -> Attempt:
        """Post ``event`` to ``endpoint`` at once, outside the order and the cursor, and log it
        (a test event, a redelivery asked for); the attempt."""
        shape, zone, source = self._audience(endpoint)
        body = render(
            event, shape=shape, zone=zone, source=source,
            package_row=self._store.package_row, test=test,
        )  # fmt: skip
        attempt = self.send(endpoint.url, event, body, self._keys(endpoint))
        self._store.log(endpoint.pk, attempt)
        return attempt

    def _failed(
        self, endpoint: EndpointRecord, attempts: list[Attempt], position: int, fresh: bool
    ) -> None:
        """``fresh``: something was delivered in this lease, so the run of failures starts anew."""
        attempt = attempts[-1]
        failures = 1 if fresh else endpoint.attempts + 1
        since = attempt.attempted_at if fresh else endpoint.failing_since or attempt.attempted_at
        reason = None
        if attempt.attempted_at - since >= self._settings.retry_window:
            started = datetime.fromtimestamp(since, UTC).isoformat()
            reason = f"failing since {started}: {attempt.response or attempt.status}"
        delay = backoff(failures, self._settings.retry_seconds)
        log.warning(
            "webhook endpoint %s: event %s not delivered (%s)%s",
            endpoint.endpoint_id,
            attempt.event_id,
            attempt.status if attempt.status is not None else attempt.response,
            "; endpoint disabled" if reason else f"; retry in {delay:.0f} s",
        )
        if self._watch is not None:
            self._watch.webhook_result("disabled" if reason else "failed")
        self._store.fail(
            endpoint.pk,
            self.owner,
            attempts=attempts,
            position=position,
            failures=failures,
            failing_since=since,
            retry_in_ms=int(delay * 1000),
            disable_reason=reason,
        )

    def _keys(self, endpoint: EndpointRecord) -> list[SigningKey]:
        keys = [SigningKey.of(self._opener.open(endpoint.sealed_secret))]
        until = endpoint.previous_until
        if endpoint.sealed_previous is not None and until is not None and until > time.time():
            keys.append(SigningKey.of(self._opener.open(endpoint.sealed_previous)))
        return keys

    def _fetcher(self) -> Fetcher:
        fetcher: Fetcher | None = getattr(self._local, "fetcher", None)
        if fetcher is None:
            fetcher = self._local.fetcher = Fetcher(self._policy)
            with self._fetchers_lock:
                self._fetchers.append(fetcher)
        return fetcher

    def send(self, url: str, event: StoredEvent, body: bytes, keys: list[SigningKey]) -> Attempt:
        """Post ``body`` once, signed both ways (:mod:`pkgcat.webhooks.signing`); the attempt
        as the log keeps it."""
        now = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "Pkgcat-Event-Id": event.event_id,
            "Pkgcat-Event-Type": event.type,
            "Pkgcat-Signature": signature_header(body, keys, now),
            **standard_headers(event.event_id, body, keys, now),
        }
        started = time.monotonic()
        status: int | None = None
        try:
            answer = self._fetcher().request(
                "POST",
                url,
                limits=Limits(max_bytes=MAX_ANSWER_BYTES, deadline=self._settings.timeout),
                headers=headers,
                content=body,
            )
            status = answer.status
            said = answer.content[:KEPT_ANSWER_CHARS].decode("utf-8", "replace")
        except OutboundError as error:
            said = str(error)
        except httpx.HTTPError as error:
            said = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        ok = status is not None and 200 <= status < 300
        duration = int((time.monotonic() - started) * 1000)
        return Attempt(event.event_id, now, ok, status, duration, said[:KEPT_ANSWER_CHARS])


def deliverer_for(
    settings: Settings, store: WebhookStore, *, watch: Watch | None = None
) -> Deliverer:
    """The deliverer the ``PKGCAT_WEBHOOK_*`` settings describe."""
    passphrase = settings.webhook_passphrase
    return Deliverer(
        store,
        Opener(None if passphrase is None else passphrase.get_secret_value()),
        allowance(settings.fetch_allow, settings.webhook_allow_loopback),
        DeliverySettings(
            timeout=settings.webhook_timeout,
            retry_seconds=settings.webhook_retry_seconds,
            retry_window=settings.webhook_retry_window,
            lease_seconds=settings.webhook_lease_seconds,
            senders=settings.webhook_senders,
            default_shape=settings.shape,
            default_timezone=settings.timezone,
        ),
        watch=watch,
    )


class InProcess:
    """The deliverer of a server's worker: its own engine and thread, started with the app."""

    def __init__(self, settings: Settings, watch: Watch | None) -> None:
        from pkgcat.storage.engine import engine_for

        self._engine = engine_for(settings.database_url)  # connects on first use, in the thread
        self._deliverer = deliverer_for(settings, WebhookStore(self._engine), watch=watch)
        self._stop_within = settings.webhook_timeout + 1

    def start(self) -> None:
        self._deliverer.start()

    def stop(self) -> None:
        """Stop, letting an attempt under way end (within the timeout)."""
        self._deliverer.stop(self._stop_within)
        self._engine.dispose()
