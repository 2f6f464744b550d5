"""A deliverer's heartbeat: it is alive, and its leases are renewed while it works.

Every third of the lease (``PKGCAT_WEBHOOK_LEASE_SECONDS``), one transaction renews the
deliverer's row and every lease it holds (:func:`pkgcat.storage.webhook_leases.beat`), so
an attempt may take as long as its timeout while the lease stays short: a deliverer
killed outright (``kill -9``, its host lost) stops beating, and its endpoints go to the
others within one lease. Two beats may fail before a lease lapses.

:meth:`Heartbeat.held_until` says until when a lease holds for sure, from this process's
own monotonic clock: a renewal is dated by the database after it was sent, so a lease
renewed by a statement sent at ``t`` holds at least until ``t`` plus the lease. A sender
past that time sends nothing more: another deliverer may hold the endpoint by then.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time

from pkgcat.storage.webhooks import WebhookStore

log = logging.getLogger(__name__)

BEATS_PER_LEASE = 3


class Heartbeat:
    """The heartbeat of the deliverer ``owner``, in a thread of its own from :meth:`start`."""

    def __init__(self, store: WebhookStore, owner: str, *, lease: float, senders: int) -> None:
        self._store = store
        self._owner = owner
        self._lease = lease
        self._senders = senders
        self._beaten = -math.inf
        """When (``time.monotonic()``) the last beat that reached the database was sent."""
        self._failing = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Beat once now (so the first claim counts this deliverer), then in a thread."""
        self.beat()
        self._thread = threading.Thread(target=self._run, name="pkgcat-webhook-beats", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating, once no attempt is under way, and say so: the share goes to others."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._store.leave(self._owner)
        except Exception:  # its row lapses by itself, within a lease
            log.warning("webhook deliverer: could not record its stop; its row lapses by itself")

    def _run(self) -> None:
        while not self._stop.wait(self._lease / BEATS_PER_LEASE):
            self.beat()

    def beat(self) -> None:
        sent = time.monotonic()
        try:
            self._store.beat(
                self._owner, host=socket.gethostname(), pid=os.getpid(),
                senders=self._senders, lease_ms=int(self._lease * 1000),
            )  # fmt: skip
        except Exception as error:  # the database away: the next beat tries again
            if not self._failing:
                log.warning("webhook deliverer: heartbeat failed (%s)", type(error).__name__)
            self._failing = True
            return
        self._beaten, self._failing = sent, False

    def held_until(self, renewed: float) -> float:
        """Until when (monotonic) a lease holds for sure that was renewed by a statement sent
        at ``renewed`` (its claim, the record of a delivery), or by a later beat."""
        return max(renewed, self._beaten) + self._lease
