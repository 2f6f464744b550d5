"""A per-request round-robin HTTP balancer on 127.0.0.1, as nginx's ``upstream`` is.

Each request a client sends (on a connection it keeps or a new one) goes to the next
upstream in turn, over a connection of its own, closed after the answer: two requests of
one client, even on one connection, are answered by two servers, or by two workers of one
server (a new connection is given to whichever worker accepts it). Enough HTTP/1.1 for
GET and HEAD: the answer's body is its ``Content-Length`` bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

WAIT = 10.0
"""Seconds the balancer has to start or stop."""


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstreams: Iterator[tuple[str, int]],
) -> None:
    try:
        while True:
            head = await client_reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ", 1)[0]
            kept = [
                line for line in lines[1:] if line and not line.lower().startswith("connection:")
            ]
            request = "\r\n".join([lines[0], *kept, "Connection: close", "", ""]).encode("latin-1")
            host, port = next(upstreams)
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(request)
                await writer.drain()
                answer = await reader.readuntil(b"\r\n\r\n")
                status = int(answer.split(b" ", 2)[1])
                length = 0
                for line in answer.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if method == "HEAD" or status in (204, 304):
                    length = 0
                body = await reader.readexactly(length)
            finally:
                writer.close()
                with contextlib.suppress(ConnectionError):
                    await writer.wait_closed()
            client_writer.write(answer + body)
            await client_writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client is done (or gone)
    finally:
        client_writer.close()


@contextmanager
def balancer(upstreams: Sequence[tuple[str, int]]) -> Iterator[str]:
    """A balancer over ``upstreams`` (host, port) for the block; its base address."""
    loop = asyncio.new_event_loop()
    turns = itertools.cycle(upstreams)
    started: list[asyncio.Server] = []
    ready = threading.Event()

    async def serve() -> None:
        server = await asyncio.start_server(lambda r, w: _relay(r, w, turns), "127.0.0.1", 0)
        started.append(server)
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(WAIT)
    assert ready.wait(WAIT)
    port = started[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:

        async def shut() -> None:
            started[0].close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), loop).result(WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT)
        loop.close()
