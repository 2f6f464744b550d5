"""The client's core, written without I/O: one request, retry and reading logic for both clients.

An operation is an *exchange*, a generator that yields what to do next (send a request, or
sleep so many seconds) and receives what happened (the response, or the transport's error);
it returns the operation's result or raises its error. A walk over pages is a generator of
exchanges, each sent the page that the previous one returned. ``Client`` drives both with
a blocking ``httpx.Client`` and its ``sleep``, ``AsyncClient`` with an ``httpx.AsyncClient``
and an awaitable ``sleep`` (:mod:`pkgcat.client._client`); the operations' methods of both
are generated (:mod:`pkgcat.client._methods`). So the retry policy, the key's placement,
idempotency and the reading of answers exist once.
"""

from __future__ import annotations

import json
import os
import random
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import date, tzinfo
from pathlib import Path
from typing import Literal, Protocol, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx

from pkgcat import __version__
from pkgcat.client._errors import (
    APIConnectionError,
    PkgcatError,
    RateLimitError,
    RequestInProgressError,
    ServerError,
    error_from_response,
)
from pkgcat.client._models import BuyersCursorPage, BuyersPage, read_buyers_any
from pkgcat.client._shapes import MalformedResponse, answer

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
UPLOAD_CHUNK = 256 * 1024
"""Bytes sent at a time by an upload (what a progress callback hears of)."""

_KEY_CHARACTERS = re.compile(r"[\x21-\x7e]+")

# Failures where the request may not have reached the server, or its answer was lost.
# An unsupported scheme or a broken proxy setting will not fix itself: those are not retried.
_RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

Read = Callable[[object, tzinfo], T]
"""How an operation reads its answer's ``response``, given the client's zone."""


class CursorPage(Protocol):
    @property
    def has_more(self) -> bool: ...
    @property
    def cursor(self) -> str | None: ...


P = TypeVar("P", bound=CursorPage)
Page = TypeVar("Page")


@dataclass(frozen=True, slots=True)
class Get:
    """A step: send this GET."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Post:
    """A step: send this POST with ``content`` as its body, telling ``progress`` of each
    chunk sent (the blocking client only)."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]
    content: bytes
    progress: Callable[[int], None] | None = None


Step = Get | Post | float
"""What an exchange asks its driver: a request to send, or seconds to sleep."""
Outcome = httpx.Response | httpx.TransportError | None
"""What the driver hands back: the response, the transport's error, or nothing after a sleep."""
Exchange = Generator[Step, Outcome, T]
Walk = Generator[Exchange[Page], Page, None]
"""The pages of a walk: each exchange is sent back the page it returned, for the next."""


def pieces(content: bytes, progress: Callable[[int], None] | None) -> Iterator[bytes]:
    """``content`` in chunks, telling ``progress`` of each chunk's size as it goes."""
    for start in range(0, len(content), UPLOAD_CHUNK):
        piece = content[start : start + UPLOAD_CHUNK]
        yield piece
        if progress is not None:
            progress(len(piece))


def deb_bytes(deb: str | os.PathLike[str] | bytes) -> bytes:
    """The file's bytes: given as they are, or read from the path."""
    if isinstance(deb, bytes):
        return deb
    return Path(deb).read_bytes()


def given(**values: str | int | bool | date | None) -> dict[str, str]:
    """Query parameters of the values given: flags as 1/0, days as YYYY-MM-DD, ``None`` left out."""
    params: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[name] = "1" if value else "0"
        elif isinstance(value, date):
            params[name] = value.isoformat()
        else:
            params[name] = str(value)
    return params


def resume(walk: Walk[Page], page: Page) -> Exchange[Page] | None:
    """The walk's next exchange after ``page``, or ``None`` when the walk is over."""
    try:
        return walk.send(page)
    except StopIteration:
        return None


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


def _idempotency(given: str | None) -> str:
    """The ``Idempotency-Key`` of a write: the one given, or a new random one."""
    key = given or f"pkgcat-client-{uuid.uuid4()}"
    if not _KEY_CHARACTERS.fullmatch(key) or len(key) > 255:
        raise ValueError("idempotency_key: 1 to 255 printable ASCII characters, no space")
    return key


class Core:
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

    # --- the kinds of operation, as exchanges --------------------------------------------

    def get(self, path: str, params: dict[str, str], read: Read[T]) -> Exchange[T]:
        """A read: GET with the parameters in the query."""
        return self._exchange(path, params, read)

    def post_fields(
        self, path: str, fields: dict[str, object], idempotency_key: str | None, read: Read[T]
    ) -> Exchange[T]:
        """A write of fields: the ones given (not None) as a JSON object; safe to retry as
        :meth:`post_file` is."""
        body = json.dumps({name: v for name, v in fields.items() if v is not None}).encode()
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": _idempotency(idempotency_key),
        }
        return self._exchange(path, {}, read, body=body, extra=headers)

    def post_file(
        self,
        path: str,
        media_type: str,
        content: bytes,
        idempotency_key: str | None,
        read: Read[T],
        progress: Callable[[int], None] | None = None,
    ) -> Exchange[T]:
        """A write of a file as the body; every attempt carries the same ``Idempotency-Key``
        (one made here when none is given), so a retry after a lost answer writes nothing twice."""
        headers = {"Content-Type": media_type, "Idempotency-Key": _idempotency(idempotency_key)}
        return self._exchange(path, {}, read, body=content, extra=headers, progress=progress)

    # --- walks over pages ----------------------------------------------------------------

    @staticmethod
    def follow(fetch: Callable[[str | None], Exchange[P]]) -> Walk[P]:
        """Pages from the first (no cursor), following cursors until ``has_more`` is false."""
        page = yield fetch(None)
        while page.has_more and page.cursor is not None:
            page = yield fetch(page.cursor)

    def buyers_pages(
        self, path: str, package_id: str, page_size: int
    ) -> Walk[BuyersCursorPage | BuyersPage]:
        """Every page of a package's buyers: in cursor mode, or by page numbers from a server
        that answers the first page without cursors (before API 1.1)."""
        limit = str(page_size)
        first = yield self.get(
            path, {"package": package_id, "limit": limit, "cursor": ""}, read_buyers_any
        )
        if isinstance(first, BuyersPage):
            page, number = first, 1
            # A short (or empty) page ends the walk; ``limit`` is what the server applied.
            while page.buyers and len(page.buyers) >= page.limit:
                number += 1
                params = {"package": package_id, "limit": limit, "page": str(number)}
                sent = yield self.get(path, params, answer(BuyersPage))
                assert isinstance(sent, BuyersPage)
                page = sent
            return
        cursor = first.cursor if first.has_more else None
        while cursor is not None:
            params = {"package": package_id, "limit": limit, "cursor": cursor}
            sent = yield self.get(path, params, answer(BuyersCursorPage))
            assert isinstance(sent, BuyersCursorPage)
            cursor = sent.cursor if sent.has_more else None

    # --- one operation: send, read, maybe retry ------------------------------------------

    def _exchange(
        self,
        path: str,
        params: dict[str, str],
        read: Read[T],
        *,
        body: bytes | None = None,
        extra: dict[str, str] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Exchange[T]:
        headers = {"User-Agent": f"pkgcat-client/{__version__}", "Accept": "application/json"}
        headers |= extra or {}
        if self.key_in == "header":
            # The header keeps the key out of access logs of proxies and servers.
            headers["Authorization"] = f"Bearer {self._key}"
        else:
            params = params | {"secret_key": self._key}
        attempt = 0
        step: Get | Post = (
            Get(path, params, headers)
            if body is None
            else Post(path, params, headers, body, progress)
        )
        while True:
            outcome = yield step
            try:
                return self._settle(outcome, read)
            except PkgcatError as error:
                wait = self._wait(error, attempt)
                if wait is None:
                    raise
            attempt += 1
            yield wait

    def _settle(self, outcome: Outcome, read: Read[T]) -> T:
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

        Retried: 429 and code 16 (after ``Retry-After`` when given), 5xx and code 15, and
        connections that failed or timed out. Never any other 4xx: asking again
        would get the same answer.
        """
        if attempt >= self.max_retries:
            return None
        if isinstance(error, (RateLimitError, RequestInProgressError)):
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


class Blocking(ABC):
    """What the generated methods of ``Client`` stand on: its core, and its driver."""

    _core: Core

    @abstractmethod
    def _run(self, exchange: Exchange[T]) -> T:
        """The exchange's result, its requests sent and its waits slept."""

    def _pages(self, walk: Walk[Page]) -> Iterator[Page]:
        """The walk's pages, each fetched when the one before has been taken."""
        exchange: Exchange[Page] | None = next(walk)
        while exchange is not None:
            page = self._run(exchange)
            yield page
            exchange = resume(walk, page)


class Awaiting(ABC):
    """What the generated methods of ``AsyncClient`` stand on: its core, and its driver."""

    _core: Core

    @abstractmethod
    async def _run(self, exchange: Exchange[T]) -> T:
        """The exchange's result, its requests sent and its waits slept."""

    async def _pages(self, walk: Walk[Page]) -> AsyncIterator[Page]:
        """The walk's pages, each fetched when the one before has been taken."""
        exchange: Exchange[Page] | None = next(walk)
        while exchange is not None:
            page = await self._run(exchange)
            yield page
            exchange = resume(walk, page)
