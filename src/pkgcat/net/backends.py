"""httpcore network backends that connect only to vetted addresses, within a deadline.

httpcore opens every connection through its network backend's ``connect_tcp(host,
port)``. These backends resolve ``host`` themselves, check every address it has
(:func:`pkgcat.net.addresses.vet`), and connect to the vetted address: the name
must first be one DNS can carry (:func:`pkgcat.net.names.lookup_name`), and
is resolved once, so no second lookup can answer differently (DNS rebinding).
TLS still names the host (httpcore passes it as ``server_hostname`` to
``start_tls``, for SNI and the certificate check), and so does the ``Host`` header.

Every wait (resolving, connecting, the TLS handshake, each read and write) is
also cut at the deadline of the exchange under way, kept in :data:`DEADLINE`:
a server that sends a byte every few seconds keeps a read timeout from firing,
but not the deadline.
"""

from __future__ import annotations

import ipaddress
import math
import socket
import ssl
import time
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

import anyio
import httpcore

from pkgcat.net.addresses import Allowance, IPAddress, vet
from pkgcat.net.errors import AddressRefused
from pkgcat.net.names import lookup_name

DEADLINE: ContextVar[float | None] = ContextVar("pkgcat_outbound_deadline", default=None)
"""When the exchange under way must end (``time.monotonic()``), for this thread or task."""

_SocketOptions = Iterable[Any] | None


def _within(timeout: float | None, late: type[Exception]) -> float | None:
    """``timeout`` cut to what is left before the deadline; ``late`` when none is left."""
    deadline = DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the deadline has passed")
    return left if timeout is None else min(timeout, left)


def _name(host: str) -> str:
    """``host`` as the resolver takes it; a connection error naming why DNS cannot carry it."""
    try:
        return lookup_name(host)
    except ValueError as error:
        raise httpcore.ConnectError(f"{host}: cannot be looked up: {error}") from None


def _vetted(
    host: str, port: int, infos: Iterable[tuple[Any, ...]], allowance: Allowance
) -> list[IPAddress]:
    """The addresses ``getaddrinfo`` found for ``host``; :class:`AddressRefused` if one is refused."""
    found: dict[IPAddress, None] = {}
    for info in infos:
        # The scope of a link-local IPv6 address ("fe80::1%eth0") is not part of the address.
        found[ipaddress.ip_address(str(info[4][0]).partition("%")[0])] = None
    addresses = list(found)
    refused = vet(host, port, addresses, allowance)
    if refused is not None:
        raise AddressRefused(refused)
    return addresses


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _within(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _within(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, _within(timeout, httpcore.ConnectTimeout)
        )
        return _Stream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class GuardedBackend(httpcore.NetworkBackend):
    """Connects to an address only once every address of its host has passed the checks."""

    def __init__(self, allowance: Allowance) -> None:
        self._allowance = allowance
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: _SocketOptions = None,
    ) -> httpcore.NetworkStream:
        _within(timeout, httpcore.ConnectTimeout)
        name = _name(host)
        # The system's resolver has no timeout to give: its own (resolv.conf) bounds it.
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise httpcore.ConnectError(f"{host}: cannot be resolved ({error})") from None
        addresses = _vetted(host, port, infos, self._allowance)
        failure: Exception = httpcore.ConnectError(f"{host}: no address")
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    str(address),
                    port,
                    _within(timeout, httpcore.ConnectTimeout),
                    local_address,
                    socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
                continue
            return _Stream(stream)
        raise failure

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, _within(timeout, httpcore.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _within(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        inner = await self._inner.start_tls(
            ssl_context, server_hostname, _within(timeout, httpcore.ConnectTimeout)
        )
        return _AsyncStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class AsyncGuardedBackend(httpcore.AsyncNetworkBackend):
    """:class:`GuardedBackend` for async clients (asyncio or trio, through anyio)."""

    def __init__(self, allowance: Allowance) -> None:
        self._allowance = allowance
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: _SocketOptions = None,
    ) -> httpcore.AsyncNetworkStream:
        limit = _within(timeout, httpcore.ConnectTimeout)
        name = _name(host)
        try:
            with anyio.fail_after(math.inf if limit is None else limit):
                infos = await anyio.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"{host}: not resolved in time") from None
        except OSError as error:
            raise httpcore.ConnectError(f"{host}: cannot be resolved ({error})") from None
        addresses = _vetted(host, port, infos, self._allowance)
        failure: Exception = httpcore.ConnectError(f"{host}: no address")
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(
                    str(address),
                    port,
                    _within(timeout, httpcore.ConnectTimeout),
                    local_address,
                    socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
                continue
            return _AsyncStream(stream)
        raise failure

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
