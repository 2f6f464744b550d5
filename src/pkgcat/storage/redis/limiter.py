"""The per-application rate limit on Redis, exact across processes and hosts.

Semantics are those of :class:`pkgcat.storage.limiter.WindowLimiter`: a fixed
window per application opens with its first request and lasts the limit's
period; a request is allowed while the window's count, this request included,
is at most the limit. As in ``limits``, refused requests increment the counter
too; that changes no decision, since the window ends a fixed time after it opened.

Design, and why:

- **One atomic Lua script per application and batch.** INCRBY the number of
  hits, then PEXPIRE when the counter has no TTL (its first hit, or a key
  that somehow lost its TTL and would otherwise never reset), then PTTL:
  Redis runs the script without interleaving, so many workers on many hosts
  share one exact count and one window, with no read-modify-write race
  between them. The n hits of one application in a batch take the n counts
  that end at the script's answer, in the order they arrived, exactly as n
  scripts of one hit each would have handed them out.
- **Group commit of the round trips.** A network round trip to Redis costs
  more than a whole request served from SQLite, so it must be shared: the
  first hit of an event-loop turn opens a batch and schedules its flush with
  ``loop.call_soon``; every hit of the same turn joins it; the flush sends
  all of them as ONE non-transactional pipeline of script calls and each
  caller takes its own decision from the replies. One batch is in flight at
  a time: hits arriving meanwhile wait and leave together when it returns,
  so under load a pipeline carries as many hits as arrived during the last
  round trip instead of one small pipeline per turn (each pipeline costs the
  worker more CPU than the requests it carries). The calls travel on one
  connection the limiter keeps, a redis-py connection driven directly (all
  calls written, then the replies read in order) rather than through
  redis-py's ``Pipeline``, whose checkout, retry and bookkeeping cost as much
  again as the round trip: 136 to 142 us of the worker's CPU a round trip
  against 255 to 297 us (docs/benchmarks.md). Replies are parsed by
  hiredis (installed with redis-py's ``hiredis`` extra): its pure-Python
  parser cost more than the rest of a request. Each caller awaits its own
  future, so one caller going away does not cancel the others'.
- **EVALSHA, with EVAL on NOSCRIPT.** The script travels by its SHA1; after a
  Redis restart or SCRIPT FLUSH the calls that met NOSCRIPT (and only those:
  the others already counted) are sent again with the script's text, which
  also puts it back in Redis' cache. redis-py's ``register_script`` is not
  used because in a pipeline it adds a SCRIPT EXISTS round trip to every batch.
- **No client-side retries of a batch.** A retried pipeline whose first attempt
  reached Redis would count its requests twice, and retries lengthen the wait on
  a dead server. Connect and socket timeouts are short for the same reason.
- **A PING retried once, on a fresh connection; never a batch.** A connection left
  idle through an outage may have been forgotten by the server without a word
  reaching us (its host went down, a failover, a NAT's state lost): it looks open,
  and fails with a reset on its first use once Redis is back. The readiness PING,
  and the PING the batches' connection sends first when it has been idle for
  :data:`IDLE_CHECK` (redis-py's health check), are sent again once on a new
  connection (redis-py's ``Retry`` drops the lost one first). So once Redis
  answers, ``/readyz`` says ready and the first batch is counted, with no warning.
  Only a ``ConnectionError`` is retried, and only a PING (it counts nothing); a
  timeout is not, so a silent server costs one timeout as before.

Failure policy: **fail open.** When Redis is unreachable, slow or answers
with an error, the request is allowed, with the full limit as remaining and
the whole window as reset. Usage is still counted durably by the database, so
nothing is lost; the limit is simply not enforced while Redis is down, which
is preferred to refusing every request of every application because a cache
failed. One warning is logged per outage (not one per request) and an info
line when Redis answers again. After a failure Redis is left alone for
``retry_after_failure`` seconds: requests in that time are allowed without
any network call, so an outage costs neither latency nor a storm of connects.
Log lines name the server without its credentials.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from limits import parse
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from pkgcat.domain import RateDecision
from pkgcat.loops import RunningLoop

log = logging.getLogger("pkgcat.storage.redis")

PING_RETRY = Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))
"""The client's commands (the readiness PING): asked again once, at once, on a fresh
connection when the one they took was lost (redis-py disconnects it before the retry)."""
IDLE_CHECK = 1.0
"""Seconds the batches' connection may stay idle before the next batch PINGs on it first
(redis-py's ``health_check_interval``, the PING retried as :data:`PING_RETRY`): a busy
worker's batches follow one another closer than that and pay nothing more; a quiet one's
first batch after a pause pays one round trip, and never meets a connection lost meanwhile."""

# KEYS[1]: one application's counter; ARGV[1]: the window in milliseconds; ARGV[2]: hits.
# Returns {count in the window including these hits, milliseconds left in the window}.
_HIT_SCRIPT = """
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
    left = tonumber(ARGV[1])
end
return {count, left}
"""
# Redis names a cached script by the SHA1 of its text; not a security use.
_HIT_SHA = hashlib.sha1(_HIT_SCRIPT.encode(), usedforsecurity=False).hexdigest()


class RedisLimiter:
    """:class:`~pkgcat.storage.interfaces.RateLimiter` on Redis (see the module docstring).

    ``client`` replaces the client built from ``url``. Either way its settings make the
    connection the batches travel on, it answers :meth:`ready`, and the limiter owns it:
    :meth:`close` closes both (the batches' connection with the limiter's own retry and
    ``idle_check``, :data:`IDLE_CHECK`). One limiter serves one event loop, like the
    connections it holds.
    """

    def __init__(
        self,
        url: str,
        rate_limit: str,
        namespace: str = "pkgcat",
        *,
        kind: str = "ratelimit",
        limits: str = "rate limits",
        timeout: float = 0.25,
        retry_after_failure: float = 1.0,
        idle_check: float = IDLE_CHECK,
        client: Redis | None = None,
    ) -> None:
        item = parse(rate_limit)
        self._amount = int(item.amount)
        self._window = int(item.get_expiry())
        self._window_ms = self._window * 1000
        self._open = RateDecision(
            allowed=True,
            limit=self._amount,
            remaining=self._amount,
            reset_after=self._window,
            window=self._window,
        )
        self._prefix = f"{namespace}:{kind}:"
        self._limits = limits  # what the outage lines say is (not) enforced
        self._retry_after_failure = retry_after_failure
        self._idle_check = idle_check
        self._server = _without_credentials(url)
        if client is None:
            client = Redis.from_url(
                url,
                socket_connect_timeout=timeout,
                socket_timeout=timeout,
                retry=PING_RETRY,
            )
        self._redis = client
        self._connection: AbstractConnection | None = None
        password = client.connection_pool.connection_kwargs.get("password")
        self._password = password if isinstance(password, str) and password else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = RunningLoop()
        # The batch of the current turn: each hit's application and the future of its decision.
        self._batch: list[tuple[int | str, asyncio.Future[RateDecision]]] = []
        self._in_flight: asyncio.Task[None] | None = None
        self._resting_until = float("-inf")
        self._failing = False

    @property
    def limit(self) -> int:
        return self._amount

    @property
    def window(self) -> int:
        """Seconds a window lasts."""
        return self._window

    async def hit(self, application_id: int | str) -> RateDecision:
        loop = self._running()
        if loop.time() < self._resting_until:
            return self._open  # Redis failed moments ago: do not wait on it again yet
        if loop is not self._loop:
            if self._loop is not None:
                raise RuntimeError("one RedisLimiter serves one event loop; build one per loop")
            self._loop = loop
        decision: asyncio.Future[RateDecision] = loop.create_future()
        self._batch.append((application_id, decision))
        if len(self._batch) == 1 and self._in_flight is None:
            # Runs after the callbacks already queued: the other hits of this turn join in.
            loop.call_soon(self._flush)
        # A caller going away cancels only its own future: the batch goes on for the others.
        return await decision

    def _flush(self) -> None:
        """Send the waiting batch; hits arriving while it is in flight form the next one."""
        if not self._batch or self._in_flight is not None:
            return
        batch, self._batch = self._batch, []
        assert self._loop is not None
        if self._loop.time() < self._resting_until:
            # A batch in flight failed during this turn: this one fails open at once too.
            self._decide(batch, [self._open] * len(batch))
            return
        # Held until it ends (the loop keeps weak references to tasks).
        self._in_flight = self._loop.create_task(self._send(batch))

    @staticmethod
    def _decide(
        batch: list[tuple[int | str, asyncio.Future[RateDecision]]], decisions: list[RateDecision]
    ) -> None:
        for (_, waiter), decision in zip(batch, decisions, strict=True):
            if not waiter.done():  # cancelled when its request went away
                waiter.set_result(decision)

    async def _send(self, batch: list[tuple[int | str, asyncio.Future[RateDecision]]]) -> None:
        # Every path resolves the futures with decisions, never an exception: the
        # callers must never see a Redis failure.
        decisions = [self._open] * len(batch)
        hits = Counter(application_id for application_id, _ in batch)  # in first-hit order
        try:
            replies = await self._run(
                [(f"{self._prefix}{application_id}", n) for application_id, n in hits.items()]
            )
            # Each application's hits take the counts that end at its reply, in order.
            first = {
                application_id: int(reply[0]) - hits[application_id] + 1
                for application_id, reply in zip(hits, replies, strict=True)
            }
            left = {
                application_id: int(reply[1])
                for application_id, reply in zip(hits, replies, strict=True)
            }
            decisions = []
            for application_id, _ in batch:
                decisions.append(self._decision(first[application_id], left[application_id]))
                first[application_id] += 1
        except Exception as error:
            self._failed(error)
        else:
            self._answered()
        finally:
            self._decide(batch, decisions)
            self._in_flight = None
            if self._batch:
                self._flush()

    async def _run(self, keys: list[tuple[str, int]]) -> list[Any]:
        """The script's replies for (key, hits), in one round trip unless Redis lost the script."""
        replies = await self._pipeline(keys, by_sha=True)
        lost = [n for n, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if lost:
            # Those calls never ran; EVAL runs them and caches the script for the next batches.
            again = await self._pipeline([keys[n] for n in lost], by_sha=False)
            for n, reply in zip(lost, again, strict=True):
                replies[n] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply  # out of memory, a foreign key of another type...: fail open
        return replies

    async def _pipeline(self, keys: list[tuple[str, int]], *, by_sha: bool) -> list[Any]:
        """The calls for (key, hits) sent together on the limiter's own connection, then
        their replies read in order; a call's error comes back in its place.

        Not redis-py's ``Pipeline``: its connection checkout, retry wrapper and bookkeeping
        cost as much again as the round trip (docs/benchmarks.md). The connection is
        redis-py's, so every address form, TLS, the login and the database work as for
        the client.
        """
        connection = self._connection
        if connection is None:  # built again after a failure, from the settings as they are
            pool = self._redis.connection_pool  # the client's settings, not its pool
            # Only the PING of a connection idle past the check is retried, never a batch.
            settings = pool.connection_kwargs | {
                "retry": PING_RETRY,  # redis-py copies it
                "health_check_interval": self._idle_check,
            }
            connection = self._connection = pool.connection_class(**settings)
        script = (b"EVALSHA", _HIT_SHA) if by_sha else (b"EVAL", _HIT_SCRIPT)
        calls = [(*script, 1, key, self._window_ms, hits) for key, hits in keys]
        try:
            if connection.is_connected and await connection.can_read():
                # Closed by the server while idle (its timeout, a proxy) or holding bytes
                # nobody asked for: connected afresh by the send, as the pool would.
                await connection.disconnect(nowait=True)
            # After IDLE_CHECK idle, a PING first: a lost connection is replaced before the batch.
            await connection.send_packed_command(connection.pack_commands(calls))
            replies: list[Any] = []
            for _ in calls:
                try:
                    replies.append(await connection.read_response())
                except ResponseError as error:  # this call's own error, read whole: in step
                    replies.append(error)
        except BaseException:
            # A timeout, a lost connection, a cancellation: redis-py has dropped the
            # connection, so no reply left unread can answer the next batch.
            self._connection = None
            raise
        return replies

    def _decision(self, count: int, left_ms: int) -> RateDecision:
        """The decision for the hit that took ``count`` in a window with ``left_ms`` to run."""
        return RateDecision(
            allowed=count <= self._amount,
            limit=self._amount,
            remaining=max(0, self._amount - count),
            reset_after=max(1, math.ceil(left_ms / 1000)),
            window=self._window,
        )

    def _failed(self, error: Exception) -> None:
        assert self._loop is not None
        self._resting_until = self._loop.time() + self._retry_after_failure
        if not self._failing:
            self._failing = True
            log.warning(
                "Redis at %s failed (%s); %s are not enforced until it answers again",
                self._server,
                self._describe(error),
                self._limits,
            )

    def _answered(self) -> None:
        if self._failing:
            self._failing = False
            log.info("Redis at %s answers again; %s are enforced", self._server, self._limits)

    def _describe(self, error: Exception) -> str:
        text = f"{type(error).__name__}: {error}"
        # Error texts should not carry the password, but a log line must never leak it.
        return text.replace(self._password, "***") if self._password else text

    async def ready(self) -> None:
        """One PING, within the limiter's short timeouts; raises when Redis does not answer.

        A connection lost while idle is replaced and the PING asked again once
        (:data:`PING_RETRY`), so a server that is back is never reported down.

        Requests fail open meanwhile (the limit is not enforced), but a server
        that cannot enforce its limit is not ready to take traffic.
        """
        await self._redis.ping()

    async def close(self) -> None:
        # Let the batch of this turn and those in flight finish: their callers are waiting.
        if self._batch:
            # Shielded: cancelling close() must not cancel the hits of requests still waiting.
            waiting = [waiter for _, waiter in self._batch]
            await asyncio.shield(asyncio.gather(*waiting, return_exceptions=True))
        while self._in_flight is not None:
            await asyncio.gather(self._in_flight, return_exceptions=True)
        connection, self._connection = self._connection, None
        try:
            if connection is not None:
                await connection.disconnect(nowait=True)
        finally:
            await self._redis.aclose(close_connection_pool=True)


def _without_credentials(url: str) -> str:
    """The URL's scheme, host, port and path: enough to tell servers apart, no secret."""
    try:
        parts = urlsplit(url)
        address = parts.netloc.rpartition("@")[2]
    except ValueError:
        return "<unparsable URL>"
    return f"{parts.scheme}://{address}{parts.path}"
