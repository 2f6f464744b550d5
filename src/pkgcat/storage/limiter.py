"""The per-application rate limit in process memory, on the maintained ``limits`` library.

A fixed window (``limits``' ``FixedWindowRateLimiter``, its asyncio flavour):
``N/hour`` admits N requests per application in a window that opens with the
application's first request and lasts an hour; ``RateLimit-Reset`` is the
time left in it. The counts are this process's own: with several workers or
hosts, set ``PKGCAT_REDIS_URL`` (:mod:`pkgcat.storage.redis.limiter`).
"""

from __future__ import annotations

import math
import time

from limits import parse
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string

from pkgcat.domain import RateDecision


class WindowLimiter:
    """:class:`~pkgcat.storage.interfaces.RateLimiter` in one process's memory."""

    def __init__(self, rate_limit: str) -> None:
        self._item = parse(rate_limit)
        self._limiter = FixedWindowRateLimiter(storage_from_string("async+memory://"))

    @property
    def limit(self) -> int:
        return int(self._item.amount)

    async def hit(self, application_id: int) -> RateDecision:
        key = str(application_id)
        allowed = await self._limiter.hit(self._item, key)
        stats = await self._limiter.get_window_stats(self._item, key)
        reset_after = max(1, math.ceil(stats.reset_time - time.time()))
        return RateDecision(
            allowed=allowed,
            limit=self.limit,
            remaining=max(0, stats.remaining),
            reset_after=reset_after,
        )

    async def close(self) -> None:
        """Nothing to release: the counts live in this process."""
