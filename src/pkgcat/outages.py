"""One log line per incident, not per request: a service that fails for a while.

While a backend is down, every request that needs it fails the same way; a line (let
alone a trace) for each said nothing new and buried the log: about 1,300 traces in 30 s on
one host, for downloads while PostgreSQL was cut. An :class:`Outage` logs a warning when
the failures start, one more each :data:`EVERY` seconds while they go on (with how many
there were since), and one line when the service works again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

EVERY = 60.0
"""Seconds between two warnings of one outage that goes on."""


class Outage:
    """The state of one service as the requests that need it see it, and its log lines."""

    def __init__(
        self,
        what: str,
        back: str,
        log: logging.Logger,
        *,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``what``: what fails, as the warnings name it (``downloads cannot be counted``);
        ``back``: what the line at its end says (``downloads are counted again``)."""
        self._what = what
        self._back = back
        self._log = log
        self._every = every
        self._clock = clock
        self._since: float | None = None
        self._told = 0.0
        self._failures = 0
        self._untold = 0

    @property
    def failing(self) -> bool:
        return self._since is not None

    def failed(self, reason: str) -> None:
        """One more request failed (``reason``: the error's class or a short message, never a
        trace): a warning if it is the first, or if the last one is :attr:`every` seconds old."""
        now = self._clock()
        self._failures += 1
        if self._since is None:
            self._since, self._told, self._untold = now, now, 0
            self._log.warning("%s: %s; answered 503 until it works again", self._what, reason)
            return
        self._untold += 1
        if now - self._told >= self._every:
            self._log.warning(
                "%s, still: %s; %d more answered 503 in the last %.0f s",
                self._what,
                reason,
                self._untold,
                now - self._told,
            )
            self._told, self._untold = now, 0

    def worked(self) -> None:
        """A request got through: one line if it ends an outage."""
        if self._since is None:
            return
        self._log.info(
            "%s, after %.0f s; %d answered 503 meanwhile",
            self._back,
            self._clock() - self._since,
            self._failures,
        )
        self._since, self._failures, self._untold = None, 0, 0
