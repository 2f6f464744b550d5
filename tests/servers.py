"""A real ``pkgcat serve`` process over a freshly seeded demo catalogue, on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx
from sqlalchemy import text
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.logs import ACCESS_LOGGER
from pkgcat.storage.engine import engine_for

# The console script installed beside the interpreter running the tests.
PKGCAT = str(Path(sys.executable).with_name("pkgcat"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def free_ports(count: int) -> list[int]:
    """``count`` ports free now, all different: each held open until all are chosen (one
    :func:`free_port` after another may hand out the same port twice)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


@dataclass
class Served:
    base: str
    port: int
    apps: list[dict[str, Any]]
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log: IO[str]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a ``pkgcat serve`` as Ctrl-C would (SIGINT); kill it if it is still there after 15 s."""
    process.send_signal(signal.SIGINT)  # does nothing if it has exited already
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def environment(database_url: str, **settings: str) -> dict[str, str]:
    """This process's environment without any PKGCAT_ setting, then the database and ``settings``.

    ``settings`` are named as in :class:`pkgcat.config.Settings`: ``rate_limit="5/minute"``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env["PKGCAT_DATABASE_URL"] = database_url
    env |= {f"PKGCAT_{name.upper()}": value for name, value in settings.items()}
    return env


def command(env: dict[str, str], *args: str) -> str:
    """``pkgcat ARGS`` run in this process (Click's runner) with ``env``'s settings; its stdout.

    For what a test's server is given to serve (a seeded catalogue, a key): the test is about
    the server, and a command's own process cost a second of CPU at every call (its imports),
    where the command itself takes a few milliseconds. The command sees the settings of
    ``env`` and no other ``PKGCAT_`` variable, as a process started with ``env`` would, and
    the logging it sets up is undone after it.
    """
    settings: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("PKGCAT_") and name not in env
    }
    settings |= {name: value for name, value in env.items() if name.startswith("PKGCAT_")}
    with logging_kept():
        ran = CliRunner().invoke(cli, list(args), env=settings, catch_exceptions=False)
    assert ran.exit_code == 0, f"pkgcat {' '.join(args)}: {ran.output}"
    return ran.stdout


@contextmanager
def logging_kept() -> Iterator[None]:
    """The process's logging as it was before the block (a command run in-process sets it up)."""
    names = ("", "pkgcat", ACCESS_LOGGER, "_granian", "granian.access")
    loggers = [logging.getLogger(name) for name in names]
    saved = [(logger, logger.level, logger.handlers[:], logger.propagate) for logger in loggers]
    switches = ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing")
    recorded = {name: getattr(logging, name) for name in switches}
    try:
        yield
    finally:
        for logger, level, handlers, propagate in saved:
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate
        for name, value in recorded.items():
            setattr(logging, name, value)


def seed(env: dict[str, str]) -> list[dict[str, Any]]:
    """Seed the demo catalogue into the environment's database; its applications and keys.

    The catalogue alone: these servers are about the API, and start without the demo's store
    (its .debs, signing key and webhook endpoint: tests/browser/test_demo_store.py)."""
    apps: list[dict[str, Any]] = json.loads(command(env, "demo", "--json", "--catalogue-only"))[
        "applications"
    ]
    return apps


def granted_key(env: dict[str, str], app: dict[str, Any], scope: str) -> str:
    """A new secret key of a seeded ``app`` with ``scope`` besides read, made by `pkgcat key create`."""
    granted = command(
        env, "key", "create", "--source", app["source"], "--app", app["name"], "--scope", scope,
        "--json",
    )  # fmt: skip
    key: str = json.loads(granted)["secret_key"]
    return key


@contextmanager
def serving(
    env: dict[str, str],
    log: Path,
    *,
    workers: int = 1,
    args: Sequence[str] = (),
    apps: Sequence[dict[str, Any]] = (),
    port: int | None = None,
    session: bool = False,
) -> Iterator[Served]:
    """``pkgcat serve`` on ``port`` (or a free one) until the block ends, then stopped (SIGINT).

    The server counts as started once one worker says it is ready (``/readyz``); with
    several, the others may still be starting. Its output goes to ``log``. With ``session``
    it runs in a session (and process group) of its own, as a host's server does, so a
    test can kill all of it at once (``os.killpg(served.process.pid, SIGKILL)``).
    """
    port = port or free_port()
    output = log.open("w+")
    process = subprocess.Popen(
        [PKGCAT, "serve", "--port", str(port), "--workers", str(workers), *args],
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=session,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            assert process.poll() is None, f"the server exited while starting: {log.read_text()}"
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server was not ready within 30 s"
            time.sleep(0.05)  # polling for readiness, not timing anything
        yield Served(base=base, port=port, apps=list(apps), env=env, process=process, log=output)
    finally:
        stop(process)
        output.close()


def pasted(
    script: str, env: dict[str, str], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``script`` run by bash as if pasted into a shell of ``cwd`` (``set -e``: it stops at
    the first command that fails); its output and exit code."""
    return subprocess.run(
        ["bash", "-c", f"set -e\n{script}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def demo_server(
    directory: Path,
    *,
    workers: int = 1,
    args: Sequence[str] = (),
    database_url: str | None = None,
) -> Iterator[Served]:
    """Seed the demo (into ``directory``'s SQLite file unless a database is named) and serve it."""
    env = environment(database_url or f"sqlite:///{directory / 'served.db'}")
    apps = seed(env)
    with serving(env, directory / "server.log", workers=workers, args=args, apps=apps) as served:
        yield served


def counted(database_url: str) -> int:
    """Every request counted so far, of every application, as the database holds them."""
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            total = db.execute(text("SELECT coalesce(sum(count), 0) FROM usage_days"))
            return int(total.scalar_one())
    finally:
        engine.dispose()


def downloads_counted(database_url: str, package: str) -> int:
    """The whole downloads of ``package`` counted so far, every day, as the database holds them."""
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            found = db.execute(
                text("SELECT coalesce(sum(count), 0) FROM download_days WHERE package = :p"),
                {"p": package},
            )
            return int(found.scalar_one())
    finally:
        engine.dispose()


# Processes, as /proc shows them (Linux) ---------------------------------------------------------

WAIT = 10.0
"""Seconds a process has to reach the state a test waits for."""

T = TypeVar("T")


def poll(check: Callable[[], T | None], what: str, within: float = WAIT) -> T:
    """Call ``check`` until it returns something other than None, for at most ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {within} s"
        time.sleep(0.05)  # the pause between two looks, not a timing


# Processes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    """A process: its pid and start time, since a pid alone can be reused."""

    pid: int
    started: int  # clock ticks after boot, field 22 of /proc/PID/stat


def stat(pid: int, task: int | None = None) -> tuple[str, int, int] | None:
    """State, parent pid and start time of a process (or of one of its threads); None once gone."""
    path = f"/proc/{pid}/stat" if task is None else f"/proc/{pid}/task/{task}/stat"
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: count the fields after it.
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def running(proc: Proc) -> bool:
    """Whether any thread of the process still runs.

    A zombie has exited and only awaits its parent. The main thread of a killed process
    can be a zombie while its other threads are still exiting, with its files (and
    sockets) still open, so every thread is looked at.
    """
    found = stat(proc.pid)
    if found is None or found[2] != proc.started:
        return False
    try:
        tasks = os.listdir(f"/proc/{proc.pid}/task")
    except OSError:
        return False
    states = (stat(proc.pid, int(task)) for task in tasks)
    return any(state is not None and state[0] not in ("Z", "X") for state in states)


def children(parent: int) -> set[Proc]:
    """The running children of ``parent``: for a `pkgcat serve`, its workers."""
    found: set[Proc] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (info := stat(int(entry.name))) is not None:
            state, ppid, started = info
            if ppid == parent and state != "Z":
                found.add(Proc(int(entry.name), started))
    return found


def connection_owner(port: int, peer_port: int, pids: Iterable[int]) -> int | None:
    """Which of ``pids`` holds the TCP connection from 127.0.0.1:``port`` to 127.0.0.1:``peer_port``.

    A server on 127.0.0.1 sees a client's port; /proc/net/tcp gives the socket's inode for
    that pair of ports, and /proc/PID/fd names the process holding it (``socket:[inode]``).
    None when the connection is gone or none of ``pids`` holds it.
    """
    local, remote = f"0100007F:{port:04X}", f"0100007F:{peer_port:04X}"
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[2] == remote:
            inode = fields[9]
            break
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # the process has gone
            continue
        for descriptor in descriptors:
            with contextlib.suppress(OSError):  # closed meanwhile
                if os.readlink(f"/proc/{pid}/fd/{descriptor}") == wanted:
                    return pid
    return None


def kill_marked(database_url: str) -> int:
    """Kill every process still running with ``database_url`` in its environment; how many.

    Every process a test's server starts carries the URL, workers included (they are
    forked): whatever still runs with it when the test ends, even after a failure, or
    orphaned by a killed server, is killed by this.
    """
    mark = f"PKGCAT_DATABASE_URL={database_url}".encode()
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if mark in environment:
            with contextlib.suppress(ProcessLookupError):  # it has just exited
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed


# Load -------------------------------------------------------------------------------------------

DETAILS = "/1.0/package/details.json"

Request = tuple[str, str, str]
"""A details request: the server's base URL, the secret key, the package."""


def send_all(
    requests: Sequence[Request],
    clients: int,
    after_each: Callable[[int], None] | None = None,
) -> list[int | None]:
    """Send every details request, ``clients`` at a time; each one's status, in order.

    Each client is a thread with a keep-alive ``httpx.Client`` per server (threads, as
    httpx's async client runs at a small fraction of their rate). A request whose
    connection fails (its worker killed, say) gets None. ``after_each`` is called with
    the number of requests finished so far, once per request, one call at a time.
    """
    local = threading.local()
    opened: list[httpx.Client] = []
    finished = 0
    lock = threading.Lock()

    def one(request: Request) -> int | None:
        nonlocal finished
        base, key, package = request
        sessions: dict[str, httpx.Client] = local.__dict__.setdefault("sessions", {})
        if base not in sessions:
            sessions[base] = httpx.Client(base_url=base, timeout=30)
            with lock:
                opened.append(sessions[base])
        try:
            response = sessions[base].get(
                DETAILS, params={"package": package}, headers={"Authorization": f"Bearer {key}"}
            )
            status: int | None = response.status_code
        except httpx.TransportError:
            status = None
        with lock:
            finished += 1
            if after_each is not None:
                after_each(finished)
        return status

    try:
        with ThreadPoolExecutor(clients) as pool:
            return list(pool.map(one, requests))
    finally:
        for session in opened:
            session.close()
