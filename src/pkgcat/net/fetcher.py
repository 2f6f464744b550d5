"""The one way pkgcat makes an outbound request: :class:`Fetcher` (sync) and :class:`AsyncFetcher`.

Both are httpx clients with the same :class:`Policy`; each request gives its
:class:`Limits`:

- **names**: the address asked, and every redirect's target, must name a host
  DNS can carry and IDNA can write (:mod:`pkgcat.net.names`), or the request
  fails with an :class:`~pkgcat.net.errors.OutboundError` before any lookup;
- **addresses**: every connection, redirects included, goes through
  :mod:`pkgcat.net.backends`: resolved once, every address checked, the
  vetted one connected to. Environment proxies (``HTTP_PROXY``...) are not
  used: a proxy would make the connection, and its address is not the target's;
- **time**: ``Policy.timeout`` to connect and between two reads, and
  ``Limits.deadline`` for the whole exchange, every redirect and the whole
  body included;
- **size**: the body is read in pieces and counted on the wire and again once
  its ``Content-Encoding`` is decoded (gzip, through
  :class:`~pkgcat.net.decoding.Inflater`); a ``Content-Length`` over the cap
  is refused before the body is read. Only ``gzip`` is asked for, and an
  answer in any other encoding is refused;
- **redirects**: followed only when the caller passes ``follow``, a rule that
  each target must pass (http or https, at most ``Policy.max_redirects``);
  the target's address is checked when it is connected to, like any other.

httpx 0.28 takes no network backend: :class:`_Transport` is httpx's own
transport with its connection pool replaced by one on the guarded backend.
"""

from __future__ import annotations

import io
import ssl
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import httpcore
import httpx

from pkgcat import __version__
from pkgcat.net.addresses import Allowance
from pkgcat.net.backends import DEADLINE, AsyncGuardedBackend, GuardedBackend
from pkgcat.net.decoding import Inflater
from pkgcat.net.errors import DeadlineExceeded, OutboundError, RedirectRefused, TooLarge
from pkgcat.net.names import lookup_name

Follow = Callable[[httpx.URL], bool]
"""Whether a redirect to this address may be followed."""
_ENCODINGS = {"", "identity", "gzip", "x-gzip"}
USER_AGENT = f"pkgcat/{__version__}"


def host_problem(url: httpx.URL) -> str | None:
    """Why the host ``url`` names cannot be looked up (:mod:`pkgcat.net.names`), or ``None``."""
    host = url.raw_host.decode("ascii")
    if not host:
        return None  # no host: httpx itself refuses the request
    try:
        lookup_name(host)
    except ValueError as error:
        return str(error)
    return None


def follow_any(_url: httpx.URL) -> bool:
    """Follow every redirect (the address is still checked when it is connected to)."""
    return True


@dataclass(frozen=True, slots=True)
class Policy:
    """What every request of a fetcher obeys."""

    allow: Allowance = field(default_factory=Allowance)
    """Exceptions to the refused ranges (``PKGCAT_FETCH_ALLOW``)."""
    timeout: float = 30.0
    """Seconds to connect, and between two reads or writes."""
    user_agent: str = USER_AGENT
    max_redirects: int = 5
    verify: ssl.SSLContext | bool = True
    """TLS verification: True (the system's and certifi's authorities), or an SSL context."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one request."""

    max_bytes: int
    """Bytes of the body on the wire, and again once its Content-Encoding is decoded."""
    deadline: float
    """Seconds for the whole exchange: connections, redirects and the whole body."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole answer, its body read within the limits."""

    url: httpx.URL
    """The address that answered (after redirects)."""
    status: int
    headers: httpx.Headers
    content: bytes


class _Body:
    """A body read in pieces, counted on the wire and once decoded."""

    def __init__(self, response: httpx.Response, limit: int) -> None:
        self._url = response.request.url
        self._limit = limit
        self._wire = 0
        self._out = io.BytesIO()
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in _ENCODINGS:
            raise OutboundError(f"{self._url}: Content-Encoding {encoding!r} is not accepted")
        self._inflater = Inflater() if encoding.endswith("gzip") else None
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise TooLarge(f"{self._url}: {length} bytes, over the limit of {limit}")

    def feed(self, chunk: bytes) -> None:
        self._wire += len(chunk)
        if self._wire > self._limit:
            raise TooLarge(f"{self._url}: more than {self._limit} bytes")
        for piece in self._decoded(chunk):
            if self._out.tell() + len(piece) > self._limit:
                raise TooLarge(
                    f"{self._url}: more than {self._limit} bytes once its Content-Encoding "
                    "is decoded"
                )
            self._out.write(piece)

    def _decoded(self, chunk: bytes) -> Iterator[bytes]:
        if self._inflater is None:
            yield chunk
            return
        try:
            yield from self._inflater.feed(chunk)
        except zlib.error as error:
            raise OutboundError(f"{self._url}: not valid gzip data ({error})") from None

    def answer(self, response: httpx.Response) -> Answer:
        if self._inflater is not None:
            try:
                self._inflater.end()
            except EOFError as error:
                raise OutboundError(f"{self._url}: {error}") from None
        return Answer(response.url, response.status_code, response.headers, self._out.getvalue())


class _Exchange:
    """What the sync and async fetchers share for one request: its clock, hops and errors."""

    def __init__(self, policy: Policy, url: str, limits: Limits, follow: Follow | None) -> None:
        self.policy, self.url, self.limits, self.follow = policy, url, limits, follow
        self.hops = 0
        self.current = url
        """The address asked now (the last redirect's target)."""
        self.deadline = time.monotonic() + limits.deadline

    def next_hop(self, response: httpx.Response) -> httpx.Request | None:
        """The redirect to follow, or ``None`` when this answer is the one to read."""
        target = response.next_request
        if target is None or self.follow is None:
            return None
        self.hops += 1
        if target.url.scheme not in ("http", "https"):
            raise RedirectRefused(f"{response.url}: redirected to {target.url}, not http(s)")
        problem = host_problem(target.url)
        if problem is not None:
            raise RedirectRefused(f"{response.url}: redirected to {target.url}; {problem}")
        if self.hops > self.policy.max_redirects:
            raise RedirectRefused(
                f"{self.url}: more than {self.policy.max_redirects} redirects (last to {target.url})"
            )
        if not self.follow(target.url):
            raise RedirectRefused(f"{response.url}: redirected to {target.url}, not followed")
        self.current = str(target.url)
        return target

    def check(self) -> None:
        """:class:`OutboundError` unless the address asked parses and names a host DNS can carry."""
        try:
            parsed = httpx.URL(self.url)
        except httpx.InvalidURL as error:
            raise OutboundError(f"{self.url}: not an address ({error})") from None
        problem = host_problem(parsed)
        if problem is not None:
            raise OutboundError(f"{self.url}: {problem}")

    def body(self, response: httpx.Response) -> _Body:
        return _Body(response, self.limits.max_bytes)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Set the deadline for the backends, and tell every failure as an :class:`OutboundError`."""
        token = DEADLINE.set(self.deadline)
        try:
            yield
        except httpx.TimeoutException as error:
            # The backends cut each wait at the deadline; the socket's timer and this clock
            # may disagree by a hair, hence the millisecond.
            if time.monotonic() >= self.deadline - 0.001:
                raise DeadlineExceeded(
                    f"{self.url}: not done within its deadline of {self.limits.deadline:g} s"
                ) from None
            raise OutboundError(
                f"{self.current}: no answer within {self.policy.timeout:g} s "
                f"({error or type(error).__name__})"
            ) from None
        except (httpx.HTTPError, httpcore.UnsupportedProtocol) as error:
            raise OutboundError(
                f"{self.current}: cannot be fetched ({error or type(error).__name__})"
            ) from None
        except OutboundError as error:
            message = str(error)
            if message.startswith(("http://", "https://")):
                raise
            # From the backend, which knows the host but not the address asked for.
            raise type(error)(f"{self.current}: {message}") from None
        finally:
            DEADLINE.reset(token)


_CONNECTIONS = 16
_IDLE_SECONDS = 5.0
"""How long an idle connection is kept for the next request to the same host."""


class _Transport(httpx.HTTPTransport):
    def __init__(self, policy: Policy) -> None:
        context = httpx.create_ssl_context(verify=policy.verify)
        super().__init__(verify=context, trust_env=False)
        backend = GuardedBackend(policy.allow)
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            network_backend=backend,
            max_connections=_CONNECTIONS,
            keepalive_expiry=_IDLE_SECONDS,
        )


class _AsyncTransport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: Policy) -> None:
        context = httpx.create_ssl_context(verify=policy.verify)
        super().__init__(verify=context, trust_env=False)
        backend = AsyncGuardedBackend(policy.allow)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            network_backend=backend,
            max_connections=_CONNECTIONS,
            keepalive_expiry=_IDLE_SECONDS,
        )


def _headers(policy: Policy) -> dict[str, str]:
    return {"User-Agent": policy.user_agent, "Accept-Encoding": "gzip"}


class Fetcher:
    """Outbound requests from synchronous code (the importer): one client, one policy."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._client = httpx.Client(
            transport=_Transport(self.policy),
            timeout=self.policy.timeout,
            follow_redirects=False,
            trust_env=False,
            headers=_headers(self.policy),
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        limits: Limits,
        follow: Follow | None = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> Answer:
        """The whole answer to one request, within ``limits``; :class:`OutboundError` if not.

        A redirect is followed only when ``follow`` is given and the target passes it;
        without ``follow``, the redirect itself is the answer.
        """
        exchange = _Exchange(self.policy, url, limits, follow)
        with exchange.running():
            exchange.check()
            request: httpx.Request | None = self._client.build_request(
                method, url, headers=headers, content=content
            )
            while request is not None:
                response = self._client.send(request, stream=True)
                try:
                    request = exchange.next_hop(response)
                    if request is None:
                        body = exchange.body(response)
                        for chunk in response.iter_raw():
                            body.feed(chunk)
                        return body.answer(response)
                finally:
                    response.close()
        raise AssertionError("unreachable: the loop returns or raises")

    def get(self, url: str, *, limits: Limits, follow: Follow | None = None) -> Answer:
        return self.request("GET", url, limits=limits, follow=follow)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncFetcher:
    """Outbound requests from the async server (mirrors, webhooks, payment platforms)."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._client = httpx.AsyncClient(
            transport=_AsyncTransport(self.policy),
            timeout=self.policy.timeout,
            follow_redirects=False,
            trust_env=False,
            headers=_headers(self.policy),
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        limits: Limits,
        follow: Follow | None = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> Answer:
        """:meth:`Fetcher.request`, awaited."""
        exchange = _Exchange(self.policy, url, limits, follow)
        with exchange.running():
            exchange.check()
            request: httpx.Request | None = self._client.build_request(
                method, url, headers=headers, content=content
            )
            while request is not None:
                response = await self._client.send(request, stream=True)
                try:
                    request = exchange.next_hop(response)
                    if request is None:
                        body = exchange.body(response)
                        async for chunk in response.aiter_raw():
                            body.feed(chunk)
                        return body.answer(response)
                finally:
                    await response.aclose()
        raise AssertionError("unreachable: the loop returns or raises")

    async def get(self, url: str, *, limits: Limits, follow: Follow | None = None) -> Answer:
        return await self.request("GET", url, limits=limits, follow=follow)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
