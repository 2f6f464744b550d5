"""The per-application rate limit in one process's memory: a fixed window per application.

The same decisions as :class:`pkgcat.storage.redis.limiter.RedisLimiter`: ``N/hour``
(read by the maintained ``limits`` library's parser) admits N requests per
application in a window that opens with the application's first request and
lasts an hour; a request is allowed while the window's count, this one
included, is at most N; ``RateLimit-Reset`` is the time left in the window.

Why not ``limits``' own memory storage, as before: its asyncio fixed window
takes two passes through its storage and locks per request (``hit``, then
``get_window_stats``) and starts a timer thread for expiries every few
milliseconds under load; it cost 7 us of the 30 us a details request spends
in pkgcat (docs/benchmarks.md). With no other process to agree with, a window
is two numbers in a dict, read and updated in well under a microsecond.

The counts are this process's own: with several workers or hosts, set
``PKGCAT_REDIS_URL`` (:mod:`pkgcat.storage.redis.limiter`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from limits import parse

from pkgcat.domain import RateDecision

PRUNE_EVERY = 10_000
"""Windows held before the ended ones are dropped (an application's next request opens a new one)."""


class WindowLimiter:
    """:class:`~pkgcat.storage.interfaces.RateLimiter` in one process's memory.

    ``clock`` (seconds, monotonic) is for tests that move time instead of waiting.
    """

    def __init__(self, rate_limit: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        item = parse(rate_limit)
        self._amount = int(item.amount)
        self._window = float(item.get_expiry())
        self._whole_window = int(item.get_expiry())
        self._clock = clock
        # application id (or other key) -> [when its window ends, requests counted in it]
        self._windows: dict[int | str, list[float]] = {}

    @property
    def limit(self) -> int:
        return self._amount

    @property
    def window(self) -> int:
        """Seconds a window lasts."""
        return self._whole_window

    async def hit(self, application_id: int | str) -> RateDecision:
        """Count one hit of ``application_id`` (any key: the auth throttle counts addresses)."""
        now = self._clock()
        window = self._windows.get(application_id)
        if window is None or now >= window[0]:
            if len(self._windows) >= PRUNE_EVERY:
                self._prune(now)
            window = self._windows[application_id] = [now + self._window, 0.0]
        window[1] += 1
        count = int(window[1])
        return RateDecision(
            count <= self._amount,
            self._amount,
            max(0, self._amount - count),
            # Clamped: window end minus now can round to a hair over the window.
            max(1, min(self._whole_window, math.ceil(window[0] - now))),
            self._whole_window,
        )

    def spent(self, key: int | str) -> RateDecision | None:
        """The refusal ``key``'s next hit would get, or ``None`` while its window has room:
        a look that spends nothing and opens no window (public keys' devices, which are
        looked at before their key is spent: :mod:`pkgcat.storage.public_limits`)."""
        now = self._clock()
        window = self._windows.get(key)
        if window is None or now >= window[0] or window[1] < self._amount:
            return None
        left = max(1, min(self._whole_window, math.ceil(window[0] - now)))
        return RateDecision(False, self._amount, 0, left, self._whole_window)

    def _prune(self, now: float) -> None:
        self._windows = {app: w for app, w in self._windows.items() if now < w[0]}

    async def ready(self) -> None:
        """Always: the counts live in this process."""

    async def close(self) -> None:
        """Nothing to release: the counts live in this process."""
