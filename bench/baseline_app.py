"""The benchmark's baseline: a bare ASGI app returning a fixed, pre-serialized JSON body.

No framework, no routing, no database: every HTTP request gets the same bytes,
so what it measures is the server (granian) and the ASGI calls alone. The body
is a JSON envelope padded to the size of a real details response, so both
sides move the same number of bytes.

Served the way ``pkgcat serve`` serves the API: granian, ASGI interface, a
factory target, one worker (``--workers`` for more), no access log::

    .venv/bin/python -m bench.baseline_app --port 8001 --body-bytes 1373

``bench/details.py`` starts it by itself; run it by hand only to poke at it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BODY_BYTES_ENV = "PKGCAT_BENCH_BODY_BYTES"
BODY_FILE_ENV = "PKGCAT_BENCH_BODY_FILE"
"""When set, the body is this file's bytes exactly (a real answer), not padding."""
PATHSEND_FILE_ENV = "PKGCAT_BENCH_PATHSEND_FILE"
"""When set, every answer is this file, handed to the server in one ``http.response.pathsend``
message: the most an app that sends files so can get (bench/repository.py)."""
DEFAULT_BODY_BYTES = 1373
"""Size of the demo's shape A details response for its first paid package."""


def fixed_body(size: int) -> bytes:
    """A valid JSON envelope of exactly ``size`` bytes (the padding is a string)."""
    empty = orjson.dumps({"code": 0, "response": ""})
    if size < len(empty):
        raise ValueError(f"a body needs at least {len(empty)} bytes, got {size}")
    body = orjson.dumps({"code": 0, "response": "x" * (size - len(empty))})
    assert len(body) == size
    return body


def build_app(body: bytes) -> ASGIApp:
    """The bare app: answers every HTTP request with ``body``, and the lifespan protocol."""
    start: Message = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"application/json")],
    }
    response: Message = {"type": "http.response.body", "body": body}
    pathsend = os.environ.get(PATHSEND_FILE_ENV)
    if pathsend:
        size = str(Path(pathsend).stat().st_size).encode()
        start["headers"] = [
            (b"content-type", b"application/octet-stream"),
            (b"content-length", size),
        ]
        response = {"type": "http.response.pathsend", "path": pathsend}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await send(start)
            await send(response)
            return
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    return app


def create_app() -> ASGIApp:
    """Granian's factory target: the body is ``PKGCAT_BENCH_BODY_FILE``'s bytes, or a padded
    envelope of ``PKGCAT_BENCH_BODY_BYTES`` bytes."""
    body_file = os.environ.get(BODY_FILE_ENV)
    if body_file:
        return build_app(Path(body_file).read_bytes())
    size = int(os.environ.get(BODY_BYTES_ENV, str(DEFAULT_BODY_BYTES)))
    return build_app(fixed_body(size))


def serve(host: str, port: int, body_bytes: int, workers: int = 1) -> None:
    """Serve :func:`create_app` with the settings ``pkgcat serve`` gives granian."""
    from granian import Granian
    from granian.constants import Interfaces
    from granian.log import LogLevels

    os.environ[BODY_BYTES_ENV] = str(body_bytes)  # the worker process reads it
    Granian(
        target="baseline_app:create_app",
        factory=True,
        interface=Interfaces.ASGI,
        address=host,
        port=port,
        workers=workers,
        log_access=False,
        log_level=LogLevels.info,
        working_dir=Path(__file__).resolve().parent,
    ).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--body-bytes", type=int, default=DEFAULT_BODY_BYTES)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    serve(args.host, args.port, args.body_bytes, args.workers)


if __name__ == "__main__":
    main()
