"""The server's Prometheus metrics, served at ``/metrics`` when ``PKGCAT_METRICS`` is on.

Off by default, and then this module is never imported: the request path pays
nothing. On, each API request costs one counter increment and one histogram
observation, on children resolved once per (operation, status, code). The rest
is read now and then rather than on the request path: a sampler task in each
worker copies the response and catalogue caches' hit and miss counts, the
usage counts waiting for their commit and the database pool's use into the
metrics once a second, and again just before the worker answers a scrape.

Under ``pkgcat serve`` every worker writes its values to files of its own in
the directory ``PROMETHEUS_MULTIPROC_DIR`` names (``prometheus_client``'s
multiprocess mode: ``serve`` makes a fresh one each start and removes it at
exit), and ``/metrics`` on any worker adds up the files of every worker.
A worker that has died keeps its counts in the sums; its gauges are dropped.
Elsewhere (an app built in-process) the values are this process's alone.
docs/operators.md#metrics lists every metric.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import hmac
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Metric,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

from pkgcat.storage.backends import Storage
from pkgcat.storage.cache import GenerationCache

log = logging.getLogger("pkgcat.metrics")

MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
SAMPLE_INTERVAL = 1.0
"""Seconds between two samples of a worker's caches, pending counts and pool."""

LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""Seconds: a warm details request takes well under a millisecond, a stuck one seconds."""

_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db$")

UNKNOWN = "unknown"
"""The operation label of a request to a path that is no operation (codes 1 and 6)."""
FROM_THE_START = ((200, 0), (500, 15), (503, 15))
"""(status, code) series of every operation that exist, at 0, before any request: an alert
on the rate of 5xx answers sees the first burst (a series born with it has no rate yet)."""


class Metrics:
    """One worker's metrics: what the request path counts, and what the sampler reads."""

    content_type = CONTENT_TYPE_LATEST
    """Of the exposition: Prometheus' text format."""

    def __init__(self, storage: Storage, operations: Mapping[str, str], token: str | None) -> None:
        """``operations``: each API path to its operation's name, the label of its requests."""
        self._directory = os.environ.get(MULTIPROCESS_DIRECTORY) or None
        self._token = token.encode() if token is not None else None
        # A registry of this object's own: two apps in one process (tests) never collide.
        self._registry = CollectorRegistry()
        registry = self._registry
        self.requests = Counter(
            "pkgcat_requests",
            "API requests answered, by operation, HTTP status and API code (0: success).",
            ["operation", "status", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "pkgcat_request_duration_seconds",
            "Time to answer an API request, from routing to the response ready to send.",
            ["operation"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.rejections = Counter(
            "pkgcat_rate_limit_rejections",
            "API requests refused with code 13: a spent rate limit, or an address refused for failed keys.",
            registry=registry,
        )
        self.cache_hits = Counter(
            "pkgcat_cache_hits",
            "Lookups answered from a worker's cache, by cache.",
            ["cache"],
            registry=registry,
        )
        self.cache_misses = Counter(
            "pkgcat_cache_misses",
            "Lookups a worker's cache could not answer, by cache.",
            ["cache"],
            registry=registry,
        )
        self.pending = Gauge(
            "pkgcat_usage_pending_counts",
            "Request counts waiting for their commit, summed over the live workers.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.flushes = Histogram(
            "pkgcat_usage_flush_seconds",
            "Time to commit one batch of request counts (group commit), retries included.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.pool = Gauge(
            "pkgcat_database_pool_connections",
            "PostgreSQL connections of the workers' pools, by state (in_use, idle).",
            ["state"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.pool_max = Gauge(
            "pkgcat_database_pool_max_connections",
            "The most connections the live workers' pools may open together.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.webhook_deliveries = Counter(
            "pkgcat_webhook_deliveries",
            "Webhook delivery attempts, by result: delivered, failed (to be retried) or disabled (the endpoint failed for the whole retry window).",
            ["result"],
            registry=registry,
        )
        self.webhook_retries = Counter(
            "pkgcat_webhook_retries",
            "Failed webhook deliveries that are retried later.",
            registry=registry,
        )
        self.webhook_disabled = Gauge(
            "pkgcat_webhook_disabled_endpoints",
            "Webhook endpoints disabled (by their application, or after failing for the retry window).",
            registry=registry,
            multiprocess_mode="livemostrecent",
        )
        self.webhook_outbox = Gauge(
            "pkgcat_webhook_outbox_events",
            "Events in the webhook outbox, by state: stored (all), pending (some enabled endpoint has yet to pass it).",
            ["state"],
            registry=registry,
            multiprocess_mode="livemostrecent",
        )
        self._storage = storage
        self._operations = dict(operations)
        # Children resolved once per label set: a request's status and code are both in the
        # key (code 0 comes as 200 and as 304, code 15 as 500 and as 503).
        self._children: dict[tuple[str, int, int], Counter] = {}
        self._timers: dict[str, Histogram] = {}
        for name in (*self._operations.values(), UNKNOWN):
            self._timers[name] = self.latency.labels(name)
            if name != UNKNOWN:
                for status, code in FROM_THE_START:
                    self._child(name, status, code)
        self._caches: dict[str, GenerationCache[Any, Any]] = dict(storage.catalogue.caches())
        self._seen: dict[str, tuple[int, int]] = {}
        self._sampler: asyncio.Task[None] | None = None
        storage.counter.on_flush = self.flushes.observe

    def watch_cache(self, name: str, cache: GenerationCache[Any, Any]) -> None:
        """Report ``cache``'s hits and misses under ``name``."""
        self._caches[name] = cache

    # The request path ---------------------------------------------------------------------------

    def request(self, path: str, status: int, code: int, seconds: float) -> None:
        """Count one answered request to an API path (an operation's, or an unknown one)."""
        # Any other path is "unknown": what a client sends never makes a label of its own.
        name = self._operations.get(path, UNKNOWN)
        child = self._children.get((name, status, code))
        if child is None:
            child = self._child(name, status, code)
        child.inc()
        self._timers[name].observe(seconds)
        if code == 13:
            self.rejections.inc()

    def _child(self, name: str, status: int, code: int) -> Counter:
        child = self.requests.labels(name, str(status), str(code))
        self._children[name, status, code] = child
        return child

    # Webhooks (told by the worker's deliverer, from its own thread) ---------------------------

    def webhook_result(self, result: str) -> None:
        """Count one delivery attempt's result (see :class:`pkgcat.webhooks.delivery.Watch`)."""
        self.webhook_deliveries.labels(result).inc()
        if result == "failed":
            self.webhook_retries.inc()

    def webhook_levels(self, disabled: int, stored: int, pending: int) -> None:
        """The endpoints disabled and the outbox's size, as the deliverer last read them."""
        self.webhook_disabled.set(disabled)
        self.webhook_outbox.labels("stored").set(stored)
        self.webhook_outbox.labels("pending").set(pending)

    # The sampler --------------------------------------------------------------------------------

    def sample(self) -> None:
        """Copy what the caches, the counter and the pool hold now into the metrics."""
        for name, cache in self._caches.items():
            hits, misses = self._seen.get(name, (0, 0))
            if cache.hits > hits:
                self.cache_hits.labels(name).inc(cache.hits - hits)
            if cache.misses > misses:
                self.cache_misses.labels(name).inc(cache.misses - misses)
            self._seen[name] = (cache.hits, cache.misses)
        self.pending.set(self._storage.counter.pending_counts)
        use = self._storage.pool_use()
        if use is not None:
            self.pool.labels("in_use").set(use.in_use)
            self.pool.labels("idle").set(use.size - use.in_use)
            self.pool_max.set(use.max_size)

    async def _sample_forever(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # a metric must never take the worker down
                log.exception("sampling the metrics failed")
            await asyncio.sleep(SAMPLE_INTERVAL)

    def start(self) -> None:
        """Start this worker's sampler (on its event loop)."""
        if self._sampler is None:
            self._sampler = asyncio.get_running_loop().create_task(self._sample_forever())

    async def stop(self) -> None:
        """Stop the sampler; a worker that stops takes its gauges out of the sums."""
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
            self._sampler = None
        self.sample()
        if self._directory is not None:
            _mark_dead(os.getpid(), self._directory)

    # The scrape ---------------------------------------------------------------------------------

    def allows(self, authorization: str | None) -> bool:
        """Whether a scrape with this ``Authorization`` header may read the metrics."""
        if self._token is None:
            return True
        scheme, _, presented = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), self._token
        )

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format: every worker's, under ``pkgcat serve``."""
        self.sample()
        if self._directory is None:
            return generate_latest(self._registry)
        self._forget_dead_workers()
        registry = CollectorRegistry()
        registry.register(_WorkersFiles(self._directory))
        return generate_latest(registry)

    def _forget_dead_workers(self) -> None:
        """Drop the gauges of workers that died without stopping (killed, crashed)."""
        assert self._directory is not None
        for path in glob.glob(os.path.join(self._directory, "gauge_live*.db")):
            found = _LIVE_GAUGE_FILE.search(path)
            if found is not None and not _alive(int(found.group(1))):
                _mark_dead(int(found.group(1)), self._directory)


class _WorkersFiles(Collector):
    """Every worker's metric files, summed as prometheus_client's multiprocess collector does,
    without the files a starting worker has created and not yet written (empty for a moment:
    read then, they had failed the whole scrape with a 500)."""

    def __init__(self, directory: str) -> None:
        self._directory = directory

    def collect(self) -> Iterable[Metric]:
        files = [
            path for path in glob.glob(os.path.join(self._directory, "*.db")) if _written(path)
        ]
        merged: Iterable[Metric] = multiprocess.MultiProcessCollector.merge(files, accumulate=True)  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated
        return merged


def _written(path: str) -> bool:
    """Whether a metric file holds at least its header (its used size, 8 bytes)."""
    try:
        return os.path.getsize(path) >= 8
    except OSError:  # gone meanwhile: its worker was marked dead
        return False


def _mark_dead(pid: int, directory: str) -> None:
    """Remove the files of ``pid``'s live gauges, so the sums leave it out."""
    multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user's process
    return True
