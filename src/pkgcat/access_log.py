"""The access log: one line per request, formatted on the request path, written in batches.

A :mod:`logging` call per request cost more than the rest of the request under load
(docs/benchmarks.md): a record object, two filters, a formatter, then the handler's lock
and a write to stderr, every time. Here the request path formats its line with one
f-string and appends it to a deque: no lock and no system call. One thread per process
writes every pending line to stderr (file descriptor 2) at least every :data:`FLUSH_INTERVAL` seconds, in as
few writes as whole lines allow:

- **In order**: each log's lines wait in one deque and leave it first in, first out, one
  batch at a time.
- **Whole lines**: a write holds whole lines only, and at most ``PIPE_BUF`` bytes when
  stderr is not a regular file (a pipe or a socket: journald, docker), so that the lines
  of several workers sharing it never mix within a line. A line is kept under that size:
  a path or method past :data:`FIELD_LIMIT` characters is cut, and says so.
- **At the end**: when the app shuts down (the ASGI lifespan), and when the process
  ends, through :mod:`atexit` or, in a process that :mod:`multiprocessing` started
  (granian's workers, which end with ``os._exit``), through multiprocessing's own exit
  finalizers. A line is appended before its answer is sent, so every answer a client
  got has its line, even when a stop comes at once.
- **Bounded**: at most :data:`MAX_PENDING` lines wait. Past that (stderr blocked), lines
  are dropped and counted, and a warning says how many once stderr takes lines again.

The text and JSON lines are those :mod:`pkgcat.logs` writes for a record of the
``pkgcat.access`` logger at INFO, with the same fields. What comes from the request (the
method, a path that is not an operation's, the request id) is written through
:func:`pkgcat.logs.request_text`, so it cannot start a line of its own nor carry a key.
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import os
import select
import stat
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from time import perf_counter
from typing import TYPE_CHECKING, Literal

import orjson

from pkgcat.logs import ACCESS_LOGGER, request_text

if TYPE_CHECKING:
    from pkgcat.config import Settings

FLUSH_INTERVAL = 0.1
"""Seconds a line waits at most before it is written (the writer's period)."""
MAX_PENDING = 65_536
"""Lines that may wait; past that, lines are dropped and counted (stderr blocked)."""
BATCH = 4096
"""Lines taken out of the deque at a time: what waits is at most MAX_PENDING + BATCH lines."""
FIELD_LIMIT = 512
"""Characters of a path or method kept in a line (escaped): every line stays under ``PIPE_BUF``."""
STDERR = 2
"""The file descriptor the lines go to."""
_REGULAR_FILE_WRITE = 1 << 20
"""Bytes of one write to a regular file, where any write is whole."""


class AccessLog:
    """One app's access lines: :meth:`line` on the request path, written by the process's writer.

    ``log_format`` is ``PKGCAT_LOG_FORMAT``: ``text`` or ``json``.
    """

    def __init__(self, log_format: Literal["text", "json"]) -> None:
        self._json = log_format == "json"
        self._pending: deque[bytes] = deque()
        self._registered = False
        self._dropped = 0  # written by the request path only
        self._reported = 0  # written by the flush only
        self._second = -1
        self._time = ""
        # A log dropped with lines still waiting (an app that served, then was let go) writes them.
        weakref.finalize(self, _drain, self._pending)

    def line(
        self,
        method: str,
        path: str,
        operation: str | None,
        status: int,
        code: int | None,
        application: int | None,
        request_id: str,
        started: float,
    ) -> None:
        """Append a request's line: ``operation`` None off the API's operations.

        ``request_id`` is written as it is: the app keeps only ids that need no escaping.
        ``started`` is the request's :func:`time.perf_counter` when it arrived.
        """
        duration = (perf_counter() - started) * 1000
        pending = self._pending
        if len(pending) >= MAX_PENDING:
            self._dropped += 1
            return
        if operation is None:  # any path: an operation's path is one of the table's
            path = request_text(path, FIELD_LIMIT)
        if method != "GET":
            method = request_text(method, FIELD_LIMIT)
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self._time = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        message = (
            f"{method} {path} {operation or '-'} status={status} "
            f"code={'-' if code is None else code} duration_ms={duration:.3f} "
            f"application={'-' if application is None else application}"
        )
        if self._json:
            pending.append(
                orjson.dumps(
                    {
                        "level": "INFO",
                        "logger": ACCESS_LOGGER,
                        "message": message,
                        "operation": operation,
                        "status": status,
                        "code": code,
                        "duration_ms": round(duration, 3),
                        "application_id": application,
                        "request_id": request_id,
                        "timestamp": f"{self._time}.{int((now - second) * 1e6):06d}+00:00",
                    },
                    option=orjson.OPT_APPEND_NEWLINE,
                )
            )
        else:
            pending.append(
                f"{self._time}.{int((now - second) * 1000):03d}Z INFO    {ACCESS_LOGGER} "
                f"[{request_id}] {message}\n".encode()
            )
        if not self._registered:
            self._registered = True
            _WRITER.register(self)

    def flush(self) -> None:
        """Write every pending line now (the writer calls it; so do a stop and the exit)."""
        with _WRITER.lock:
            _drain(self._pending)
            dropped = self._dropped - self._reported
            if dropped:
                self._reported += dropped
                _write([self._warning(dropped)])

    def _warning(self, dropped: int) -> bytes:
        message = (
            f"{dropped} access lines dropped: more than {MAX_PENDING} were waiting "
            "for stderr to take them"
        )
        now = time.time()
        if self._json:
            return orjson.dumps(
                {
                    "level": "WARNING",
                    "logger": ACCESS_LOGGER,
                    "message": message,
                    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now)),
                },
                option=orjson.OPT_APPEND_NEWLINE,
            )
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
        return (
            f"{stamp}.{int(now % 1 * 1000):03d}Z WARNING {ACCESS_LOGGER} [-] {message}\n".encode()
        )

    def forget_pending(self) -> None:
        """Drop the pending lines (a forked child's copy: its parent writes them)."""
        self._pending.clear()
        self._registered = False


class _Writer:
    """The process's one writer thread, and the logs it writes."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        """Held for a batch: one at a time, in order, whoever flushes (reentrant: a log that
        the garbage collector drops while a flush runs writes its lines too)."""
        self._logs: weakref.WeakSet[AccessLog] = weakref.WeakSet()
        self._registry = threading.Lock()
        """Held to add a log or copy the set, never while writing."""
        self._thread: threading.Thread | None = None
        self._exit_hooks = False

    def register(self, log: AccessLog) -> None:
        """Write ``log``'s lines from now on (once per log, at its first line)."""
        with self._registry:  # not while the writer copies the set
            self._logs.add(log)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pkgcat-access-log", daemon=True)
            self._thread.start()
        if not self._exit_hooks:
            self._exit_hooks = True
            atexit.register(self.flush_all)
            # granian's workers end with os._exit, past atexit: multiprocessing runs these.
            multiprocessing.util.Finalize(None, self.flush_all, exitpriority=0)

    def _run(self) -> None:
        due = time.monotonic()
        while True:
            # A fixed period, however long the last batch took to write.
            due += FLUSH_INTERVAL
            time.sleep(max(0.0, due - time.monotonic()))
            self.flush_all()
            due = max(due, time.monotonic() - FLUSH_INTERVAL)  # behind (a blocked stderr): no burst

    def flush_all(self) -> None:
        with self._registry:
            logs = list(self._logs)
        for log in logs:
            log.flush()

    def forked(self) -> None:
        """In a forked child: no writer thread yet, and the parent's pending lines are its own."""
        self.lock = threading.RLock()
        self._registry = threading.Lock()
        self._thread = None
        self._exit_hooks = False  # multiprocessing clears its finalizers in a child it starts
        for log in list(self._logs):
            log.forget_pending()
        self._logs = weakref.WeakSet()


_WRITER = _Writer()
os.register_at_fork(after_in_child=_WRITER.forked)


def _drain(pending: deque[bytes]) -> None:
    """Write every line of ``pending``, BATCH at a time, oldest first."""
    with _WRITER.lock:
        while pending:
            _write([pending.popleft() for _ in range(min(len(pending), BATCH))])


def _write(lines: list[bytes]) -> None:
    """Write ``lines`` to the process's stderr in whole-line chunks; lost if it cannot take them.

    File descriptor 2 itself, not ``sys.stderr``: code running in the process may replace
    ``sys.stderr`` for a while (a progress display, a command run in-process), and lines
    written from this thread must not land in what that code captures.
    """
    try:
        regular = stat.S_ISREG(os.fstat(STDERR).st_mode)
        for chunk in _chunks(lines, _REGULAR_FILE_WRITE if regular else select.PIPE_BUF):
            _write_all(STDERR, chunk)
    except OSError:
        pass  # stderr closed or full: nothing to say it on


def _chunks(lines: list[bytes], limit: int) -> Iterator[bytes]:
    """``lines`` joined into runs of at most ``limit`` bytes (a longer line goes alone)."""
    run: list[bytes] = []
    size = 0
    for line in lines:
        if run and size + len(line) > limit:
            yield b"".join(run)
            run, size = [], 0
        run.append(line)
        size += len(line)
    if run:
        yield b"".join(run)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:  # a non-blocking stderr that is full: wait until it takes more
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            poller.poll(1000)


def flush() -> None:
    """Write every pending line of every access log of this process now."""
    _WRITER.flush_all()


def access_log_for(settings: Settings) -> AccessLog | None:
    """The access log the settings ask for: on at levels info and debug unless turned off."""
    if not settings.access_log or settings.log_level not in ("debug", "info"):
        return None
    return AccessLog(settings.log_format)
