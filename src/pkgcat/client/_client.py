"""``Client`` and ``AsyncClient``: one request, retry and response logic, two ways to drive it.

Everything the two clients share lives in :class:`_Core`, written without I/O:
an operation is a generator that yields what to do next (send a GET, or sleep
so many seconds) and receives what happened (the response, or the transport
error). ``Client`` drives it with a blocking ``httpx.Client`` and ``time.sleep``;
``AsyncClient`` with an ``httpx.AsyncClient`` and ``anyio.sleep``. So the
retry policy, the key placement and the reading of answers exist once.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import UTC, tzinfo
from types import TracebackType
from typing import Literal, Self, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio
import httpx

from pkgcat import __version__
from pkgcat.client._errors import (
    APIConnectionError,
    PkgcatError,
    RateLimitError,
    ServerError,
    error_from_response,
)
from pkgcat.client._models import Buyer, BuyersPage, Package, UsageDay
from pkgcat.client._shapes import MalformedResponse, read_buyers_page, read_package, read_usage

T = TypeVar("T")

KeyPlacement = Literal["header", "query"]
"""Where the key travels: ``Authorization: Bearer`` (default) or the ``secret_key`` parameter."""

DEFAULT_TIMEOUT = 10.0
"""Seconds to connect, and then between bytes of the answer."""
DEFAULT_MAX_RETRIES = 3
BACKOFF_BASE = 0.5
"""The first retry waits between half of this and this, in seconds; each next one doubles."""
BACKOFF_CAP = 8.0
MAX_RETRY_AFTER = 60.0
"""A ``Retry-After`` longer than this is not waited for: the error goes to the caller."""

_KEY_CHARACTERS = re.compile(r"[\x21-\x7e]+")

_USAGE = "/1.0/application/usage.json"
_DETAILS = "/1.0/package/details.json"
_BUYERS = "/1.0/package/buyers.json"

# Failures where the request may not have reached the server, or its answer was lost.
# An unsupported scheme or a broken proxy setting will not fix itself: those are not retried.
_RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True, slots=True)
class _Get:
    """A step: send this GET."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]


_Step = _Get | float
"""What an exchange asks its driver: a request to send, or seconds to sleep."""
_Outcome = httpx.Response | httpx.TransportError | None
"""What the driver hands back: the response, the transport's error, or nothing after a sleep."""
_Exchange = Generator[_Step, _Outcome, T]


def _envelope(content: bytes) -> tuple[tuple[int, object] | None, str]:
    """The body's ``(code, response)`` when it is the envelope, else ``None`` and why not."""
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None, "the body is not JSON"
    if not isinstance(body, dict) or "code" not in body:
        return None, "the body is not a {code, response} envelope"
    code = body["code"]
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)  # tolerated: other servers of the family may quote numbers
    if not isinstance(code, int) or isinstance(code, bool):
        return None, f"the envelope's code is {code!r}, not an integer"
    if code == 0 and "response" not in body:
        return None, "the success envelope has no response"
    return (code, body.get("response")), ""


class _Core:
    """Configuration, requests, retries and the reading of answers; no I/O."""

    def __init__(
        self,
        base_url: str,
        secret_key: str,
        *,
        key_in: KeyPlacement,
        tz: tzinfo | str,
        max_retries: int,
    ) -> None:
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL:
            url = httpx.URL()
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url: {base_url!r} is not an http:// or https:// address")
        try:
            zone = ZoneInfo(tz) if isinstance(tz, str) else tz
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"tz: {tz!r} is not an IANA time zone") from None
        if not _KEY_CHARACTERS.fullmatch(secret_key):
            # A header value is ASCII (RFC 9110 5.5); a key never holds spaces or controls.
            raise ValueError("secret_key: empty, or not printable ASCII without spaces")
        if key_in not in ("header", "query"):
            raise ValueError(f"key_in: {key_in!r}; use 'header' or 'query'")
        if max_retries < 0:
            raise ValueError(f"max_retries: {max_retries}; use 0 or more")
        self.base_url = str(url)
        self.key_in: KeyPlacement = key_in
        self.tz: tzinfo = zone
        self.max_retries = max_retries
        self._key = secret_key
        self._jitter = random.random  # spreads clients' retries in time; no secret rides on it

    # --- the three operations, as exchanges --------------------------------------------

    def usage(self, days: int) -> _Exchange[list[UsageDay]]:
        return self._exchange(_USAGE, {"days": str(days)}, read_usage)

    def package(self, package_id: str) -> _Exchange[Package]:
        return self._exchange(_DETAILS, {"package": package_id}, read_package)

    def buyers(self, package_id: str, limit: int, page: int) -> _Exchange[BuyersPage]:
        params = {"package": package_id, "limit": str(limit), "page": str(page)}
        return self._exchange(_BUYERS, params, read_buyers_page)

    @staticmethod
    def is_last_page(page: BuyersPage) -> bool:
        """A short (or empty) page ends the walk; ``limit`` is what the server applied."""
        return not page.buyers or len(page.buyers) < page.limit

    # --- one operation: send, read, maybe retry ------------------------------------------

    def _exchange(
        self, path: str, params: dict[str, str], read: Callable[[object, tzinfo], T]
    ) -> _Exchange[T]:
        headers = {"User-Agent": f"pkgcat-client/{__version__}", "Accept": "application/json"}
        if self.key_in == "header":
            # The header keeps the key out of access logs of proxies and servers.
            headers["Authorization"] = f"Bearer {self._key}"
        else:
            params = params | {"secret_key": self._key}
        attempt = 0
        while True:
            outcome = yield _Get(path, params, headers)
            try:
                return self._settle(outcome, read)
            except PkgcatError as error:
                wait = self._wait(error, attempt)
                if wait is None:
                    raise
            attempt += 1
            yield wait

    def _settle(self, outcome: _Outcome, read: Callable[[object, tzinfo], T]) -> T:
        """The result of a success; raises the :mod:`._errors` error of anything else."""
        if outcome is None:
            raise RuntimeError("the driver sent no outcome for a request")
        if isinstance(outcome, httpx.TransportError):
            raise APIConnectionError(
                f"cannot reach {self.base_url}: {type(outcome).__name__}: {outcome}"
            ) from outcome
        status, headers = outcome.status_code, outcome.headers
        envelope, reason = _envelope(outcome.content)
        if envelope is not None and envelope[0] == 0 and 200 <= status < 300:
            try:
                return read(envelope[1], self.tz)
            except MalformedResponse as malformed:
                raise error_from_response(status, None, headers, reason=str(malformed)) from None
        if envelope is None and 300 <= status < 400 and "location" in headers:
            # Without its query: it may echo the key back when the key travels there.
            where = httpx.URL(headers["location"]).copy_with(query=None, fragment=None)
            reason = f"redirected to {where}; use that address as base_url"
        raise error_from_response(status, envelope, headers, reason=reason)

    def _wait(self, error: PkgcatError, attempt: int) -> float | None:
        """Seconds before the next attempt, or ``None`` when ``error`` goes to the caller.

        Retried: 429 (after ``Retry-After`` when given), 5xx and code 15, and
        connections that failed or timed out. Never any other 4xx: asking again
        would get the same answer.
        """
        if attempt >= self.max_retries:
            return None
        if isinstance(error, RateLimitError):
            if error.retry_after is None:
                return self.backoff(attempt)
            return error.retry_after if error.retry_after <= MAX_RETRY_AFTER else None
        if isinstance(error, ServerError):
            return self.backoff(attempt)
        if isinstance(error, APIConnectionError) and isinstance(
            error.__cause__, _RETRYABLE_TRANSPORT
        ):
            return self.backoff(attempt)
        return None

    def backoff(self, attempt: int) -> float:
        """Exponential, capped, with jitter: between half and all of ``base * 2**attempt``."""
        ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2.0**attempt)
        return ceiling * (0.5 + self._jitter() / 2)


class Client:
    """A blocking client of one server, configured here and nowhere else.

    >>> with Client("https://api.example", key) as client:  # doctest: +SKIP
    ...     days = client.usage(days=7)
    """

    def __init__(
        self,
        base_url: str,
        secret_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx.BaseTransport | None = None,
        key_in: KeyPlacement = "header",
        tz: tzinfo | str = UTC,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``tz`` reads dates sent without an offset (shape B); ``sleep`` waits between retries."""
        self._core = _Core(base_url, secret_key, key_in=key_in, tz=tz, max_retries=max_retries)
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self._core.base_url, timeout=httpx.Timeout(timeout), transport=transport
        )

    @property
    def base_url(self) -> str:
        return self._core.base_url

    def usage(self, days: int = 30) -> list[UsageDay]:
        """Requests per day of the calling application, oldest first (today is last)."""
        return self._run(self._core.usage(days))

    def package(self, package_id: str) -> Package:
        """The record of one package."""
        return self._run(self._core.package(package_id))

    def buyers(self, package_id: str, limit: int = 25, page: int = 1) -> BuyersPage:
        """One page of the buyers of a paid package of the caller's source."""
        return self._run(self._core.buyers(package_id, limit, page))

    def iter_buyers(self, package_id: str, page_size: int = 100) -> Iterator[Buyer]:
        """Every buyer, page after page, until the first short page."""
        number = 1
        while True:
            page = self.buyers(package_id, limit=page_size, page=number)
            yield from page.buyers
            if self._core.is_last_page(page):
                return
            number += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, exchange: _Exchange[T]) -> T:
        outcome: _Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, _Get):
                try:
                    outcome = self._http.get(step.path, params=step.params, headers=step.headers)
                except httpx.TransportError as error:
                    outcome = error
            else:
                self._sleep(step)
                outcome = None


class AsyncClient:
    """The same client for ``async`` code (asyncio or trio, through httpx and anyio)."""

    def __init__(
        self,
        base_url: str,
        secret_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
        key_in: KeyPlacement = "header",
        tz: tzinfo | str = UTC,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        """``tz`` reads dates sent without an offset (shape B); ``sleep`` waits between retries."""
        self._core = _Core(base_url, secret_key, key_in=key_in, tz=tz, max_retries=max_retries)
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=self._core.base_url, timeout=httpx.Timeout(timeout), transport=transport
        )

    @property
    def base_url(self) -> str:
        return self._core.base_url

    async def usage(self, days: int = 30) -> list[UsageDay]:
        """Requests per day of the calling application, oldest first (today is last)."""
        return await self._run(self._core.usage(days))

    async def package(self, package_id: str) -> Package:
        """The record of one package."""
        return await self._run(self._core.package(package_id))

    async def buyers(self, package_id: str, limit: int = 25, page: int = 1) -> BuyersPage:
        """One page of the buyers of a paid package of the caller's source."""
        return await self._run(self._core.buyers(package_id, limit, page))

    async def iter_buyers(self, package_id: str, page_size: int = 100) -> AsyncIterator[Buyer]:
        """Every buyer, page after page, until the first short page (``async for``)."""
        number = 1
        while True:
            page = await self.buyers(package_id, limit=page_size, page=number)
            for buyer in page.buyers:
                yield buyer
            if self._core.is_last_page(page):
                return
            number += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run(self, exchange: _Exchange[T]) -> T:
        outcome: _Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, _Get):
                try:
                    outcome = await self._http.get(
                        step.path, params=step.params, headers=step.headers
                    )
                except httpx.TransportError as error:
                    outcome = error
            else:
                await self._sleep(step)
                outcome = None
