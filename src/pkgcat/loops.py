"""The running event loop, asked for on the request path without a system call.

On Python 3.11, :func:`asyncio.get_running_loop` (and :func:`asyncio.current_task`,
which calls it) makes a ``getpid`` system call each time, to tell a forked child's
loop from its parent's (Python 3.12 dropped it). A served request asked for it twice (its
deadline's task, its count), three times with the rate limit in Redis
(docs/benchmarks.md, "System calls on the request path").

A :class:`RunningLoop` remembers the loop asyncio named, with the thread it ran in and the
process's fork count. While that loop runs, the same thread asks and the process has not
forked since, it answers with it, for the price of a few attribute reads; otherwise it asks
asyncio again. A thread runs one loop at a time, so the answer is the loop asyncio would
give, for each thread, after a loop ends and another starts (tests, ``asyncio.run``
twice), and in a child forked while the loop ran. The one case it cannot tell is a loop
that stopped in this thread and now runs in another while this thread runs a third:
nothing in pkgcat moves a loop between threads. On Python 3.12 and later it costs about
what asking asyncio does.
"""

from __future__ import annotations

import asyncio
import os
from threading import get_ident

_forks = 0
"""How many times this process's line has forked (0 in the first process)."""


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


class RunningLoop:
    """Call it for the running loop of the calling thread (a :exc:`RuntimeError` with none).

    Each object that serves one loop keeps one: the cost is one remembered loop each.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # The loop, the thread and the fork count it was seen with, as one value: a thread
        # switch between two separate writes could pair one thread's loop with another's id.
        self._seen: tuple[asyncio.AbstractEventLoop, int, int] | None = None

    def __call__(self) -> asyncio.AbstractEventLoop:
        seen = self._seen
        if seen is not None:
            loop, thread, forks = seen
            if thread == get_ident() and forks == _forks and loop.is_running():
                return loop
        loop = asyncio.get_running_loop()
        self._seen = (loop, get_ident(), _forks)
        return loop
