"""The body deadline: a request's whole body arrives within ``PKGCAT_BODY_READ_TIMEOUT`` seconds.

granian bounds a request's headers (``header_read_timeout``, cli/serve.py) but
not its body: a client that sends an upload's headers and then a byte every two
seconds held its connection, a handler and the upload's temporary file for as
long as it liked. Every body the server reads (uploads, the webhook operations'
fields, the store's POSTs and Stripe's events, the sign-in page's form) is read
through ``receive``, so the deadline is put there, once, by :class:`BodyDeadline`
(http/asgi.py wraps the ``receive`` of every request that may have a body).

Counted from when the request's headers are in (the app is called) to its last
body message. Past it, the read raises :class:`BodyTimedOut`: an API operation
answers it in its envelope (code 2 naming ``body``, HTTP 408); any other path
gets a plain 408 sent from here, before the app hears of it, and the app's own
answer is dropped. Either way with ``Connection: close`` (RFC 9110 15.5.9: the
server "wishes to close the connection"), and the handler unwinds as for a body
cut short, so an upload's temporary file is removed.
"""

from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Send

from pkgcat.errors import BodyTimedOut

CLOSE = (b"connection", b"close")


class BodyDeadline:
    """One request's ``receive`` under the deadline; ``answer``: the ``send`` to answer 408
    through when the deadline passes (a path that is not an API operation), else None."""

    __slots__ = ("_answer", "_done", "_ends", "_receive", "answered", "seconds", "started")

    def __init__(self, receive: Receive, seconds: float, answer: Send | None = None) -> None:
        self._receive = receive
        self.seconds = seconds
        self._ends = asyncio.get_running_loop().time() + seconds
        self._done = False
        self._answer = answer
        self.started = False
        """Whether the app began its answer (then no 408 can be sent)."""
        self.answered = False
        """Whether the 408 was sent from here: the app's own messages are dropped after it."""

    async def receive(self) -> Message:
        if self._done:  # the body is in: a later receive waits for the disconnect, unbounded
            return await self._receive()
        try:
            async with asyncio.timeout_at(self._ends):
                message = await self._receive()
        except TimeoutError:
            await self._timed_out()
            raise BodyTimedOut(self.seconds) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._done = True
        return message

    async def send(self, message: Message) -> None:
        """The app's ``send``: through, unless the 408 went first."""
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
        assert self._answer is not None
        await self._answer(message)

    async def _timed_out(self) -> None:
        if self._answer is None or self.started or self.answered:
            return
        self.answered = True
        body = f"the request's body did not arrive within {self.seconds:g} s\n".encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            CLOSE,
        ]
        await self._answer({"type": "http.response.start", "status": 408, "headers": headers})
        await self._answer({"type": "http.response.body", "body": body})
