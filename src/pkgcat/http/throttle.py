"""Failed authentications, throttled per client address (docs/reliability.md, "Key guessing").

Each request that presents a key the server refuses (code 5) counts one failure against
its client's address, in a fixed window of ``PKGCAT_AUTH_FAILURE_LIMIT`` (``20/minute``:
20 failures a minute). The failure past the allowance, and then every API request from
that address until the window ends, is refused with code 13 (HTTP 429) and
``Retry-After``, before its key is looked at.

Why every request, a valid key's too: a throttle that still answered a valid key would
tell a guesser which guess was right, at the same speed as before. The price is that
clients sharing an address with a guesser (behind one NAT, or behind a proxy pkgcat does
not know as one) wait with it, for one window at most.

Cost: a request that succeeds pays one truth test of a dict (empty unless some address is
refused right now) and, while one is, a dict lookup of its address. Only failures are
counted, by the rate limit's own fixed windows keyed by address: in this process's memory
(:class:`~pkgcat.storage.limiter.WindowLimiter`), or in Redis when ``PKGCAT_REDIS_URL``
is set (:class:`~pkgcat.storage.redis.limiter.RedisLimiter`, under its own key prefix;
:func:`~pkgcat.storage.backends.open_failure_limiter` picks one), so
that every worker and host counts one allowance; there the failures of a moment share one
pipeline, as the rate limit's hits do. A worker learns that an address is refused from
its own failures: with Redis, at the first failure it sees from that address once the
shared allowance is spent. When Redis fails, failures are not counted (fail open, like
the rate limit), and one warning is logged per outage.

The address is the connection's peer, unless the peer is one of ``PKGCAT_TRUSTED_PROXIES``:
then it is the rightmost address of ``X-Forwarded-For`` that is not a trusted proxy (each
proxy appends the address it was connected from, so that entry is the one a client cannot
forge). IPv6 addresses count by their /64 network, which one subscriber usually holds whole.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable
from functools import lru_cache

from starlette.types import Scope

from pkgcat.storage.interfaces import FailureLimiter

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PRUNE_AT = 10_000
"""Refused addresses held before the ones whose refusal ended are dropped."""


class AuthThrottle:
    """Counts failed authentications per client address and says which addresses are refused.

    ``clock`` (seconds, monotonic) is for tests that move time instead of waiting.
    """

    def __init__(
        self,
        limiter: FailureLimiter,
        *,
        proxies: tuple[Network, ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._proxies = proxies
        self._clock = clock
        self._limiter = limiter
        self.allowance = self._limiter.limit
        self.window = self._limiter.window
        """Seconds a window of the allowance lasts."""
        self.refused: dict[str, float] = {}
        """Client to the monotonic time its refusal ends; empty on the usual path."""

    def client(self, scope: Scope) -> str:
        """The client the request counts against: its address, or its IPv6 /64."""
        peer = scope.get("client")
        host: str = peer[0] if peer else ""
        if self._proxies and _within(host, self._proxies):
            forwarded = _forwarded_for(scope)
            if forwarded:
                host = self._first_untrusted(forwarded) or host
        return _bucket(host)

    def _first_untrusted(self, forwarded: str) -> str | None:
        for hop in reversed([hop.strip() for hop in forwarded.split(",")]):
            if hop and not _within(hop, self._proxies):
                return hop
        return None

    def refusal(self, client: str) -> int | None:
        """Seconds ``client`` stays refused, or ``None`` when it is not."""
        ends = self.refused.get(client)
        if ends is None:
            return None
        left = ends - self._clock()
        if left <= 0:
            del self.refused[client]
            return None
        return max(1, math.ceil(left))

    async def failed(self, client: str) -> int | None:
        """Count one failed authentication of ``client``.

        Returns the seconds it is now refused for when this failure went past the
        allowance, else ``None``.
        """
        decision = await self._limiter.hit(client)  # never raises: Redis fails open
        if decision.allowed:
            return None
        left = decision.reset_after
        now = self._clock()
        if len(self.refused) >= PRUNE_AT:
            self.refused = {c: ends for c, ends in self.refused.items() if ends > now}
        self.refused[client] = now + left
        return left

    async def close(self) -> None:
        await self._limiter.close()


def _forwarded_for(scope: Scope) -> str | None:
    values = [bytes(v).decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for"]
    return ",".join(values) if values else None


def _within(host: str, networks: tuple[Network, ...]) -> bool:
    """Whether ``host`` is in one of ``networks``; an IPv4 address written as IPv6 is itself.

    A listener on ``::`` takes IPv4 connections too, and gives their peer as
    ``::ffff:a.b.c.d``: that is the proxy ``a.b.c.d`` of the trusted list.
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in networks)


@lru_cache(maxsize=4096)
def _bucket(host: str) -> str:
    """``host``, or for an IPv6 address its /64 network (an IPv4 one written as IPv6: itself).

    Kept for the last 4,096 addresses: parsing one took about 2 us of each refused
    request's 30, and a guesser refused again and again comes from the same few."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return host
