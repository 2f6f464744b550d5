"""What each test costs: a pytest plugin, and a summary of what it wrote (docs/development.md).

``pytest -p tests.costs ...`` writes one JSON line per test to ``PKGCAT_TEST_COSTS``
(``test-costs``; a file per xdist worker, its name suffixed): the test's wall time, the CPU
time of its process (every thread, set-up and teardown included), that of the child
processes it waited for, and the programs it started. CPU is the figure to compare on a
shared machine, where wall time follows the others' load. ``python -m tests.costs FILE...``
sums them by file and by kind of test.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

_started: list[str] = []
_out: IO[str] | None = None
_spawn = subprocess.Popen._execute_child  # type: ignore[attr-defined]  # private, but one place


def _counted(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> Any:
    argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
    program = Path(argv[0]).name
    if program in ("pkgcat", "python", "python3") and len(argv) > 1:
        program += f" {argv[1]}"  # the command, or -c / -m
    _started.append(program)
    return _spawn(self, args, *rest, **options)


subprocess.Popen._execute_child = _counted  # type: ignore[attr-defined]  # see _spawn


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    global _out
    if _out is None:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        name = os.environ.get("PKGCAT_TEST_COSTS", "test-costs")
        _out = open(f"{name}.{worker}" if worker else name, "a")  # noqa: SIM115  # the run's
    _started.clear()
    began, (own, children) = time.monotonic(), _cpu()
    try:
        return (yield)
    finally:
        after_own, after_children = _cpu()
        line = {
            "test": item.nodeid,
            "wall": time.monotonic() - began,
            "cpu": after_own - own,
            "children": after_children - children,
            "started": _started[:],
        }
        _out.write(json.dumps(line) + "\n")
        _out.flush()


def kind(started: list[str]) -> str:
    """What a test's processes make it: a server, another command, dpkg-deb alone, none."""
    if any(p in ("pkgcat serve", "pkgcat deliver") for p in started):
        return "starts a server process"
    if any(p.startswith(("pkgcat", "python")) for p in started):
        return "starts another Python process"
    if started and all(p == "dpkg-deb" for p in started):
        return "runs dpkg-deb only"
    return "starts other programs" if started else "in-process"


def main(paths: list[str]) -> None:
    rows = [json.loads(line) for path in paths for line in Path(path).read_text().splitlines()]
    print(f"{len(rows)} tests: {sum(r['cpu'] + r['children'] for r in rows):.0f} s of CPU")
    groups: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for row in rows:
        for key in (kind(row["started"]), row["test"].split("::")[0]):
            group = groups[key]
            group[0] += 1
            group[1] += row["cpu"] + row["children"]
            group[2] += row["wall"]
    print(f"{'tests':>6} {'CPU s':>7} {'wall s':>7}")
    for key, (count, cpu, wall) in sorted(groups.items(), key=lambda g: -g[1][1])[:40]:
        print(f"{count:>6.0f} {cpu:>7.1f} {wall:>7.1f}  {key}")
    programs = Counter(p for row in rows for p in row["started"])
    print("started:", ", ".join(f"{p} {n}" for p, n in programs.most_common()))


if __name__ == "__main__":
    main(sys.argv[1:])
