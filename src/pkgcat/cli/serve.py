"""``pkgcat serve``: run the API server (granian, ASGI)."""

from __future__ import annotations

import errno
import logging
import os
import resource
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated

import typer
from dotenv import dotenv_values
from granian import Granian
from granian.constants import HTTPModes, Interfaces, Loops
from granian.http import HTTP1Settings
from granian.log import LogLevels

from pkgcat import __version__
from pkgcat.app import app_from_environment, create_app
from pkgcat.cli._common import fail, load_settings, migrated, stderr
from pkgcat.cli._failures import shown_url
from pkgcat.config import Settings
from pkgcat.http.asgi import ApiApp
from pkgcat.logs import logging_config
from pkgcat.workers import die_with_parent, obey_stop_signals_in_forks

MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
"""Where prometheus_client's multiprocess mode keeps the workers' values (its own variable)."""
log = logging.getLogger("pkgcat.cli")


def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on [PKGCAT_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on [PKGCAT_PORT].")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes [PKGCAT_WORKERS].")] = None,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file",
            help="Read PKGCAT_* settings from this file (NAME=value lines, as `pkgcat demo` "
            "writes); the environment's own values win.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
) -> None:
    """Migrate the database, then serve the API until interrupted."""
    if env_file is not None:
        read_env_file(env_file)
    settings = load_settings(host=host, port=port, workers=workers)
    with ExitStack() as cleanup:
        if settings.metrics:
            cleanup.enter_context(metrics_directory())
        _serve(settings)


def read_env_file(path: Path) -> None:
    """Put the file's ``PKGCAT_*`` values into the environment, where it has none of its own:
    the workers build their settings from the environment, so they read them too."""
    for name, value in dotenv_values(path).items():
        if name.startswith("PKGCAT_") and value is not None:
            os.environ.setdefault(name, value)


@contextmanager
def metrics_directory() -> Iterator[str]:
    """A fresh directory where the workers write their metrics, for this server's life.

    prometheus_client's multiprocess mode: each worker writes its values to files
    of its own there, and ``/metrics`` adds them up. Set before anything imports
    prometheus_client (it reads the variable once) and before the workers fork;
    removed when the server stops, so no count outlives the server that made it.
    """
    try:
        directory = tempfile.mkdtemp(prefix="pkgcat-metrics-")
    except OSError as error:
        fail(
            f"PKGCAT_METRICS: cannot make a directory for the metrics in {tempfile.gettempdir()} "
            f"({error.strerror}); point TMPDIR at a writable directory",
            2,
        )
    os.environ[MULTIPROCESS_DIRECTORY] = directory
    try:
        yield directory
    finally:
        os.environ.pop(MULTIPROCESS_DIRECTORY, None)
        shutil.rmtree(directory, ignore_errors=True)


def _serve(settings: Settings) -> None:
    try:
        create_app(settings)  # fail here, in one line, rather than in every worker
    except Exception as error:  # any setting the app cannot be built from
        fail(str(error), 2)
    migrated(settings)
    if settings.workers > 1 and settings.shared_limit_url is None:
        log.warning(
            "with several workers and no PKGCAT_REDIS_URL, each worker keeps its own "
            "rate-limit counts; set PKGCAT_REDIS_URL=redis://HOST:PORT/DB to share one limit"
        )
    # Workers build their app from the environment: hand them the effective settings.
    os.environ.update(
        PKGCAT_DATABASE_URL=settings.database_url,
        PKGCAT_HOST=settings.host,
        PKGCAT_PORT=str(settings.port),
        PKGCAT_WORKERS=str(settings.workers),
    )
    # Last step before granian binds, to keep the time another server has to take the
    # port after the check as short as possible.
    refuse_a_taken_port(settings.host, settings.port)
    connections = open_files_for(settings.max_connections)
    if connections < settings.max_connections:
        log.warning(
            "the open-files limit lets each worker hold %d connections, not "
            "PKGCAT_MAX_CONNECTIONS=%d; raise its hard limit (ulimit -Hn, or LimitNOFILE= in "
            "a systemd unit)",
            connections,
            settings.max_connections,
        )
    loop = event_loop()
    _print_banner(settings, connections, loop)
    obey_stop_signals_in_forks()
    server = Granian(
        target=f"{worker_app.__module__}:{worker_app.__name__}",
        factory=True,
        interface=Interfaces.ASGI,
        # uvloop where installed (the server extra brings it, but on Windows and PyPy): every
        # target of `make bench-defaults` served 14 to 25% more on it (docs/benchmarks.md).
        loop=loop,
        address=settings.host,
        port=settings.port,
        workers=settings.workers,
        # By default granian stops the whole server when a worker dies. Instead, a worker
        # that dies (a crash, the OOM killer, kill -9) is replaced. If the same worker dies
        # again within about 5 s of being replaced, granian treats it as a crash loop and
        # stops the server (exit code 1).
        respawn_failed_workers=True,
        # A stop waits this long for each worker to finish its requests, then kills it:
        # a worker that cannot stop (hung, or stopped) must not keep the server from
        # ending. Every count is committed before its answer is sent, so a killed worker
        # loses none.
        workers_kill_timeout=settings.stop_timeout,
        # HTTP/1.1 only: granian's automatic choice between HTTP/1 and HTTP/2 reads a
        # connection's first bytes with no timeout, so a client that connects and sends
        # nothing held its connection (and one of the worker's connection slots) for
        # ever. HTTP/1's header-read timeout starts when the connection opens and again
        # after each answer, so idle, slow and silent connections are all closed after
        # it (docs/reliability.md, "Slow clients").
        http=HTTPModes.http1,
        # A worker stops accepting at this many open connections (granian's
        # "backpressure"); further ones wait in the kernel's listen queue.
        backpressure=connections,
        http1_settings=HTTP1Settings(
            header_read_timeout=settings.header_read_timeout * 1000,
            keep_alive=True,
            # Bounds a request's headers (431 past it) and what an answer queues for the
            # socket at once: large files sent whole go faster with more (docs/configuration.md).
            max_buffer_size=settings.connection_buffer_bytes,
        ),
        # The app writes its own access line (pkgcat.access): granian's would hold the query,
        # and the query can hold the key.
        log_access=False,
        log_level=LogLevels(settings.log_level),
        log_dictconfig=logging_config(settings),  # applied in the server and in each worker
    )
    # granian's main thread sleeps on this event until a signal's handler sets it. The kernel
    # may hand SIGINT or SIGTERM to another thread of the server, and Python runs handlers
    # only in the main thread, once it wakes: with granian's endless wait, that stop was
    # lost and the server served on. This event wakes the main thread twice a second.
    server.main_loop_interrupt = WakefulEvent()
    server.serve()


class WakefulEvent(threading.Event):
    """A :class:`threading.Event` whose endless :meth:`wait` wakes up every ``tick`` seconds.

    Each wake-up lets the main thread run the signal handlers that another thread received.
    """

    tick = 0.5

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is not None:
            return super().wait(timeout)
        while not super().wait(self.tick):
            pass
        return True


FILES_RESERVED = 256
"""Open files a worker needs besides its connections: database and Redis connections,
its listener, logs, the libraries' own."""


def open_files_for(connections: int) -> int:
    """Raise this process's soft limit on open files so that a worker can hold ``connections``.

    The workers inherit the limit. The soft limit is raised up to the hard limit,
    never lowered; returns how many connections a worker can hold within it. (granian
    2.8 raises the soft limit to the hard one when it is imported; this neither relies
    on that nor undoes it, and it is what finds the cap that fits.)
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + FILES_RESERVED
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return connections
    raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    except (ValueError, OSError):  # above the kernel's own ceiling (fs.nr_open)
        raised = soft
    return max(16, min(connections, raised - FILES_RESERVED))


def event_loop() -> Loops:
    """The workers' event loop: uvloop if it can be imported, else asyncio's own."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return Loops.asyncio
    return Loops.uvloop


def _print_banner(settings: Settings, connections: int, loop: Loops) -> None:
    """What is being served, from where, and where to look: on stderr, once, before serving.

    With ``PKGCAT_LOG_FORMAT=json``, one log record, so that every line is JSON.
    """
    base = f"http://{settings.host}:{settings.port}"
    workers = f"{settings.workers} worker{'s' if settings.workers > 1 else ''} on {loop.value}"
    shared = settings.shared_limit_url
    limiter = shown_url(shared) if shared else "in this process"
    if settings.log_format == "json":
        log.info(
            "pkgcat %s: serving the Package Catalogue API at %s/1.0/ (database %s, %s, "
            "shape %s, rate limit %s, limiter %s)",
            __version__,
            base,
            shown_url(settings.database_url),
            workers,
            settings.shape,
            settings.rate_limit,
            limiter,
        )
        return
    lines = [
        f"pkgcat {__version__}: serving the Package Catalogue API",
        f"  database  {shown_url(settings.database_url)}",
        f"  workers   {workers}, shape {settings.shape}, rate limit {settings.rate_limit}",
        f"  limiter   {limiter}",
        f"  clients   up to {connections} connections per worker, "
        f"headers within {settings.header_read_timeout} s, "
        f"bodies within {settings.body_read_timeout} s",
        f"  API       {base}/1.0/",
        f"  docs      {base}/docs",
    ]
    if settings.store_url is not None:
        lines.append(f"  store     {settings.store_url} (payments: {settings.store_platform})")
        lines.append(f"  mail      {_mail_line(settings)}")
    if settings.metrics:
        guard = "Bearer PKGCAT_METRICS_TOKEN" if settings.metrics_token else "no token"
        lines.append(f"  metrics   {base}/metrics ({guard})")
    stderr.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def _mail_line(settings: Settings) -> str:
    """Where the store's sign-in codes go, for the banner."""
    if settings.mail_backend == "console":
        return "console: sign-in codes are written to this output and log (development only)"
    return f"SMTP {settings.smtp_host}:{settings.smtp_port}"


def worker_app() -> ApiApp:
    """The factory granian calls in each worker: tie the worker to the server, then build the app."""
    die_with_parent()
    return app_from_environment()


def refuse_a_taken_port(host: str, port: int) -> None:
    """Exit with code 2 and one line if ``host:port`` cannot be bound for this server.

    granian (2.8) binds each worker's listener with SO_REUSEPORT on Linux, and no option
    turns that off. A second server on a port that one already serves therefore starts
    without an error, and the kernel splits the connections between the two. This probe
    binds without SO_REUSEPORT, so it collides with any socket listening there: another
    ``pkgcat serve``, or any other program, on this address or on the wildcard address.
    It does set SO_REUSEADDR, like the server, so that connections a stopped server left
    in TIME_WAIT do not count as the port being in use.

    The probe is closed before granian binds: holding it open would make granian's own
    binds fail. Another server whose check falls in the fraction of a second between the
    two (the workers bind once their app is built) can still share the port.
    """
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        fail(f"cannot listen on {address}: {error.strerror}", 2)
    with socket.socket(family, kind, proto) as probe:
        if os.name == "posix":  # on Windows, SO_REUSEADDR would let the probe bind over a listener
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(sockaddr)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                fail(
                    f"{address} is already in use; stop the other server or choose another --port",
                    2,
                )
            fail(f"cannot listen on {address}: {error.strerror}", 2)
