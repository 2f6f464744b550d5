"""``Client`` and ``AsyncClient``: their configuration, and the two drivers of one core.

Everything the two clients share lives in :mod:`pkgcat.client._core`, written without I/O:
an operation is a generator that yields what to do next (send a request, or sleep so many
seconds) and receives what happened (the response, or the transport error). ``Client``
drives it with a blocking ``httpx.Client`` and ``time.sleep``; ``AsyncClient`` with an
``httpx.AsyncClient`` and ``anyio.sleep``. Their operations' methods are generated from the
operation table into :mod:`pkgcat.client._methods`; what is written here is what differs.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, tzinfo
from types import TracebackType
from typing import Self, TypeVar

import anyio
import httpx

from pkgcat.client._core import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    Core,
    Exchange,
    Get,
    KeyPlacement,
    Outcome,
    Post,
    pieces,
)
from pkgcat.client._methods import AsyncClientMethods, ClientMethods

__all__ = ["AsyncClient", "Client", "KeyPlacement"]

T = TypeVar("T")


class Client(ClientMethods):
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
        self._core = Core(base_url, secret_key, key_in=key_in, tz=tz, max_retries=max_retries)
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self._core.base_url, timeout=httpx.Timeout(timeout), transport=transport
        )

    @property
    def base_url(self) -> str:
        return self._core.base_url

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

    def _run(self, exchange: Exchange[T]) -> T:
        outcome: Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, Get | Post):
                outcome = self._send(step)
            else:
                self._sleep(step)
                outcome = None

    def _send(self, step: Get | Post) -> Outcome:
        try:
            if isinstance(step, Get):
                return self._http.get(step.path, params=step.params, headers=step.headers)
            # Sent in chunks, so that a progress callback hears of each as it goes.
            return self._http.post(
                step.path,
                params=step.params,
                headers=step.headers | {"Content-Length": str(len(step.content))},
                content=pieces(step.content, step.progress),
            )
        except httpx.TransportError as error:
            return error


class AsyncClient(AsyncClientMethods):
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
        self._core = Core(base_url, secret_key, key_in=key_in, tz=tz, max_retries=max_retries)
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=self._core.base_url, timeout=httpx.Timeout(timeout), transport=transport
        )

    @property
    def base_url(self) -> str:
        return self._core.base_url

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

    async def _run(self, exchange: Exchange[T]) -> T:
        outcome: Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, Get | Post):
                outcome = await self._send(step)
            else:
                await self._sleep(step)
                outcome = None

    async def _send(self, step: Get | Post) -> Outcome:
        try:
            if isinstance(step, Get):
                return await self._http.get(step.path, params=step.params, headers=step.headers)
            return await self._http.post(
                step.path, params=step.params, headers=step.headers, content=step.content
            )
        except httpx.TransportError as error:
            return error
