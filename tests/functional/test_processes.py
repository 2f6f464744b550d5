"""The processes of a real `pkgcat serve`: its workers, their respawn, a taken port, a killed server.

Processes and sockets are found through /proc (Linux): a server's workers are its
children, and /proc/net/tcp tells which of them holds a listening socket or the server
end of a connection.
"""

from __future__ import annotations

import asyncio
import ctypes
import http.client
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvloop

from pkgcat.app import create_app
from pkgcat.config import Settings
from pkgcat.storage.migrate import upgrade
from tests.servers import (
    PKGCAT,
    WAIT,
    Proc,
    Served,
    children,
    demo_server,
    environment,
    free_port,
    kill_marked,
    poll,
    running,
    seed,
    serving,
    stat,
    stop,
)

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; PR_SET_PDEATHSIG is Linux's"),
]

START = 30.0
"""Seconds a `pkgcat serve` has to start, or to fail to (the same bound as tests.servers)."""

LISTEN, ESTABLISHED = "0A", "01"  # TCP states as /proc/net/tcp writes them

# Sockets ----------------------------------------------------------------------------------------


def held_sockets(pid: int) -> set[int]:
    """Inodes of the sockets a process holds open."""
    inodes: set[int] = set()
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for descriptor in descriptors:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def tcp_sockets(state: str, local_port: int, remote_port: int | None = None) -> set[int]:
    """Inodes of this machine's TCP sockets in ``state`` on ``local_port`` (and ``remote_port``)."""
    inodes: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, remote = (int(end.rsplit(":", 1)[1], 16) for end in fields[1:3])
            if fields[3] == state and local == local_port and remote_port in (None, remote):
                inodes.add(int(fields[9]))
    return inodes


def listening_workers(served: Served) -> set[Proc]:
    """The server's workers that hold a socket listening on its port."""
    listeners = tcp_sockets(LISTEN, served.port)
    return {w for w in children(served.process.pid) if held_sockets(w.pid) & listeners}


def all_listening(served: Served, count: int) -> set[Proc]:
    """Wait until ``count`` workers of the server listen on its port; return them."""
    return poll(
        lambda: found if len(found := listening_workers(served)) == count else None,
        f"{count} workers listening on port {served.port}",
        within=START,
    )


def answering_worker(served: Served, workers: set[Proc]) -> Proc | None:
    """GET /healthz over a new connection; the worker that holds the server's end of it."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=WAIT)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        response.read()
        assert response.status == 200
        # Kept alive: the server's end is still open, and its remote port is ours.
        client_port: int = connection.sock.getsockname()[1]
        server_end = tcp_sockets(ESTABLISHED, served.port, client_port)
        return next((w for w in workers if held_sockets(w.pid) & server_end), None)
    finally:
        connection.close()


def workers_answering(served: Served, workers: set[Proc]) -> set[Proc]:
    """Open connections until every worker in ``workers`` has answered one.

    The kernel picks a listener for each connection by a hash of its addresses, so
    64 connections all missing one of two workers would take odds of 2**-63.
    """
    answered: set[Proc] = set()
    for _ in range(64):
        answerer = answering_worker(served, workers)
        if answerer is not None:
            answered.add(answerer)
        if answered == workers:
            break
    return answered


def api_answers(served: Served) -> None:
    """A real API request, on a new connection, answers 200."""
    app = served.apps[0]
    usage = httpx.get(
        f"{served.base}/1.0/application/usage.json",
        headers={"Authorization": f"Bearer {app['secret_key']}"},
        timeout=WAIT,
    )
    assert usage.status_code == 200, usage.text


# Cleanup ----------------------------------------------------------------------------------------


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """The database URL of the test's servers, which also marks their processes.

    Every process a test starts carries the URL in its environment, workers included
    (they are forked). Whatever still runs with it when the test ends, even after a
    failure, or orphaned by a killed server, is killed then.
    """
    url = f"sqlite:///{tmp_path / 'served.db'}"
    upgrade(url)  # an empty catalogue: `serve` refuses a database that is missing
    yield url
    kill_marked(url)


def serve_on_taken_port(port: int, env: dict[str, str], log: Path) -> tuple[int, str]:
    """Run a second `pkgcat serve` on ``port``; its exit code and everything it wrote."""
    with log.open("wb") as output:
        second = subprocess.Popen(
            [PKGCAT, "serve", "--port", str(port)], env=env, stdout=output, stderr=output
        )
        try:
            code = poll(second.poll, "the second server exits", within=START)
        finally:
            stop(second)  # only does something if it is still running: the test fails then
    return code, log.read_text()


def taken_message(port: int) -> str:
    address = f"127.0.0.1:{port}"
    return f"error: {address} is already in use; stop the other server or choose another --port"


# A server that dies before its worker asks to die with it: the worker plays granian's, and
# checks in a file whether it got through die_with_parent().
LATE_WORKER = """
import multiprocessing, os, sys, time
from pathlib import Path
from pkgcat.workers import die_with_parent

def worker(log):
    deadline = time.monotonic() + 10
    while os.getppid() == multiprocessing.parent_process().pid:
        assert time.monotonic() < deadline, "the server did not exit"
        time.sleep(0.01)
    Path(log).write_text("calling")
    die_with_parent()
    Path(log).write_text("survived")

if __name__ == "__main__":
    child = multiprocessing.get_context("fork").Process(target=worker, args=(sys.argv[1],))
    child.start()
    Path(sys.argv[2]).write_text(str(child.pid))
    os._exit(0)  # at once, as a killed server would, without waiting for the worker
"""


# Tests ------------------------------------------------------------------------------------------


def test_two_workers_both_answer(tmp_path: Path, database_url: str) -> None:
    with demo_server(tmp_path, workers=2) as served:
        workers = all_listening(served, 2)
        assert workers_answering(served, workers) == workers
        api_answers(served)


def test_a_killed_worker_is_replaced_while_the_other_answers(
    tmp_path: Path, database_url: str
) -> None:
    with demo_server(tmp_path, workers=2) as served:
        workers = all_listening(served, 2)
        victim = min(workers, key=lambda w: w.pid)
        (survivor,) = workers - {victim}
        os.kill(victim.pid, signal.SIGKILL)
        poll(lambda: None if running(victim) else True, "the killed worker exits")
        # No gap in service: the survivor still listens, and requests succeed at once.
        assert survivor in listening_workers(served)
        for _ in range(5):
            api_answers(served)

        after = all_listening(served, 2)
        assert survivor in after
        assert victim not in after
        (replacement,) = after - {survivor}
        assert workers_answering(served, after) == {survivor, replacement}
        api_answers(served)
        assert served.process.poll() is None


def test_a_second_server_on_the_same_port_exits_with_code_2(
    tmp_path: Path, database_url: str
) -> None:
    with demo_server(tmp_path, workers=2) as served:
        workers = all_listening(served, 2)
        code, output = serve_on_taken_port(served.port, served.env, tmp_path / "second.log")
        assert (code, output.strip()) == (2, taken_message(served.port))
        # The first server never noticed: same workers, the only listeners, still answering.
        assert served.process.poll() is None
        assert listening_workers(served) == workers
        assert len(tcp_sockets(LISTEN, served.port)) == 2
        assert workers_answering(served, workers) == workers


@pytest.mark.parametrize("reuseport", [False, True], ids=["plain", "reuseport"])
def test_a_port_another_program_listens_on_is_refused(
    tmp_path: Path, database_url: str, reuseport: bool
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env["PKGCAT_DATABASE_URL"] = database_url
    with socket.socket() as other:
        # With SO_REUSEPORT, as a granian server sets it, the port could be shared silently.
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, int(reuseport))
        other.bind(("127.0.0.1", 0))
        other.listen()
        port: int = other.getsockname()[1]
        code, output = serve_on_taken_port(port, env, tmp_path / "second.log")
        assert (code, output.strip()) == (2, taken_message(port))
        assert tcp_sockets(LISTEN, port) == {os.fstat(other.fileno()).st_ino}


def test_the_workers_of_a_killed_server_exit_by_themselves(
    tmp_path: Path, database_url: str
) -> None:
    with demo_server(tmp_path, workers=2) as served:
        workers = all_listening(served, 2)
        served.process.kill()
        served.process.wait(timeout=WAIT)
        poll(
            lambda: None if any(running(w) for w in workers) else True,
            "every worker of the killed server exits",
        )
        assert not tcp_sockets(LISTEN, served.port)


def test_a_worker_whose_server_died_before_it_started_kills_itself(
    tmp_path: Path, database_url: str
) -> None:
    env = {**os.environ, "PKGCAT_DATABASE_URL": database_url}  # marks them for the cleanup
    log, pid_file = tmp_path / "worker.log", tmp_path / "worker.pid"
    with (tmp_path / "server.log").open("wb") as output:
        server = subprocess.run(
            [sys.executable, "-c", LATE_WORKER, str(log), str(pid_file)],
            env=env,
            stdout=output,
            stderr=output,
            timeout=START,
        )
    assert server.returncode == 0, (tmp_path / "server.log").read_text()
    worker = int(pid_file.read_text())
    poll(
        lambda: None if (found := stat(worker)) is not None and found[0] != "Z" else True,
        "the orphaned worker exits",
    )
    assert log.read_text() == "calling"


def test_a_server_stopped_while_its_workers_start_stops(tmp_path: Path, database_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PKGCAT_")}
    env["PKGCAT_DATABASE_URL"] = database_url
    with (tmp_path / "server.log").open("wb") as output:
        server = subprocess.Popen(
            [PKGCAT, "serve", "--port", str(free_port()), "--workers", "2"],
            env=env,
            stdout=output,
            stderr=output,
        )
        try:
            # Stopped as soon as its workers exist, most likely while they build their app.
            poll(
                lambda: True if len(children(server.pid)) == 2 else None,
                "two workers",
                within=START,
            )
            server.send_signal(signal.SIGINT)
            assert poll(server.poll, "the server stops") == 0
        finally:
            stop(server)


def test_a_worker_that_does_not_stop_is_killed_after_the_stop_timeout(
    tmp_path: Path, database_url: str
) -> None:
    env = environment(database_url, stop_timeout="2")
    seed(env)
    with serving(env, tmp_path / "server.log") as served:
        (worker,) = children(served.process.pid)
        os.kill(worker.pid, signal.SIGSTOP)  # a worker that cannot finish anything
        try:
            served.process.send_signal(signal.SIGINT)
            poll(served.process.poll, "the server stops although its worker does not")
            assert not running(worker)
        finally:
            if running(worker):
                os.kill(worker.pid, signal.SIGKILL)


def _signal_thread(pid: int, tid: int, signum: int) -> None:
    """tgkill(2): ``signum`` to one thread of process ``pid``, as the kernel may pick it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_TGKILL, pid, tid, signum) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill {pid} {tid}")


SYS_TGKILL = 234  # x86-64
"""The system call's number on x86-64 (glibc has no wrapper before 2.30)."""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="tgkill's number is x86-64's")
def test_a_stop_delivered_to_another_thread_of_the_server_stops_it(
    tmp_path: Path, database_url: str
) -> None:
    """The kernel hands a process's signal to any thread that does not block it; while the
    server's main thread waits, Python runs the handler only once that thread wakes up."""
    env = environment(database_url)
    seed(env)
    with serving(env, tmp_path / "server.log") as served:
        pid = served.process.pid
        others = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
        assert others, "the server runs threads besides its main one"
        _signal_thread(pid, others[0], signal.SIGINT)
        assert poll(served.process.poll, "the server stops") == 0


def test_a_stop_that_comes_between_the_event_loops_two_runs_is_obeyed(database_url: str) -> None:
    """As granian runs a worker: the stop signals go to the event loop, the app's lifespan
    startup runs in one run of the loop, and serving in a second. uvloop listens for signals
    only while it runs; a SIGTERM sent between the two runs must still stop the worker."""
    app = create_app(Settings(database_url=database_url))
    loop = uvloop.new_event_loop()
    previous = signal.getsignal(signal.SIGTERM)
    stopped: asyncio.Future[None] = loop.create_future()

    def on_stop() -> None:  # as granian's handler does: note the stop
        if not stopped.done():
            stopped.set_result(None)

    loop.add_signal_handler(signal.SIGTERM, on_stop)
    inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    outbox: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
    inbox.put_nowait({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    lifespan = loop.create_task(app(scope, inbox.get, outbox.put))
    try:
        assert loop.run_until_complete(outbox.get())["type"] == "lifespan.startup.complete"

        os.kill(os.getpid(), signal.SIGTERM)  # the loop is not running: it only notes it

        loop.run_until_complete(asyncio.wait_for(stopped, WAIT))
    finally:
        inbox.put_nowait({"type": "lifespan.shutdown"})
        loop.run_until_complete(lifespan)
        loop.remove_signal_handler(signal.SIGTERM)
        loop.close()
        signal.signal(signal.SIGTERM, previous)
