"""The running event loop, asked for on the request path without a system call.

On Python 3.11, :func:`asyncio.get_running_loop` (and :func:`asyncio.current_task`,
which calls it) makes a ``getpid`` system call each time, to tell a forked child's
loop from its parent's (Python 3.12 dropped it). A served request asked for it twice (its
deadline's task, its count), three times with the rate limit in Redis: removing the two
of the SQLite details request served 1 to 3% more (docs/benchmarks.md).

A :class:`RunningLoop` remembers the loop asyncio named and the thread it ran in. While
that loop runs and the same thread asks, it answers with it, for the price of an
attribute read; otherwise it asks asyncio again. A thread runs one loop at a time, so
the answer is the loop asyncio would give, for each thread, and after a loop ends
and another starts (tests, ``asyncio.run`` twice). The one case it cannot tell is a
loop that stopped in this thread and now runs in another while this thread runs a
third: nothing in pkgcat moves a loop between threads.
"""

from __future__ import annotations

import asyncio
from threading import get_ident


class RunningLoop:
    """Call it for the running loop of the calling thread (a :exc:`RuntimeError` with none).

    Each object that serves one loop keeps one: the cost is one remembered loop each.
    """

    __slots__ = ("_loop", "_thread")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0

    def __call__(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None and self._thread == get_ident() and loop.is_running():
            return loop
        loop = self._loop = asyncio.get_running_loop()
        self._thread = get_ident()
        return loop
