"""The per-application rate limit, on the maintained ``limits`` library.

A fixed window (``limits``' ``FixedWindowRateLimiter``, its asyncio flavour):
``N/hour`` admits N requests per application in a window that opens with the
application's first request and lasts an hour; ``RateLimit-Reset`` is the
time left in it. The counts live in the storage that
``PKGCAT_RATE_LIMIT_STORAGE`` names: ``memory://`` (one process) by default,
``redis://host:port`` where several workers or machines must share one limit.
"""

from __future__ import annotations

import math
import time

from limits import parse
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string

from pkgcat.domain import RateDecision


class WindowLimiter:
    """:class:`~pkgcat.storage.interfaces.RateLimiter` on a ``limits`` storage."""

    def __init__(
        self, rate_limit: str, storage_uri: str = "memory://", namespace: str = "pkgcat"
    ) -> None:
        self._item = parse(rate_limit)
        # The asyncio flavour of each storage: a Redis round trip never blocks the loop.
        options = {"implementation": "redispy"} if storage_uri.startswith("redis") else {}
        self._limiter = FixedWindowRateLimiter(
            storage_from_string(f"async+{storage_uri}", **options)
        )
        self._namespace = namespace

    @property
    def limit(self) -> int:
        return int(self._item.amount)

    async def hit(self, application_id: int) -> RateDecision:
        key = str(application_id)
        allowed = await self._limiter.hit(self._item, self._namespace, key)
        stats = await self._limiter.get_window_stats(self._item, self._namespace, key)
        reset_after = max(1, math.ceil(stats.reset_time - time.time()))
        return RateDecision(
            allowed=allowed,
            limit=self.limit,
            remaining=max(0, stats.remaining),
            reset_after=reset_after,
        )
