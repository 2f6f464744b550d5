"""The allowances of public keys: one per key, and one per device of each key.

A public key sits inside a tweak, so anyone can take it from the tweak and ask about any
device with it. Its own allowance per key (``PKGCAT_PUBLIC_KEY_LIMIT``) bounds how fast one
key can be used to enumerate devices, whoever holds it; each device's allowance with the key
(``PKGCAT_PUBLIC_DEVICE_LIMIT``) bounds one device, so that a tweak that checks in a loop
spends its own allowance, not its key's (the application's ``PKGCAT_RATE_LIMIT`` is left to
the seller's server and its secret keys).

The order keeps both true and bounds the memory they take: the device's window is looked at
first without spending it (a device past its allowance is refused there, spending nothing of
the key's); then the key's is spent, and only a request the key admits spends the device's,
so windows are made for at most as many devices as the key's allowance admits, however many
made-up devices are asked about.

Fixed windows, as the application's limit keeps them: one per key, one per key and device. In
this process's memory, they are :class:`~pkgcat.storage.limiter.WindowLimiter`'s (two numbers
in a dict, a look and a hit in well under a microsecond); ``limits``' own memory storage
sweeps every window it holds on each hit, which cost 1 ms a check with 20,000 devices' windows
and 7 ms with 100,000 (measured on this project's machine). With ``PKGCAT_REDIS_URL`` they are
kept in Redis by the ``limits`` library (its storage's atomic increment with expiry, under
``<namespace>:public``), so every worker and host shares them.

Redis failing fails open, as the application's limit does: the check is answered as if the
allowances had room, one warning is logged when the failures start and one line when Redis
answers again, and Redis is left alone for a second after a failure.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from limits import RateLimitItem, parse

from pkgcat.domain import RateDecision
from pkgcat.storage.limiter import WindowLimiter

if TYPE_CHECKING:
    from limits.aio.storage import RedisStorage
    from redis.asyncio import ConnectionPool

log = logging.getLogger("pkgcat.storage.public_limits")

Spent = Literal["key", "device"]

REST_AFTER_FAILURE = 1.0
"""Seconds Redis is left alone after it failed: checks meanwhile are answered at once."""


class PublicDecision(NamedTuple):
    """What the allowances said: the decision to report, and whose allowance refused."""

    decision: RateDecision
    spent: Spent | None
    """``None``: admitted."""


class _Windows(Protocol):
    """Where the windows are kept: ``which`` allowance, one window per ``name``."""

    async def spent(self, which: Spent, name: str) -> RateDecision | None:
        """The refusal the next hit would get, without spending anything; ``None``: room."""
        ...

    async def hit(self, which: Spent, name: str) -> RateDecision: ...

    async def ready(self) -> None: ...

    async def close(self) -> None: ...


class _InMemory:
    """The windows of this process (a worker's own, as the application's limit without Redis)."""

    def __init__(self, limits: dict[Spent, str], clock: Callable[[], float]) -> None:
        self._limiters = {
            which: WindowLimiter(limit, clock=clock) for which, limit in limits.items()
        }

    async def spent(self, which: Spent, name: str) -> RateDecision | None:
        return self._limiters[which].spent(name)

    async def hit(self, which: Spent, name: str) -> RateDecision:
        return await self._limiters[which].hit(name)

    async def ready(self) -> None:
        """Always: the windows live in this process."""

    async def close(self) -> None:
        """Nothing to release."""


class _InRedis:
    """The windows in Redis, through ``limits``' storage: every worker and host shares them.

    Its storage is used directly, not through a strategy's ``hit`` and ``get_window_stats``:
    its increment answers the window's count, so a hit and its decision cost two round trips
    (the increment with its expiry, one script; then the time left), not three.
    """

    def __init__(self, limits: dict[Spent, str], url: str, namespace: str, timeout: float) -> None:
        from limits.aio.storage import RedisStorage
        from redis.asyncio import ConnectionPool

        self._items: dict[Spent, RateLimitItem] = {
            which: parse(limit) for which, limit in limits.items()
        }
        # The pool is ours to close; short timeouts, as the application's limiter has.
        self._pool: ConnectionPool = ConnectionPool.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self._storage: RedisStorage = RedisStorage(
            f"async+{url}",
            implementation="redispy",
            key_prefix=f"{namespace}:public",
            connection_pool=self._pool,  # type: ignore[arg-type]  # limits types its options as scalars; redis-py's Redis takes a pool
        )

    async def spent(self, which: Spent, name: str) -> RateDecision | None:
        item = self._items[which]
        key = item.key_for(name)
        if await self._storage.get(key) < item.amount:
            return None
        return _decision(item, 0, await self._storage.get_expiry(key), allowed=False)

    async def hit(self, which: Spent, name: str) -> RateDecision:
        item = self._items[which]
        key = item.key_for(name)
        count = await self._storage.incr(key, item.get_expiry())
        ends = await self._storage.get_expiry(key)
        return _decision(item, item.amount - count, ends, allowed=count <= item.amount)

    async def ready(self) -> None:
        if not await self._storage.check():
            raise ConnectionError("Redis does not answer")

    async def close(self) -> None:
        await self._pool.aclose()


class PublicLimits:
    """The public keys' allowances of one worker (one event loop)."""

    def __init__(
        self,
        key_limit: str,
        device_limit: str,
        *,
        redis_url: str | None = None,
        namespace: str = "pkgcat",
        timeout: float = 0.25,
        rest_after_failure: float = REST_AFTER_FAILURE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock`` (monotonic seconds) is for tests that move time; in Redis, Redis keeps it."""
        limits: dict[Spent, str] = {"key": key_limit, "device": device_limit}
        self._windows: _Windows = (
            _InMemory(limits, clock)
            if redis_url is None
            else _InRedis(limits, redis_url, namespace, timeout)
        )
        self._clock = clock
        self._rest = rest_after_failure
        self._resting_until = float("-inf")
        self._failing = False
        item = parse(key_limit)
        self._open = PublicDecision(
            _decision(item, int(item.amount), time.time() + item.get_expiry(), allowed=True), None
        )

    async def hit(self, key_id: int, udid: str | None) -> PublicDecision:
        """Spend one check of key ``key_id`` for device ``udid`` (``None``: a request that
        names no valid device, which spends the key's allowance alone)."""
        if self._clock() < self._resting_until:
            return self._open
        try:
            found = await self._hit(str(key_id), udid)
        except Exception as error:  # Redis down, slow or refusing: fail open
            self._failed(error)
            return self._open
        if self._failing:
            self._failing = False
            log.info("Redis answers again; the public keys' allowances are enforced")
        return found

    async def _hit(self, key: str, udid: str | None) -> PublicDecision:
        windows = self._windows
        device = None if udid is None else f"{key}:{udid}"
        if device is not None:
            refused = await windows.spent("device", device)
            if refused is not None:  # nothing of the key's allowance spent
                return PublicDecision(refused, "device")
        decision = await windows.hit("key", key)
        if not decision.allowed:
            return PublicDecision(decision, "key")
        if device is None:
            return PublicDecision(decision, None)
        # The device's window: what this client itself may still ask, within the key's.
        decision = await windows.hit("device", device)
        return PublicDecision(decision, None if decision.allowed else "device")

    def _failed(self, error: Exception) -> None:
        self._resting_until = self._clock() + self._rest
        if not self._failing:
            self._failing = True
            log.warning(
                "Redis failed (%s); the public keys' allowances are not enforced until it "
                "answers again",
                type(error).__name__,
            )

    async def ready(self) -> None:
        """Raise when the allowances' store cannot be reached."""
        await self._windows.ready()

    async def close(self) -> None:
        await self._windows.close()


def _decision(item: RateLimitItem, remaining: int, ends: float, *, allowed: bool) -> RateDecision:
    """A decision of ``item``'s window, which ends at ``ends`` (POSIX seconds)."""
    window = int(item.get_expiry())
    return RateDecision(
        allowed=allowed,
        limit=int(item.amount),
        remaining=max(0, remaining),
        reset_after=max(1, min(window, math.ceil(ends - time.time()))),
        window=window,
    )
