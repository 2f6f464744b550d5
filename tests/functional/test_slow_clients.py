"""Idle and slow connections do not keep other clients waiting (docs/reliability.md, "Slow clients").

A real ``pkgcat serve`` on 127.0.0.1, started with a soft limit of 1,024 open files (as
many systems give a process), and a crowd of connections from this process: some that
never send a byte, some that send the start of a request's headers and then one byte a
second. Meanwhile a normal client sends details requests, each on a new connection,
and each must be answered within 1 s: the client's own timeout is the deadline.

The default run is short (2,000 connections held for 3 s). ``make slow-clients`` runs
the full variant (``SLOW_CLIENTS=full``): 4,000 connections for 30 s against two
workers, the crowd reconnecting whenever the server closes one of its connections, and
prints the figures docs/reliability.md quotes.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import signal
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.debs import build_deb
from tests.servers import (
    DETAILS,
    PKGCAT,
    Served,
    environment,
    free_port,
    poll,
    seed,
    serving,
)
from tests.store.conftest import store_settings

pytestmark = [pytest.mark.server, pytest.mark.slow]

FULL = os.environ.get("SLOW_CLIENTS") == "full"
CROWD = 4000 if FULL else 2000
HOLD = 30.0 if FULL else 3.0
WORKERS = 2 if FULL else 1
DEADLINE = 1.0
"""Seconds within which the normal client must have its answer: its timeout."""
PARTIAL = b"GET /1.0/package/details.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def allow_open_files(count: int) -> None:
    """Raise this process's soft limit on open files to at least ``count`` (within the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= count:
        return
    assert hard == resource.RLIM_INFINITY or hard >= count, (
        f"this test holds {count} sockets; the hard limit on open files is {hard}"
    )
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))


@contextmanager
def soft_open_files(count: int) -> Iterator[None]:
    """This process's soft limit lowered to ``count`` for the block (a server started in it inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(count, soft), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Crowd:
    """``count`` connections to ``port``: half silent, half sending headers a byte a second.

    :meth:`hold` keeps them open until a deadline, opening a new one for each the
    server closes; it counts those closes.
    """

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.closed_by_server = 0
        self.silent: set[socket.socket] = set()
        self.slow: set[socket.socket] = set()
        self.selector = selectors.DefaultSelector()

    def _open(self, slow: bool) -> None:
        connection = socket.create_connection(("127.0.0.1", self.port))
        if slow:
            connection.sendall(PARTIAL)
            self.slow.add(connection)
        else:
            self.silent.add(connection)
        self.selector.register(connection, selectors.EVENT_READ, slow)

    def open(self) -> None:
        for n in range(self.count):
            self._open(slow=n % 2 == 1)

    def hold(self, until: float, stop: threading.Event) -> None:
        next_drip = time.monotonic() + 1.0
        while not stop.is_set() and time.monotonic() < until:
            for key, _ in self.selector.select(timeout=0.1):
                # Readable: the server closed it (or answered, which it must not do).
                connection: socket.socket = key.fileobj  # type: ignore[assignment]  # ours
                self._drop(connection)
                self.closed_by_server += 1
                self._open(slow=bool(key.data))
            if time.monotonic() >= next_drip:
                next_drip += 1.0
                for connection in list(self.slow):
                    # A connection the server closed raises; the selector reports it.
                    with contextlib.suppress(OSError):
                        connection.send(b"a")

    def _drop(self, connection: socket.socket) -> None:
        self.selector.unregister(connection)
        self.silent.discard(connection)
        self.slow.discard(connection)
        connection.close()

    def still_open(self) -> int:
        """How many of the crowd's connections the server has not closed."""
        return sum(not _closed(c) for c in self.silent | self.slow)

    def close(self) -> None:
        for connection in list(self.silent | self.slow):
            self._drop(connection)
        self.selector.close()


def _closed(connection: socket.socket) -> bool:
    """Whether the server closed ``connection`` (it never sends the crowd anything else)."""
    connection.setblocking(False)
    try:
        return connection.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        connection.setblocking(True)


def timed_requests(served: Served, until: float) -> list[float]:
    """Details requests one after another until ``until``, each on a new connection: their times."""
    app = served.apps[0]
    times: list[float] = []
    while time.monotonic() < until:
        started = time.monotonic()
        # A new client each time: a new connection, which must be accepted and answered.
        with httpx.Client(base_url=served.base, timeout=DEADLINE) as client:
            response = client.get(
                DETAILS,
                params={"package": app["paid_package"]},
                headers={"Authorization": f"Bearer {app['secret_key']}"},
            )
        times.append(time.monotonic() - started)
        assert response.status_code == 200, response.text
        assert times[-1] < DEADLINE
    return times


@pytest.fixture
def crowded_server(tmp_path: Path) -> Iterator[Served]:
    env = environment(f"sqlite:///{tmp_path / 'served.db'}")
    apps = seed(env)
    with ExitStack() as stack:
        with soft_open_files(1024):  # `pkgcat serve` must raise it for itself
            served = stack.enter_context(
                serving(env, tmp_path / "server.log", workers=WORKERS, apps=apps)
            )
        yield served


@pytest.mark.alone  # asserts on wall-clock time
def test_a_crowd_of_idle_and_slow_connections_keeps_no_client_waiting(
    crowded_server: Served,
) -> None:
    allow_open_files(CROWD + 256)
    crowd = Crowd(crowded_server.port, CROWD)
    stop = threading.Event()
    try:
        crowd.open()
        holding = threading.Thread(target=crowd.hold, args=(time.monotonic() + HOLD + 5, stop))
        holding.start()
        try:
            times = timed_requests(crowded_server, time.monotonic() + HOLD)
        finally:
            stop.set()
            holding.join()
        assert times
        if not FULL:
            # Held, not dropped: the server had room for all of them and the client.
            assert crowd.still_open() == CROWD
        times.sort()
        print(
            f"\n{CROWD} connections held for {HOLD:.0f} s against {WORKERS} worker(s): "
            f"{len(times)} requests answered, p50 {statistics.median(times) * 1000:.1f} ms, "
            f"p99 {times[int(len(times) * 0.99)] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms; "
            f"{crowd.closed_by_server} crowd connections closed by the server"
        )
    finally:
        crowd.close()


def test_idle_silent_and_slow_connections_are_closed_after_the_header_timeout(
    tmp_path: Path,
) -> None:
    env = environment(f"sqlite:///{tmp_path / 'served.db'}", header_read_timeout="1")
    apps = seed(env)
    with serving(env, tmp_path / "server.log", apps=apps) as served:
        silent = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(50)]
        slow = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(50)]
        for connection in slow:
            connection.sendall(PARTIAL)
        kept_alive = []
        for _ in range(50):  # one answer each, then nothing: an idle keep-alive connection
            connection = socket.create_connection(("127.0.0.1", served.port))
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert connection.recv(4096).startswith(b"HTTP/1.1 200 ")
            kept_alive.append(connection)
        everyone = silent + slow + kept_alive
        with selectors.DefaultSelector() as selector:
            for connection in everyone:
                selector.register(connection, selectors.EVENT_READ)
            deadline = time.monotonic() + 1 + 5
            open_ones = set(everyone)
            while open_ones and time.monotonic() < deadline:
                for key, _ in selector.select(timeout=0.1):
                    connection = key.fileobj  # type: ignore[assignment]  # ours
                    try:
                        sent = connection.recv(4096)
                    except ConnectionResetError:
                        sent = b""
                    assert sent == b"", sent  # closed, with nothing sent first
                    selector.unregister(connection)
                    open_ones.discard(connection)
        for connection in everyone:
            connection.close()
        assert not open_ones, f"{len(open_ones)} of {len(everyone)} still open after 6 s"
        answered = httpx.get(f"{served.base}/healthz", timeout=DEADLINE)
        assert answered.status_code == 200


def _answers(url: str) -> bool | None:
    """True once ``url`` answers 200; None (poll again) while nothing listens yet."""
    with contextlib.suppress(httpx.TransportError):
        if httpx.get(url, timeout=1).status_code == 200:
            return True
    return None


def test_serve_fits_its_connections_to_a_low_open_files_limit(tmp_path: Path) -> None:
    env = environment(f"sqlite:///{tmp_path / 'served.db'}")
    seed(env)

    def low_limit() -> None:  # in the child, before it runs `pkgcat serve`
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    port = free_port()
    server = subprocess.Popen(
        [PKGCAT, "serve", "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=low_limit,
    )
    lines: list[str] = []
    try:
        assert server.stderr is not None
        while not lines or "  clients " not in lines[-1]:  # the banner's line on connections
            line = server.stderr.readline()
            assert line, f"pkgcat serve stopped: {''.join(lines)}"
            lines.append(line)
        # Stopped only once it serves: a Ctrl-C while its worker is still starting is
        # another matter than the one tested here.
        poll(lambda: _answers(f"http://127.0.0.1:{port}/healthz"), "the server's health check")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=15)
    text = "".join(lines)
    assert (
        "WARNING pkgcat.cli [-] the open-files limit lets each worker hold 768 connections, "
        "not PKGCAT_MAX_CONNECTIONS=4096" in text
    ), text
    assert "up to 768 connections per worker" in text, text


TRICKLED = 20
"""Connections that send a body's headers, then one byte at a time (the attack: 20 uploads
trickling a byte every 2 s were all still open after 32 s)."""


def _key(env: dict[str, str], app: dict[str, Any], scope: str) -> str:
    made = subprocess.run(
        [PKGCAT, "key", "create", "--source", app["source"], "--app", app["name"],
         "--scope", scope, "--json"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key: str = json.loads(made.stdout)["secret_key"]
    return key


def _trickle_until_answered(connections: list[socket.socket], bound: float) -> dict[int, bytes]:
    """Each connection sends a byte whenever it has had no answer for 0.25 s, until the server
    answers and closes it, or ``bound`` seconds pass; what each was sent, by index."""
    got: dict[int, bytes] = dict.fromkeys(range(len(connections)), b"")
    open_ones = dict(enumerate(connections))
    deadline = time.monotonic() + bound
    with selectors.DefaultSelector() as selector:
        for i, connection in open_ones.items():
            selector.register(connection, selectors.EVENT_READ, i)
        while open_ones and time.monotonic() < deadline:
            ready = selector.select(timeout=0.25)
            for key, _ in ready:
                i = key.data
                try:
                    chunk = open_ones[i].recv(65536)
                except ConnectionResetError:
                    chunk = b""
                got[i] += chunk
                if not chunk:  # closed by the server
                    selector.unregister(open_ones.pop(i))
            if not ready:
                for connection in open_ones.values():
                    with contextlib.suppress(OSError):
                        connection.send(b"x")
    assert not open_ones, f"{len(open_ones)} of {len(connections)} still open after {bound} s"
    return got


def test_bodies_that_trickle_are_answered_408_and_closed_after_the_body_timeout(
    tmp_path: Path,
) -> None:
    """Uploads, webhook writes and store POSTs whose bodies come a byte at a time: each is
    answered 408 and closed once ``PKGCAT_BODY_READ_TIMEOUT`` (1 s here) has passed, and no
    upload leaves its temporary file; a normal upload right after is answered."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    port = free_port()
    env = environment(
        f"sqlite:///{tmp_path / 'served.db'}",
        body_read_timeout="1",
        blob_dir=str(tmp_path / "blobs"),
        # The store, with a mail server that is never reached (no sign-in here).
        **{
            name: str(value).lower() if isinstance(value, bool) else str(value)
            for name, value in store_settings(
                9, store_url=f"http://127.0.0.1:{port}/store/"
            ).items()
        },
    )
    env["TMPDIR"] = str(temporary)  # where the uploads' temporary files go
    apps = seed(env)
    publish, webhooks = _key(env, apps[0], "publish"), _key(env, apps[0], "webhooks")
    heads = {
        "upload": (
            "POST /1.0/package/upload.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {publish}\r\n"
            "Content-Type: application/vnd.debian.binary-package\r\nContent-Length: 100000\r\n\r\n"
        ),
        "webhook": (
            "POST /1.0/webhook/create.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {webhooks}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
        ),
        "store": (
            "POST /store/user_info HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
        ),
    }
    kinds = [*["upload"] * TRICKLED, "webhook", "store"]
    with serving(env, tmp_path / "server.log", apps=apps, port=port) as served:
        connections = [socket.create_connection(("127.0.0.1", served.port)) for _ in kinds]
        try:
            for connection, kind in zip(connections, kinds, strict=True):
                connection.sendall(heads[kind].encode())
            started = time.monotonic()
            got = _trickle_until_answered(connections, bound=15)
            took = time.monotonic() - started
        finally:
            for connection in connections:
                connection.close()
        for i, kind in enumerate(kinds):
            answer = got[i]
            assert answer.startswith(b"HTTP/1.1 408 "), (kind, answer[:200])
            assert b"connection: close" in answer.lower(), (kind, answer[:300])
            if kind != "store":  # the API's envelope: code 2 naming the body
                body = json.loads(answer.partition(b"\r\n\r\n")[2])
                assert body["code"] == 2
                assert body["response"].startswith("body: not received within 1 s")
        assert list(temporary.glob("pkgcat-upload-*")) == []
        print(f"\n{len(kinds)} trickling bodies answered 408 and closed within {took:.1f} s")
        deb = build_deb(tmp_path, "com.example.after", "1.0")
        done = httpx.post(
            f"{served.base}/1.0/package/upload.json",
            content=deb.read_bytes(),
            headers={
                "authorization": f"Bearer {publish}",
                "content-type": "application/vnd.debian.binary-package",
            },
            timeout=10,
        )
        assert done.status_code == 200, done.text
