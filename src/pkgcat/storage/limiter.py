"""The per-application rate limit, on the maintained ``limits`` library.

A fixed window (``limits``' ``FixedWindowRateLimiter``): ``N/hour`` admits N
requests per application in a window that opens with the application's first
request and lasts an hour; ``RateLimit-Reset`` is the time left in it. The counts live in the storage that
``PKGCAT_RATE_LIMIT_STORAGE`` names: ``memory://`` (one process) by default,
``redis://host:port`` where several workers or machines must share one limit.
"""

from __future__ import annotations

import math
import time

from limits import parse
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter

from pkgcat.domain import RateDecision


class WindowLimiter:
    """:class:`~pkgcat.storage.interfaces.RateLimiter` on a ``limits`` storage."""

    def __init__(
        self, rate_limit: str, storage_uri: str = "memory://", namespace: str = "pkgcat"
    ) -> None:
        self._item = parse(rate_limit)
        self._limiter = FixedWindowRateLimiter(storage_from_string(storage_uri))
        self._namespace = namespace

    @property
    def limit(self) -> int:
        return int(self._item.amount)

    def hit(self, application_id: int) -> RateDecision:
        allowed = self._limiter.hit(self._item, self._namespace, str(application_id))
        stats = self._limiter.get_window_stats(self._item, self._namespace, str(application_id))
        reset_after = max(1, math.ceil(stats.reset_time - time.time()))
        return RateDecision(
            allowed=allowed,
            limit=self.limit,
            remaining=max(0, stats.remaining),
            reset_after=reset_after,
        )
