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
import os
import random
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, tzinfo
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol, Self, TypeVar, overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio
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
from pkgcat.client._models import (
    Buyer,
    BuyersCursorPage,
    BuyersPage,
    Downloads,
    Ownership,
    Package,
    PackagesPage,
    Sale,
    SalesPage,
    SourcePackage,
    UsageDay,
    read_buyers_any,
)
from pkgcat.client._shapes import MalformedResponse, answer, listed
from pkgcat.client._webhooks import (
    WebhookAttempt,
    WebhookDeliveries,
    WebhookEndpoint,
    WebhookSecret,
    read_attempt,
    read_deleted,
    read_deliveries,
    read_endpoint,
    read_endpoints,
    read_secret,
)

T = TypeVar("T")


class _CursorPage(Protocol):
    @property
    def has_more(self) -> bool: ...
    @property
    def cursor(self) -> str | None: ...


P = TypeVar("P", bound=_CursorPage)

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
_PACKAGES = "/1.0/source/packages.json"
_CHECK = "/1.0/package/check.json"
_SALES = "/1.0/source/sales.json"
_UPLOAD = "/1.0/package/upload.json"
DEB = "application/vnd.debian.binary-package"
UPLOAD_CHUNK = 256 * 1024
"""Bytes sent at a time by an upload (what a progress callback hears of)."""
_DOWNLOADS = "/1.0/package/downloads.json"
WEBHOOK = "/1.0/webhook/{verb}.json"

# Failures where the request may not have reached the server, or its answer was lost.
# An unsupported scheme or a broken proxy setting will not fix itself: those are not retried.
_RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True, slots=True)
class _Get:
    """A step: send this GET."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Post:
    """A step: send this POST with ``content`` as its body."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]
    content: bytes


def _pieces(content: bytes, progress: Callable[[int], None] | None) -> Iterator[bytes]:
    """``content`` in chunks, telling ``progress`` of each chunk's size as it goes."""
    for start in range(0, len(content), UPLOAD_CHUNK):
        piece = content[start : start + UPLOAD_CHUNK]
        yield piece
        if progress is not None:
            progress(len(piece))


def _deb_bytes(deb: str | os.PathLike[str] | bytes) -> bytes:
    """The file's bytes: given as they are, or read from the path."""
    if isinstance(deb, bytes):
        return deb
    return Path(deb).read_bytes()


_Step = _Get | _Post | float
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


def _idempotency(given: str | None) -> str:
    """The ``Idempotency-Key`` of a write: the one given, or a new random one."""
    key = given or f"pkgcat-client-{uuid.uuid4()}"
    if not _KEY_CHARACTERS.fullmatch(key) or len(key) > 255:
        raise ValueError("idempotency_key: 1 to 255 printable ASCII characters, no space")
    return key


def _changes(
    endpoint: str, url: str | None, events: Sequence[str] | None, enabled: bool | None
) -> dict[str, object]:
    return {
        "endpoint": endpoint,
        "url": url,
        "events": None if events is None else list(events),
        "enabled": enabled,
    }


def _given(**values: str | int | bool | date | None) -> dict[str, str]:
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


def _follow(fetch: Callable[[str | None], P], cursor: str | None = None) -> Iterator[P]:
    """Pages from ``cursor`` (the first without), following cursors until ``has_more`` is false."""
    while True:
        page = fetch(cursor)
        yield page
        if not page.has_more or page.cursor is None:
            return
        cursor = page.cursor


async def _afollow(
    fetch: Callable[[str | None], Awaitable[P]], cursor: str | None = None
) -> AsyncIterator[P]:
    """:func:`_follow` for ``async`` code."""
    while True:
        page = await fetch(cursor)
        yield page
        if not page.has_more or page.cursor is None:
            return
        cursor = page.cursor


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

    # --- the operations, as exchanges --------------------------------------------------

    def usage(
        self, days: int | None, start: date | None, end: date | None, by: str | None
    ) -> _Exchange[list[UsageDay]]:
        params = _given(days=days, start=start, end=end, by=by)
        if days is None and start is None and end is None:
            params["days"] = "30"
        return self._exchange(_USAGE, params, listed(UsageDay))

    def package(self, package_id: str) -> _Exchange[Package]:
        return self._exchange(_DETAILS, {"package": package_id}, answer(Package))

    def buyers(self, package_id: str, limit: int, page: int) -> _Exchange[BuyersPage]:
        params = {"package": package_id, "limit": str(limit), "page": str(page)}
        return self._exchange(_BUYERS, params, answer(BuyersPage))

    def buyers_walk(
        self, package_id: str, limit: int, page: int | None, cursor: str
    ) -> _Exchange[BuyersCursorPage]:
        """A page in cursor mode; a ``page`` beside the cursor is sent for the server to refuse."""
        params = _given(package=package_id, limit=limit, page=page, cursor=cursor)
        return self._exchange(_BUYERS, params, answer(BuyersCursorPage))

    def buyers_any(self, package_id: str, limit: int) -> _Exchange[BuyersCursorPage | BuyersPage]:
        """The first page of a walk: in cursor mode, or page 1 from a server without cursors."""
        params = {"package": package_id, "limit": str(limit), "cursor": ""}
        return self._exchange(_BUYERS, params, read_buyers_any)

    def packages(
        self, paid: bool | None, online: bool | None, limit: int, cursor: str | None
    ) -> _Exchange[PackagesPage]:
        params = _given(paid=paid, online=online, limit=limit, cursor=cursor)
        return self._exchange(_PACKAGES, params, answer(PackagesPage))

    def check(
        self,
        package_id: str,
        nickname: str | None,
        account: str | None,
        udid: str | None,
        model: str | None,
    ) -> _Exchange[Ownership]:
        params = _given(
            package=package_id, nickname=nickname, account=account, udid=udid, model=model
        )
        return self._exchange(_CHECK, params, answer(Ownership))

    def downloads(
        self, package_id: str, days: int | None, start: date | None, end: date | None
    ) -> _Exchange[Downloads]:
        params = _given(package=package_id, days=days, start=start, end=end)
        return self._exchange(_DOWNLOADS, params, answer(Downloads))

    def sales(
        self,
        start: date | None,
        end: date | None,
        package_id: str | None,
        status: str | None,
        limit: int,
        cursor: str | None,
    ) -> _Exchange[SalesPage]:
        params = _given(
            start=start, end=end, package=package_id, status=status, limit=limit, cursor=cursor
        )
        return self._exchange(_SALES, params, answer(SalesPage))

    def upload(self, content: bytes, idempotency_key: str | None) -> _Exchange[Package]:
        """POST the .deb; every attempt carries the same ``Idempotency-Key`` (one made here
        when none is given), so a retry after a lost answer publishes nothing twice."""
        headers = {"Content-Type": DEB, "Idempotency-Key": _idempotency(idempotency_key)}
        return self._exchange(_UPLOAD, {}, answer(Package), body=content, extra=headers)

    def webhook_post(
        self,
        verb: str,
        fields: dict[str, object],
        idempotency_key: str | None,
        read: Callable[[object, tzinfo], T],
    ) -> _Exchange[T]:
        """POST ``webhook/<verb>.json`` with the fields given (not None) as JSON; safe to
        retry as an upload is."""
        body = json.dumps({name: v for name, v in fields.items() if v is not None}).encode()
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": _idempotency(idempotency_key),
        }
        return self._exchange(WEBHOOK.format(verb=verb), {}, read, body=body, extra=headers)

    def webhook_get(
        self, verb: str, params: dict[str, str], read: Callable[[object, tzinfo], T]
    ) -> _Exchange[T]:
        return self._exchange(WEBHOOK.format(verb=verb), params, read)

    @staticmethod
    def is_last_page(page: BuyersPage) -> bool:
        """A short (or empty) page ends the walk; ``limit`` is what the server applied."""
        return not page.buyers or len(page.buyers) < page.limit

    # --- one operation: send, read, maybe retry ------------------------------------------

    def _exchange(
        self,
        path: str,
        params: dict[str, str],
        read: Callable[[object, tzinfo], T],
        *,
        body: bytes | None = None,
        extra: dict[str, str] | None = None,
    ) -> _Exchange[T]:
        headers = {"User-Agent": f"pkgcat-client/{__version__}", "Accept": "application/json"}
        headers |= extra or {}
        if self.key_in == "header":
            # The header keeps the key out of access logs of proxies and servers.
            headers["Authorization"] = f"Bearer {self._key}"
        else:
            params = params | {"secret_key": self._key}
        attempt = 0
        step = _Get(path, params, headers) if body is None else _Post(path, params, headers, body)
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
        self._progress: Callable[[int], None] | None = None
        self._http = httpx.Client(
            base_url=self._core.base_url, timeout=httpx.Timeout(timeout), transport=transport
        )

    @property
    def base_url(self) -> str:
        return self._core.base_url

    def usage(
        self,
        days: int | None = None,
        *,
        start: date | None = None,
        end: date | None = None,
        by: Literal["operation"] | None = None,
    ) -> list[UsageDay]:
        """Requests per day of the calling application, oldest first.

        The last ``days`` days and today (30 when nothing is given), or the days from
        ``start`` to ``end``; ``by="operation"`` splits each day by operation.
        """
        return self._run(self._core.usage(days, start, end, by))

    def package(self, package_id: str) -> Package:
        """The record of one package."""
        return self._run(self._core.package(package_id))

    def upload(
        self,
        file: str | os.PathLike[str] | bytes,
        idempotency_key: str | None = None,
        *,
        progress: Callable[[int], None] | None = None,
    ) -> Package:
        """Publish a .deb (a path, or its bytes) to the key's source; its details.

        Needs a key with the ``publish`` scope. Safe to retry: every attempt sends the
        same ``idempotency_key`` (a random one when not given). ``progress`` is called
        with the size of each chunk as it is sent.
        """
        self._progress = progress
        try:
            return self._run(self._core.upload(_deb_bytes(file), idempotency_key))
        finally:
            self._progress = None

    @overload
    def buyers(
        self, package_id: str, limit: int = 25, page: int | None = None, cursor: None = None
    ) -> BuyersPage: ...
    @overload
    def buyers(
        self, package_id: str, limit: int = 25, page: None = None, *, cursor: str
    ) -> BuyersCursorPage: ...
    def buyers(
        self,
        package_id: str,
        limit: int = 25,
        page: int | None = None,
        cursor: str | None = None,
    ) -> BuyersPage | BuyersCursorPage:
        """One page of the buyers of a paid package of the caller's source.

        A numbered page (``page``, 1 by default), or with ``cursor`` a page in cursor
        mode: ``cursor=""`` starts at the newest buyer.
        """
        if cursor is None:
            return self._run(self._core.buyers(package_id, limit, page or 1))
        return self._run(self._core.buyers_walk(package_id, limit, page, cursor))

    def iter_buyers(self, package_id: str, page_size: int = 100) -> Iterator[Buyer]:
        """Every buyer, newest first, following cursors (page numbers on older servers)."""
        first = self._run(self._core.buyers_any(package_id, page_size))
        yield from first.buyers
        if isinstance(first, BuyersPage):
            page, number = first, 1
            while not self._core.is_last_page(page):
                number += 1
                page = self.buyers(package_id, limit=page_size, page=number)
                yield from page.buyers
        elif first.has_more and first.cursor is not None:
            pages = _follow(
                lambda c: self.buyers(package_id, page_size, cursor=c or ""), first.cursor
            )
            for later in pages:
                yield from later.buyers

    def packages(
        self,
        *,
        paid: bool | None = None,
        online: bool | None = None,
        limit: int = 25,
        cursor: str | None = None,
    ) -> PackagesPage:
        """One page of the caller's own packages, by identifier."""
        return self._run(self._core.packages(paid, online, limit, cursor))

    def iter_packages(
        self, *, paid: bool | None = None, online: bool | None = None, page_size: int = 100
    ) -> Iterator[SourcePackage]:
        """Every package of the caller's source, following cursors."""
        for page in _follow(
            lambda c: self.packages(paid=paid, online=online, limit=page_size, cursor=c)
        ):
            yield from page.packages

    def check(
        self,
        package_id: str,
        *,
        nickname: str | None = None,
        account: str | None = None,
        udid: str | None = None,
        model: str | None = None,
    ) -> Ownership:
        """Whether a buyer (by nickname or account) or a device (udid) owns a package."""
        return self._run(self._core.check(package_id, nickname, account, udid, model))

    def sales(
        self,
        *,
        start: date | None = None,
        end: date | None = None,
        package_id: str | None = None,
        status: str | None = None,
        limit: int = 25,
        cursor: str | None = None,
    ) -> SalesPage:
        """One page of the sales ledger, newest first, with the totals of the whole range."""
        return self._run(self._core.sales(start, end, package_id, status, limit, cursor))

    def downloads(
        self,
        package_id: str,
        days: int | None = None,
        *,
        start: date | None = None,
        end: date | None = None,
    ) -> Downloads:
        """Whole downloads of one of the caller's packages per UTC day, and their total.

        The last ``days`` days and today (30 when nothing is given), or ``start`` to ``end``.
        """
        return self._run(self._core.downloads(package_id, days, start, end))

    def sales_pages(
        self,
        *,
        start: date | None = None,
        end: date | None = None,
        package_id: str | None = None,
        status: str | None = None,
        page_size: int = 100,
    ) -> Iterator[SalesPage]:
        """Every page of the sales ledger, following cursors."""
        return _follow(
            lambda c: self.sales(
                start=start,
                end=end,
                package_id=package_id,
                status=status,
                limit=page_size,
                cursor=c,
            )
        )

    def iter_sales(
        self,
        *,
        start: date | None = None,
        end: date | None = None,
        package_id: str | None = None,
        status: str | None = None,
        page_size: int = 100,
    ) -> Iterator[Sale]:
        """Every sale of the range, newest first, following cursors."""
        for page in self.sales_pages(
            start=start, end=end, package_id=package_id, status=status, page_size=page_size
        ):
            yield from page.sales

    # --- webhook endpoints (a key with the webhooks scope) ---------------------------------

    def webhook_create(
        self, url: str, events: Sequence[str], idempotency_key: str | None = None
    ) -> WebhookSecret:
        """Add an endpoint to the key's application; the answer holds its signing secret,
        shown this once (keep it; it is not in the record's repr)."""
        fields: dict[str, object] = {"url": url, "events": list(events)}
        return self._run(self._core.webhook_post("create", fields, idempotency_key, read_secret))

    def webhook_list(self) -> list[WebhookEndpoint]:
        """The application's endpoints, oldest first; disabled ones say why."""
        return self._run(self._core.webhook_get("list", {}, read_endpoints))

    def webhook_update(
        self,
        endpoint: str,
        url: str | None = None,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
        idempotency_key: str | None = None,
    ) -> WebhookEndpoint:
        """Change an endpoint's address, events or whether it is enabled."""
        fields = _changes(endpoint, url, events, enabled)
        return self._run(self._core.webhook_post("update", fields, idempotency_key, read_endpoint))

    def webhook_delete(self, endpoint: str, idempotency_key: str | None = None) -> str:
        """Delete an endpoint and its delivery log; its id."""
        fields: dict[str, object] = {"endpoint": endpoint}
        return self._run(self._core.webhook_post("delete", fields, idempotency_key, read_deleted))

    def webhook_roll_secret(
        self, endpoint: str, idempotency_key: str | None = None
    ) -> WebhookSecret:
        """A new signing secret, shown this once; the current one signs too for a while."""
        fields: dict[str, object] = {"endpoint": endpoint}
        exchange = self._core.webhook_post("roll-secret", fields, idempotency_key, read_secret)
        return self._run(exchange)

    def webhook_redeliver(
        self, endpoint: str, event: str, idempotency_key: str | None = None
    ) -> WebhookAttempt:
        """Send one stored event to the endpoint again, now; the attempt."""
        fields: dict[str, object] = {"endpoint": endpoint, "event": event}
        exchange = self._core.webhook_post("redeliver", fields, idempotency_key, read_attempt)
        return self._run(exchange)

    def webhook_test(
        self, endpoint: str, event_type: str, idempotency_key: str | None = None
    ) -> WebhookAttempt:
        """Send a sample event (marked test) of ``event_type`` to the endpoint now."""
        fields: dict[str, object] = {"endpoint": endpoint, "event_type": event_type}
        return self._run(self._core.webhook_post("test", fields, idempotency_key, read_attempt))

    def webhook_deliveries(
        self, endpoint: str, limit: int = 25, cursor: str | None = None
    ) -> WebhookDeliveries:
        """A page of the endpoint's delivery log, newest first; pass ``cursor`` for the next."""
        params = _given(endpoint=endpoint, limit=limit, cursor=cursor)
        return self._run(self._core.webhook_get("deliveries", params, read_deliveries))

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
            if isinstance(step, _Get | _Post):
                try:
                    if isinstance(step, _Post):
                        outcome = self._http.post(
                            step.path,
                            params=step.params,
                            headers=step.headers | {"Content-Length": str(len(step.content))},
                            content=_pieces(step.content, self._progress),
                        )
                    else:
                        outcome = self._http.get(
                            step.path, params=step.params, headers=step.headers
                        )
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

    async def usage(
        self,
        days: int | None = None,
        *,
        start: date | None = None,
        end: date | None = None,
        by: Literal["operation"] | None = None,
    ) -> list[UsageDay]:
        """Requests per day of the calling application, oldest first (see :meth:`Client.usage`)."""
        return await self._run(self._core.usage(days, start, end, by))

    async def package(self, package_id: str) -> Package:
        """The record of one package."""
        return await self._run(self._core.package(package_id))

    async def upload(
        self, file: str | os.PathLike[str] | bytes, idempotency_key: str | None = None
    ) -> Package:
        """:meth:`Client.upload`, without the progress callback."""
        content = _deb_bytes(file)
        return await self._run(self._core.upload(content, idempotency_key))

    @overload
    async def buyers(
        self, package_id: str, limit: int = 25, page: int | None = None, cursor: None = None
    ) -> BuyersPage: ...
    @overload
    async def buyers(
        self, package_id: str, limit: int = 25, page: None = None, *, cursor: str
    ) -> BuyersCursorPage: ...
    async def buyers(
        self,
        package_id: str,
        limit: int = 25,
        page: int | None = None,
        cursor: str | None = None,
    ) -> BuyersPage | BuyersCursorPage:
        """One page of buyers: numbered, or with ``cursor`` in cursor mode (see :meth:`Client.buyers`)."""
        if cursor is None:
            return await self._run(self._core.buyers(package_id, limit, page or 1))
        return await self._run(self._core.buyers_walk(package_id, limit, page, cursor))

    async def iter_buyers(self, package_id: str, page_size: int = 100) -> AsyncIterator[Buyer]:
        """Every buyer, following cursors (page numbers on older servers; ``async for``)."""
        first = await self._run(self._core.buyers_any(package_id, page_size))
        for buyer in first.buyers:
            yield buyer
        if isinstance(first, BuyersPage):
            page, number = first, 1
            while not self._core.is_last_page(page):
                number += 1
                page = await self.buyers(package_id, limit=page_size, page=number)
                for buyer in page.buyers:
                    yield buyer
        elif first.has_more and first.cursor is not None:
            pages = _afollow(
                lambda c: self.buyers(package_id, page_size, cursor=c or ""), first.cursor
            )
            async for later in pages:
                for buyer in later.buyers:
                    yield buyer

    async def packages(
        self,
        *,
        paid: bool | None = None,
        online: bool | None = None,
        limit: int = 25,
        cursor: str | None = None,
    ) -> PackagesPage:
        """One page of the caller's own packages, by identifier."""
        return await self._run(self._core.packages(paid, online, limit, cursor))

    async def iter_packages(
        self, *, paid: bool | None = None, online: bool | None = None, page_size: int = 100
    ) -> AsyncIterator[SourcePackage]:
        """Every package of the caller's source, following cursors (``async for``)."""
        pages = _afollow(
            lambda c: self.packages(paid=paid, online=online, limit=page_size, cursor=c)
        )
        async for page in pages:
            for package in page.packages:
                yield package

    async def check(
        self,
        package_id: str,
        *,
        nickname: str | None = None,
        account: str | None = None,
        udid: str | None = None,
        model: str | None = None,
    ) -> Ownership:
        """Whether a buyer (by nickname or account) or a device (udid) owns a package."""
        return await self._run(self._core.check(package_id, nickname, account, udid, model))

    async def sales(
        self,
        *,
        start: date | None = None,
        end: date | None = None,
        package_id: str | None = None,
        status: str | None = None,
        limit: int = 25,
        cursor: str | None = None,
    ) -> SalesPage:
        """One page of the sales ledger, newest first, with the totals of the whole range."""
        return await self._run(self._core.sales(start, end, package_id, status, limit, cursor))

    async def downloads(
        self,
        package_id: str,
        days: int | None = None,
        *,
        start: date | None = None,
        end: date | None = None,
    ) -> Downloads:
        """Whole downloads of one of the caller's packages per UTC day, and their total."""
        return await self._run(self._core.downloads(package_id, days, start, end))

    def sales_pages(
        self,
        *,
        start: date | None = None,
        end: date | None = None,
        package_id: str | None = None,
        status: str | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[SalesPage]:
        """Every page of the sales ledger, following cursors (``async for``)."""
        return _afollow(
            lambda c: self.sales(
                start=start,
                end=end,
                package_id=package_id,
                status=status,
                limit=page_size,
                cursor=c,
            )
        )

    async def iter_sales(
        self,
        *,
        start: date | None = None,
        end: date | None = None,
        package_id: str | None = None,
        status: str | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[Sale]:
        """Every sale of the range, newest first, following cursors (``async for``)."""
        pages = self.sales_pages(
            start=start, end=end, package_id=package_id, status=status, page_size=page_size
        )
        async for page in pages:
            for sale in page.sales:
                yield sale

    # --- webhook endpoints (asynchronous) ---------------------------------

    async def webhook_create(
        self, url: str, events: Sequence[str], idempotency_key: str | None = None
    ) -> WebhookSecret:
        """:meth:`Client.webhook_create`."""
        fields: dict[str, object] = {"url": url, "events": list(events)}
        return await self._run(
            self._core.webhook_post("create", fields, idempotency_key, read_secret)
        )

    async def webhook_list(self) -> list[WebhookEndpoint]:
        """The application's endpoints, oldest first; disabled ones say why."""
        return await self._run(self._core.webhook_get("list", {}, read_endpoints))

    async def webhook_update(
        self,
        endpoint: str,
        url: str | None = None,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
        idempotency_key: str | None = None,
    ) -> WebhookEndpoint:
        """Change an endpoint's address, events or whether it is enabled."""
        fields = _changes(endpoint, url, events, enabled)
        return await self._run(
            self._core.webhook_post("update", fields, idempotency_key, read_endpoint)
        )

    async def webhook_delete(self, endpoint: str, idempotency_key: str | None = None) -> str:
        """Delete an endpoint and its delivery log; its id."""
        fields: dict[str, object] = {"endpoint": endpoint}
        return await self._run(
            self._core.webhook_post("delete", fields, idempotency_key, read_deleted)
        )

    async def webhook_roll_secret(
        self, endpoint: str, idempotency_key: str | None = None
    ) -> WebhookSecret:
        """A new signing secret, shown this once; the current one signs too for a while."""
        fields: dict[str, object] = {"endpoint": endpoint}
        exchange = self._core.webhook_post("roll-secret", fields, idempotency_key, read_secret)
        return await self._run(exchange)

    async def webhook_redeliver(
        self, endpoint: str, event: str, idempotency_key: str | None = None
    ) -> WebhookAttempt:
        """Send one stored event to the endpoint again, now; the attempt."""
        fields: dict[str, object] = {"endpoint": endpoint, "event": event}
        exchange = self._core.webhook_post("redeliver", fields, idempotency_key, read_attempt)
        return await self._run(exchange)

    async def webhook_test(
        self, endpoint: str, event_type: str, idempotency_key: str | None = None
    ) -> WebhookAttempt:
        """Send a sample event (marked test) of ``event_type`` to the endpoint now."""
        fields: dict[str, object] = {"endpoint": endpoint, "event_type": event_type}
        return await self._run(
            self._core.webhook_post("test", fields, idempotency_key, read_attempt)
        )

    async def webhook_deliveries(
        self, endpoint: str, limit: int = 25, cursor: str | None = None
    ) -> WebhookDeliveries:
        """A page of the endpoint's delivery log, newest first; pass ``cursor`` for the next."""
        params = _given(endpoint=endpoint, limit=limit, cursor=cursor)
        return await self._run(self._core.webhook_get("deliveries", params, read_deliveries))

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
            if isinstance(step, _Get | _Post):
                try:
                    if isinstance(step, _Post):
                        outcome = await self._http.post(
                            step.path,
                            params=step.params,
                            headers=step.headers,
                            content=step.content,
                        )
                    else:
                        outcome = await self._http.get(
                            step.path, params=step.params, headers=step.headers
                        )
                except httpx.TransportError as error:
                    outcome = error
            else:
                await self._sleep(step)
                outcome = None
