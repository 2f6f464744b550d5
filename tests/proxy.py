"""A TCP proxy on 127.0.0.1 that a test can cut and restore, or stall and resume: a database
or Redis gone, or silent, then back.

The shared PostgreSQL and Redis are never stopped (other tests use them): a test
points the server at this proxy instead, and cutting the proxy makes the service
unreachable for that server alone. Cut, it closes every connection it carries
and stops listening, so connects are refused; restored, it listens on the same port.
Stalled, it keeps every connection open and accepts new ones, but holds what either
side sends (a server frozen, sockets open, no replies); resumed, it delivers it all.
Forgotten, the server's side of every connection is gone without a word reaching the
client (a host that went down, or whose state was lost: no FIN, no reset), and connects
are refused; once restored, the first bytes a client sends on a connection it still holds
are answered with a reset, as a host answers a segment of a connection it does not know
(RFC 9293, 3.10.7.1). A client that keeps such a connection idle through the outage finds
it stale only when it uses it.

A trap (:meth:`Proxy.lose`) breaks the one connection whose client sends a given string
next, at a chosen moment: before its message reaches the server, just after (the server
goes on with it), or once the server's reply comes back, which is then never delivered.
A PostgreSQL server writes a small reply only once the statement's implicit transaction
has committed (it flushes its output at ReadyForQuery), so the last is a commit that
landed and whose acknowledgement was lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple

from sqlalchemy.engine import make_url

WAIT = 10.0
"""Seconds the proxy's own steps may take."""


Moment = Literal["request", "cut", "reply"]
"""When a trapped connection breaks: its message not forwarded; forwarded, then the
connection closed at once; or forwarded, and the server's reply swallowed."""


class _Trap(NamedTuple):
    marker: bytes
    moment: Moment
    down: bool
    fired: threading.Event


class Proxy:
    """Forwards 127.0.0.1:``port`` to ``host``:``target_port``, on a thread of its own."""

    def __init__(self, host: str, target_port: int) -> None:
        self.port = 0
        self._target = (host, target_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._clients: set[asyncio.StreamWriter] = set()  # the clients' ends of the open ones
        self._forgotten: set[asyncio.StreamWriter] = set()  # clients' ends, left open
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._listening = asyncio.Event()
        self.accepted = 0
        """Connections accepted so far (each a connect of the proxied client)."""
        self._trap: _Trap | None = None
        self._losing: dict[asyncio.StreamWriter, _Trap] = {}  # clients' ends, reply to lose

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(WAIT)

    def start(self) -> None:
        self._thread.start()
        self._call(self._listen())

    def cut(self) -> None:
        """Refuse new connections and close the ones open (as a server gone away would)."""
        self._call(self._cut())

    def forget(self) -> None:
        """Lose every connection as a host gone down does: the server's ends closed, the
        client's left open and told nothing; new connections refused until :meth:`restore`,
        after which a forgotten connection's next bytes are answered with a reset."""
        self._call(self._forget())

    def lose(self, marker: bytes, moment: Moment, *, down: bool = False) -> threading.Event:
        """Break the next connection whose client sends ``marker``, at ``moment``; with
        ``down``, cut everything then too, until :meth:`restore`. The event is set once the
        trap has fired."""
        trap = _Trap(marker, moment, down, threading.Event())

        async def arm() -> None:
            self._trap = trap

        self._call(arm())
        return trap.fired

    def restore(self) -> None:
        self._call(self._listen())

    def stall(self) -> None:
        """Hold whatever either side sends, connections left open, until :meth:`resume`."""
        self._loop.call_soon_threadsafe(self._flowing.clear)

    def resume(self) -> None:
        """Deliver what was held, and forward again."""
        self._loop.call_soon_threadsafe(self._flowing.set)

    def stop(self) -> None:
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(WAIT)
        self._loop.close()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._listening.set()

    async def _close_server(self) -> None:
        self._listening.clear()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _cut(self) -> None:
        await self._close_server()
        for writer in [*self._writers, *self._forgotten]:
            writer.transport.abort()
        self._writers.clear()
        self._forgotten.clear()

    async def _stop(self) -> None:
        """Cut everything and end every connection's task: a task left pending on the closed
        loop would be reported, when collected, in whichever test runs then."""
        await self._cut()
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _forget(self) -> None:
        await self._close_server()
        clients = self._clients
        self._forgotten |= clients
        for writer in self._writers - clients:  # the server's ends
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, upstream_writer}
        self._clients.add(writer)
        await asyncio.gather(
            self._pipe(reader, upstream_writer, client=writer),
            self._pipe(upstream_reader, writer, server=upstream_writer),
        )
        self._clients.discard(writer)
        self._losing.pop(writer, None)

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client: asyncio.StreamWriter | None = None,
        server: asyncio.StreamWriter | None = None,
    ) -> None:
        """Forward ``reader`` to ``writer``; ``client``: the client's end, when ``reader`` reads
        it; ``server``: the server's end, when ``reader`` reads that."""
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if client is not None and client in self._forgotten:
                    await self._reset(client)
                    return
                await self._flowing.wait()
                trap = self._trap
                if client is not None and trap is not None and trap.marker in data:
                    self._trap = None
                    if trap.moment == "request":
                        await self._spring(trap, client, writer)
                        break
                    writer.write(data)
                    await writer.drain()
                    if trap.moment == "cut":
                        await self._spring(trap, client, writer)
                        break
                    self._losing[client] = trap
                    continue
                if server is not None and writer in self._losing:  # the reply: never delivered
                    await self._spring(self._losing.pop(writer), writer, server)
                    break
                writer.write(data)
                await writer.drain()
        self._writers.discard(writer)
        if writer not in self._forgotten:  # a forgotten client is told nothing
            writer.transport.abort()

    async def _spring(
        self, trap: _Trap, client: asyncio.StreamWriter, server: asyncio.StreamWriter
    ) -> None:
        """Break one connection (both its ends) for ``trap``, or every one with ``down``."""
        client.transport.abort()
        server.transport.abort()
        if trap.down:
            await self._cut()
        trap.fired.set()

    async def _reset(self, client: asyncio.StreamWriter) -> None:
        """Once the server is back, answer the forgotten connection's bytes with a reset."""
        await self._listening.wait()  # down meanwhile: the bytes go unanswered
        self._forgotten.discard(client)
        # A close with a zero linger sends RST rather than FIN.
        client.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
        )
        client.transport.abort()


@contextmanager
def proxied(url: str) -> Iterator[tuple[Proxy, str]]:
    """A proxy in front of the service at ``url``, and the same URL through the proxy."""
    parsed = make_url(url)
    default_port = 6379 if parsed.drivername.startswith("redis") else 5432
    proxy = Proxy(parsed.host or "127.0.0.1", parsed.port or default_port)
    proxy.start()
    try:
        through = parsed.set(host="127.0.0.1", port=proxy.port)
        yield proxy, through.render_as_string(hide_password=False)
    finally:
        proxy.stop()
