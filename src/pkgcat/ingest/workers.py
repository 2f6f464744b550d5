"""Mapping many stanzas at once, on several cores when there are enough of them.

Parsing is nearly all of an import's time and pure Python, so a large index
(at least :data:`PARALLEL_FROM` stanzas to parse) is shared out: this process
maps the first part while forked worker processes map the rest, in tasks of
:data:`TASK` stanzas. A forked worker starts in milliseconds with the modules imported and
the indexes already in its memory (:data:`_INDEXES`, set just before the fork),
so a task is only a list of offsets; what comes back is the records. Workers
never touch the database. Results come back in index order, so the outcome is
the same as with one process. Where fork is not available (not Linux), and for
small imports, everything runs in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from pkgcat.ingest.control import Mapper, Skip, quiet_python_debian
from pkgcat.ingest.limits import ImportLimits
from pkgcat.storage.records import Record

PARALLEL_FROM = 20_000
"""Below this many stanzas to parse, starting workers costs more than it saves."""
MAX_JOBS = 4
TASK = 4000
"""Stanzas per task of a worker."""

Mapped = Record | str
"""A stanza's record, or the reason it was skipped."""
Slice = tuple[int, int, int]
"""A stanza: which index (position in the list), start and end offsets."""

_INDEXES: Sequence[bytes] = ()
"""The indexes being mapped, for forked workers to read from the memory they inherit."""


def default_jobs() -> int:
    """The processes an import may use: the CPUs this process may run on, at most four."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(available, MAX_JOBS))


def _map(
    base_url: str,
    limits: ImportLimits,
    slices: Sequence[Slice],
    indexes: Sequence[bytes] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Mapped]:
    data = _INDEXES if indexes is None else indexes
    mapper = Mapper(base_url, limits)
    out: list[Mapped] = []
    with quiet_python_debian():
        for count, (index, start, end) in enumerate(slices, start=1):
            try:
                out.append(mapper.map(data[index][start:end]))
            except Skip as skip:
                out.append(str(skip))
            if progress is not None and count % 500 == 0:
                progress(500)
    return out


def map_stanzas(
    base_url: str,
    limits: ImportLimits,
    indexes: Sequence[bytes],
    slices: Sequence[Slice],
    jobs: int,
    progress: Callable[[int], None] | None = None,
) -> list[Mapped]:
    """Map every stanza, in order; ``progress`` hears of stanzas done (an estimate when parallel)."""
    global _INDEXES
    forkable = "fork" in multiprocessing.get_all_start_methods()
    if jobs <= 1 or len(slices) < PARALLEL_FROM or not forkable:
        return _map(base_url, limits, slices, indexes, progress)
    own = -(-len(slices) // jobs)
    rest = slices[own:]
    # The workers' share goes in small tasks: their results travel back in small pickles.
    tasks = [rest[i : i + TASK] for i in range(0, len(rest), TASK)]
    # This process maps one share of ``jobs``: its pace stands for all of them.
    scaled = None if progress is None else (lambda n: progress(n * jobs))
    _INDEXES = indexes
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs - 1, mp_context=context) as pool:
            others = [pool.submit(_map, base_url, limits, task) for task in tasks]
            mapped = _map(base_url, limits, slices[:own], indexes, scaled)
            for future in others:
                mapped.extend(future.result())
    finally:
        _INDEXES = ()
    return mapped
