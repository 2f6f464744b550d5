"""Worker processes of ``pkgcat serve`` never outlive the server that started them.

granian's process manager stops and respawns its workers, but only while it runs.
Killed by SIGKILL or by the OOM killer, it cannot stop them, and they would go on
serving the port as orphans that nothing stops or replaces, so the next
``pkgcat serve`` would find the port taken. :func:`die_with_parent`, called in each
worker as it starts, asks the kernel to kill the worker when its parent dies (Linux
only, ``prctl(PR_SET_PDEATHSIG)``; elsewhere it does nothing).

:func:`obey_stop_signals_in_forks`, called in the server before it starts its
workers, makes sure a worker obeys a stop that arrives while it is still starting, and
:func:`obey_stops_noted_between_runs`, called in each worker's lifespan startup, one that
arrives while its event loop is between two runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading

STOP_CHECK_EVERY = 0.5
"""Seconds between two wake-ups of a uvloop worker's loop for the stop signals it noted
while it was not running (:func:`obey_stops_noted_between_runs`)."""

PR_SET_PDEATHSIG = 1
"""From ``<linux/prctl.h>``: set the signal the kernel sends this process when its parent dies."""

PARENT_DEATH_SIGNAL = signal.SIGKILL
"""SIGKILL, not SIGTERM: the worker must go even if it could not stop gracefully. A
SIGTERM can be caught, and the graceful drain it starts has no end date once the
parent, which would enforce one, is gone. Nothing in a worker needs a clean exit:
each usage count is committed before its response is sent."""


def die_with_parent() -> bool:
    """Have this process killed when the process that started it dies.

    This applies only to a process started by :mod:`multiprocessing` (granian starts
    its workers that way), and only on Linux. Elsewhere, and in any other process
    (a test, another server calling the app factory), nothing happens. Returns
    whether the kernel will send the signal.
    """
    parent = multiprocessing.parent_process()
    if parent is None or sys.platform != "linux":
        return False
    if not _set_parent_death_signal(PARENT_DEATH_SIGNAL):
        return False
    # The request only covers a parent death that happens after it. If the server died
    # between the fork and now, the worker has already been given to another parent
    # (init or a subreaper), and no signal will come. The pid that multiprocessing
    # recorded at the start tells whether that happened.
    if os.getppid() != parent.pid:
        os.kill(os.getpid(), PARENT_DEATH_SIGNAL)
    return True


def _set_parent_death_signal(signum: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, signum)`` through libc; False if it cannot be made.

    The kernel sends the signal when the *thread* that forked this process ends, not
    when the whole process does. granian forks its workers, including respawned ones,
    from its main thread, which lasts as long as the server.
    """
    try:
        # CDLL(None) gives the symbols already loaded into the interpreter, libc among them.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    result: int = prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    return result == 0


def obey_stop_signals_in_forks() -> None:
    """Start every process forked from now on with SIGINT and SIGTERM at their defaults.

    They stay so until the process installs handlers of its own, as granian's workers do
    before they serve. A forked worker would otherwise inherit the server's handlers, which
    only wake the server's main loop, a loop that does not run in the worker. A stop that
    arrives while the worker is still starting (Ctrl-C, or ``pkgcat serve`` stopped right
    after it started) would be lost, and the server would wait for that worker forever.

    The two signals are blocked across the fork and unblocked in the child only once their
    handlers are back at the defaults: a stop sent meanwhile, even while other after-fork
    hooks run first (coverage.py's, under the tests), waits and then ends the worker. A
    worker started by exec rather than fork has the default handlers anyway.
    """
    os.register_at_fork(
        before=_block_stop_signals,
        after_in_parent=_unblock_stop_signals,
        after_in_child=_default_stop_signals,
    )


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _block_stop_signals() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)


def _unblock_stop_signals() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _default_stop_signals() -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    _unblock_stop_signals()  # a stop that arrived since the fork is delivered now


def obey_stops_noted_between_runs(loop: asyncio.AbstractEventLoop) -> None:
    """Have a uvloop ``loop`` handle, while it runs, the stop signals it noted while it did not.

    granian hands a worker's SIGINT and SIGTERM to its event loop, runs the app's lifespan
    startup in one run of the loop and serves in a second. uvloop listens for signals only
    while it runs: one that comes before or between those runs is noted, and handled only
    when another signal wakes the loop, so a stop sent then waited for the stop timeout and
    the kill. Every ``STOP_CHECK_EVERY`` seconds, while it runs, the loop is woken as a
    signal would wake it (a null byte on its wake-up descriptor), and handles what it noted.
    asyncio's loop listens between runs too, and is left alone.
    """
    try:
        from uvloop import Loop
    except ImportError:
        return
    if isinstance(loop, Loop) and threading.current_thread() is threading.main_thread():
        loop.call_later(STOP_CHECK_EVERY, _wake_for_noted_signals, loop)


def _wake_for_noted_signals(loop: asyncio.AbstractEventLoop) -> None:
    # The descriptor the loop set for this run, read by setting it again as uvloop sets it. A
    # signal in between writes no byte, but the loop notes it all the same, and the byte below
    # has it handled.
    descriptor = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(descriptor, warn_on_full_buffer=False)
    if descriptor >= 0:
        with contextlib.suppress(BlockingIOError, InterruptedError):  # full: woken anyway
            os.write(descriptor, b"\0")
    loop.call_later(STOP_CHECK_EVERY, _wake_for_noted_signals, loop)
