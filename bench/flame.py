"""Where a served details request's microseconds go, stage by stage, and its flame graph.

Seeds a throwaway SQLite database with ``pkgcat demo --json``, starts
``pkgcat serve`` and ``bench/baseline_app.py`` (granian, 1 worker, a body of the
details response's size) on free ports of 127.0.0.1, then:

1. measures the baseline and the details request with wrk (64 connections,
   2 threads), in interleaved rounds, without any profiler: req/s, p50, p99,
   and the CPU a request costs (the server's core is saturated, so
   1e6 / req/s microseconds: the core's busy share is printed, with a note when
   it was not saturated or another load shared it);
2. loads the details request again while ``py-spy record --format raw`` samples
   the granian worker (blocking, ``--threads --idle --full-filenames``), and
   sorts every sample of the worker's main Python thread into one stage with
   the rules of :data:`RULES` (granian's Rust threads have no Python frames:
   ignored);
3. loads it a third time while ``py-spy record --format flamegraph`` samples
   the worker as long and as often (:data:`FLAME_GRAPH`: blocking,
   ``--threads --function``, idle samples left out so the graph shows work,
   not waits): py-spy's own SVG, by default
   ``bench/results/raw/flame-details.svg`` (not in git), with the table's raw
   capture beside it (``.collapsed.txt``);
4. prints a Markdown table: each stage's share of the raw capture's samples
   and its microseconds per request (share x details' CPU per request), the
   baseline's CPU per request and what pkgcat adds over it, then the frames
   the rules left to "other".

About 60 s with the defaults (3 x 5 s per target, two 5 s profiles)::

    .venv/bin/python -m bench.flame
    .venv/bin/python -m bench.flame --rounds 1 --duration 3      # a quick look, about 30 s
    .venv/bin/python -m bench.flame --json bench/results/raw/flame.json --svg flame.svg

    # the code of another checkout (the server is started with this environment):
    PYTHONPATH=/path/to/checkout/src .venv/bin/python -m bench.flame

Needs wrk, py-spy next to the virtualenv's python (``pip install py-spy``) and
the right to ptrace the server (root, or ``kernel.yama.ptrace_scope`` = 0). On
a machine with two cores or more (and ``taskset``) the servers are pinned to
the first core, wrk and py-spy to the others (``--no-pin``: no pinning).

Reading the table: idle samples are kept in the raw capture, so the main
thread's samples cover the whole capture and their shares add up to the
core's time, which is what share x CPU per request assumes. "server
hand-off" holds granian's Python side, the event loop, the ASGI ``send``
calls and the loop's waits in the selector, while granian's Rust threads and
the kernel use the core. Rust threads that preempt the main thread, or hold
the GIL it waits for, are counted where the main thread waits, across the
stages (the report gives the main thread's share of the worker's CPU). py-spy
pauses the worker for every sample, so the profiled runs are slower than the
measured one (all are printed); only shares come from them. The flame graph
leaves most of the main thread's waits in the selector out, so its widths are shares
of the Python work and do not match the table's. py-spy still counts the
checkpoint thread's wait for work (``_worker``, a blocking queue read in C) as
active in most samples: ``--threads`` keeps it in a tower of its own, named,
beside the main thread's (``--gil`` would drop it, but also the SQLite calls
the main thread makes with the GIL released, the usage count's commit).

When a refactoring renames the request path's functions, update
:data:`RULES`: unmatched pkgcat frames land in "other", and the most frequent
are listed under the table. A few rules read a frame's source line (``await
send(...)``), from the served package's files as they were when the server
started: run it on a tree nobody is editing, or on a worktree.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import linecache
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers import children as children_of

from bench import details, postgres
from bench.loadgen import (
    BENCH_DIR,
    Round,
    Summary,
    Target,
    children,
    cpu_plan,
    fetch,
    find_wrk,
    pinned,
    run_wrk,
    start_server,
    summarize,
)

CONNECTIONS = 64
THREADS = 2
DEFAULT_SVG = BENCH_DIR / "results" / "raw" / "flame-details.svg"  # bench/results/raw/: git-ignored
UNSATURATED = 0.9  # below this share of a core, the report says the server was not saturated
SHARED = 0.75  # a worker with less than this share of its busy core shared it with another load
PROFILE_LEAD_S = 1  # wrk runs this long before py-spy starts, and as long after it stops

# --- the stages, and the rules that sort a sample into one -----------------------------------

OTHER = "other"
HAND_OFF = "server hand-off"
STAGES = (
    "query parsing",
    "key check",
    "catalogue generation",
    "rate limit",
    "usage count",
    "package lookup",
    "serialization",
    "response headers",
    "access log",
    HAND_OFF,
    OTHER,
)


@dataclass(frozen=True)
class Rule:
    """Frames of one stage: every given pattern must match (``re.search``).

    ``file`` is matched against the frame's full file path, ``function`` against
    py-spy's qualified name (``Class.method``, ``outer.<locals>.inner``), ``code``
    against the statement the frame is on (on one line, without comments): a call
    into native code (granian's ``send``) has no frame of its own, and shows as
    time spent on the statement that makes it. A ``host`` rule (the server and the
    event loop) never claims a sample in which a pkgcat frame is deeper than the
    matching frame.
    """

    stage: str
    file: str
    function: str = ""
    code: str = ""
    host: bool = False


def names(*functions: str) -> str:
    """A ``function`` pattern: any of these names, bare or as the last part of a qualified name."""
    return rf"(^|\.)({'|'.join(functions)})$"


PKG = r"(^|/)pkgcat/"
HTTP = PKG + r"http/"

RULES: tuple[Rule, ...] = (
    # A sample's stage is that of its innermost frame that some rule matches; within one
    # frame, the first matching rule of this table wins.
    #
    # Time on a line of the request path that calls a stage (awaiting it, resuming after
    # it): that stage. granian's send is a Rust call, without a frame: its time is here.
    # The lines that await admit (key check, rate limit and count) and _answer (the whole
    # request) span several stages: their own time, the calls in and the resumptions
    # after them (the callee's frame torn down), is left to "other".
    Rule(HAND_OFF, HTTP, code=r"\bawait\s+send\("),
    Rule("query parsing", HTTP, code=r"\b_?parse_query\(|\bpresented_key\(|\b_header\("),
    Rule("catalogue generation", PKG, code=r"\.(latest_)?generation\(\)"),
    Rule("key check", PKG, code=r"\bauthenticate\(|\b_refresh\(|\b_key\(|\bfind_key\("),
    # admit builds the request's caller (its count of today) once the count has landed.
    Rule("key check", PKG + r"services\.py$", names("admit"), code=r"\bcaller\._replace\("),
    Rule("rate limit", PKG, code=r"\.limit\(|\.hit\("),
    Rule("usage count", PKG, code=r"\.count\(|\.record\("),
    Rule("package lookup", HTTP, code=r"\bhandler\("),
    Rule(
        "response headers",
        HTTP,
        code=r"\brequest_id\s*=|x-request-id|\bheaders\.append\(|\b_rate_headers\(",
    ),
    # Query string, headers, the Bearer token.
    Rule("query parsing", HTTP + r"auth\.py$"),
    Rule("query parsing", PKG, names("_?parse_query", "_header", "presented_key")),
    Rule("query parsing", r"(^|/)urllib/parse\.py$"),
    # The catalogue generation (before the key check: it is read while authenticating,
    # and on SQLite inside the usage count's commit).
    Rule(
        "catalogue generation",
        PKG,
        names("_?generation", "read_generation", "latest_generation", "known_generation")
        + r"|Changes\.",
    ),
    # Key format, hash, key lookup and its cache, the caller, the clock and the time zone.
    Rule("key check", PKG + r"keys\.py$"),
    Rule(
        "key check",
        PKG,
        names("authenticate", "_key", "_refresh", "find_key", "key_record", "utc_now", "_zone")
        + r"|(^|\.)_?today$|clock",
    ),
    # The rate limiter, pkgcat's and the limits library.
    Rule("rate limit", PKG + r"storage/(.+/)?limiter\.py$"),
    Rule("rate limit", PKG, names("limit")),
    Rule("rate limit", r"(^|/)limits/"),
    # The durable usage count: group commit, its futures and shield, the WAL checkpoint.
    Rule("usage count", PKG + r"storage/(.+/)?counter\.py$"),
    Rule("usage count", PKG + r"storage/last_used\.py$"),
    Rule("usage count", PKG, names("count", "record")),
    Rule("usage count", r"(^|/)asyncio/tasks\.py$", r"(^|\.)shield(\.|$)"),
    Rule(
        "usage count",  # the checkpoint thread's future, completed on the loop
        r"(^|/)asyncio/futures\.py$",
        names("_call_set_state", "_set_state", "_copy_future_state"),
    ),
    # The details handler: its response cache, and the package read on a miss.
    Rule("package lookup", HTTP + r"routes\.py$", names("details", "_view")),
    Rule("package lookup", PKG, names("package_details", "package")),
    # Rendering the body.
    Rule("serialization", PKG + r"shapes\.py$"),
    Rule("serialization", PKG, names("envelope", "error_response")),
    Rule("serialization", r"(^|/)json/"),
    # Rate-limit headers, the request id.
    Rule("response headers", PKG, r"_rate_headers|request_id"),
    # The access line, formatted and queued (its writer thread is not the main thread).
    Rule("access log", PKG + r"access_log\.py$"),
    Rule("access log", HTTP, code=r"\baccess\.line\("),
    # granian's Python side and the event loop: only where no pkgcat frame is deeper.
    Rule(HAND_OFF, r"(^|/)granian/", host=True),
    Rule(HAND_OFF, r"(^|/)uvloop/", host=True),
    Rule(HAND_OFF, r"(^|/)selectors\.py$", host=True),
    Rule(
        HAND_OFF,
        r"(^|/)asyncio/",
        names(
            "_run_once",
            "run_forever",
            "run_until_complete",
            "_run",
            "_read_from_self",
            "_process_self_data",
            "_process_events",
            "select",
        ),
        host=True,
    ),
)

_PKGCAT_FILE = re.compile(PKG)
_SELECTOR = re.compile(r"(^|/)selectors\.py$")


@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    file: re.Pattern[str]
    function: re.Pattern[str] | None
    code: re.Pattern[str] | None


_COMPILED = tuple(
    _Compiled(
        rule,
        re.compile(rule.file),
        re.compile(rule.function) if rule.function else None,
        re.compile(rule.code) if rule.code else None,
    )
    for rule in RULES
)
assert all(rule.stage in STAGES for rule in RULES)


# --- py-spy's collapsed stacks --------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int | None

    def __str__(self) -> str:
        line = "" if self.line is None else f":{self.line}"
        return f"{self.function} ({short_file(self.file)}{line})"


_FRAME = re.compile(r"^(?P<function>.+?) \((?P<file>.+?)(?::(?P<line>\d+))?\)$")
_THREAD = re.compile(r"^thread \((?P<id>0x[0-9A-Fa-f]+|\d+)\)(?::\s*(?P<name>.*))?$")
_ANCHORS = ("/site-packages/", "/dist-packages/", "/src/", "/lib/python3")


def short_file(path: str) -> str:
    """``path`` from its package on (``pkgcat/http/asgi.py``, ``asyncio/events.py``)."""
    for anchor in _ANCHORS:
        at = path.rfind(anchor)
        if at >= 0:
            rest = path[at + len(anchor) :]
            return rest.split("/", 1)[1] if anchor == "/lib/python3" and "/" in rest else rest
    return path.rsplit("/", 1)[-1]


def parse_frame(text: str) -> Frame:
    match = _FRAME.match(text)
    if match is None:
        return Frame(text, "", None)
    line = match["line"]
    return Frame(match["function"], match["file"], int(line) if line else None)


@dataclass(frozen=True)
class Stack:
    thread_id: str
    thread_name: str
    frames: tuple[Frame, ...]
    """Outermost first."""
    samples: int


def parse_collapsed(text: str) -> list[Stack]:
    """py-spy's ``--format raw --threads`` output: ``thread (ID): NAME;frame;frame COUNT``."""
    stacks = []
    for line in text.splitlines():
        body, _, count = line.rpartition(" ")
        if not body or not count.isdigit():
            continue
        head, *frames = body.split(";")
        thread = _THREAD.match(head)
        if thread is None:  # not a thread's line: keep the frame
            frames.insert(0, head)
            thread_id, name = "?", ""
        else:
            thread_id, name = thread["id"], thread["name"] or ""
        stacks.append(Stack(thread_id, name, tuple(parse_frame(f) for f in frames), int(count)))
    return stacks


def is_main_thread(stack: Stack, worker_pid: int) -> bool:
    """py-spy names each thread by its OS id; the main thread's is the process id."""
    if stack.thread_id.isdigit():
        return int(stack.thread_id) == worker_pid
    return stack.thread_name == "MainThread"


class SourceLines:
    """The statement on a frame's line, for the ``code`` rules.

    From a snapshot of the served package's files (other files as they are on
    disk): py-spy gives the line an instruction is on, and the rules look at the
    whole statement, so a call spread over several lines still reads as that call.
    """

    def __init__(self, package_dir: Path | None) -> None:
        self._texts: dict[str, str] = {}
        if package_dir is not None:
            for path in package_dir.rglob("*.py"):
                self._texts[str(path)] = path.read_text(encoding="utf-8", errors="replace")
        self._statements: dict[str, dict[int, str]] = {}

    def line(self, frame: Frame) -> str:
        if frame.line is None or not frame.file:
            return ""
        statements = self._statements.get(frame.file)
        if statements is None:
            text = self._texts.get(frame.file)
            if text is None:
                text = "".join(linecache.getlines(frame.file))
            statements = self._statements[frame.file] = statements_by_line(text)
        return statements.get(frame.line, "")


def statements_by_line(text: str) -> dict[int, str]:
    """Line number -> the innermost statement on it, on one line (a compound one: its header)."""
    lines = text.splitlines()
    found = {n: line.strip() for n, line in enumerate(lines, 1)}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return found
    for node in ast.walk(tree):  # breadth first: enclosing statements come before theirs
        if not isinstance(node, ast.stmt) or node.end_lineno is None:
            continue
        last = node.end_lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(node.lineno, body[0].lineno - 1)
            statement = " ".join(line.strip() for line in lines[node.lineno - 1 : last])
        else:
            statement = ast.unparse(node).replace("\n", " ")  # without its comments
        for n in range(node.lineno, last + 1):
            found[n] = statement
    return found


def rule_for(frame: Frame, sources: SourceLines, *, host_allowed: bool = True) -> Rule | None:
    """The first rule matching this frame."""
    for c in _COMPILED:
        if c.rule.host and not host_allowed:
            continue
        if not c.file.search(frame.file):
            continue
        if c.function is not None and not c.function.search(frame.function):
            continue
        if c.code is not None and not c.code.search(sources.line(frame)):
            continue
        return c.rule
    return None


def classify(frames: Sequence[Frame], sources: SourceLines) -> str:
    """The sample's stage: that of its innermost frame some rule matches."""
    innermost_pkgcat = max(
        (i for i, f in enumerate(frames) if _PKGCAT_FILE.search(f.file)), default=-1
    )
    for i in range(len(frames) - 1, -1, -1):
        rule = rule_for(frames[i], sources, host_allowed=i > innermost_pkgcat)
        if rule is not None:
            return rule.stage
    return OTHER


@dataclass
class Breakdown:
    """The main thread's samples, sorted into stages."""

    samples: int = 0
    by_stage: Counter[str] = field(default_factory=Counter)
    selector_wait: int = 0
    """Samples whose innermost frame is in the selector: the loop waiting for granian."""
    unmatched: Counter[str] = field(default_factory=Counter)
    """Samples left to "other", by their innermost pkgcat frame (and their leaf)."""
    other_threads: int = 0
    """Samples of other threads with Python frames (ignored)."""

    def share(self, stage: str) -> float:
        return self.by_stage[stage] / self.samples if self.samples else 0.0


def analyse(stacks: Iterable[Stack], worker_pid: int, sources: SourceLines) -> Breakdown:
    result = Breakdown()
    for stack in stacks:
        if not is_main_thread(stack, worker_pid):
            if stack.frames:
                result.other_threads += stack.samples
            continue
        stage = classify(stack.frames, sources)
        result.samples += stack.samples
        result.by_stage[stage] += stack.samples
        if stack.frames and _SELECTOR.search(stack.frames[-1].file):
            result.selector_wait += stack.samples
        if stage == OTHER:
            result.unmatched[unmatched_label(stack.frames, sources)] += stack.samples
    return result


def unmatched_label(frames: Sequence[Frame], sources: SourceLines) -> str:
    if not frames:
        return "(no Python frame)"
    leaf = frames[-1]
    pkgcat = [f for f in frames if _PKGCAT_FILE.search(f.file)]
    inner = pkgcat[-1] if pkgcat else leaf
    code = sources.line(inner)
    code = code if len(code) <= 100 else code[:97] + "..."
    label = f"`{inner}`" + (f" `{code}`" if code else "")
    return label if inner is leaf else f"{label} <- `{leaf}`"


# --- processes --------------------------------------------------------------------------------


def find_py_spy() -> str:
    py_spy = Path(sys.executable).with_name("py-spy")
    if not py_spy.exists():
        raise SystemExit(f"py-spy is not installed next to {sys.executable}: pip install py-spy")
    return str(py_spy)


def worker_of(server_pid: int, timeout: float = 10.0) -> int:
    """The granian worker: the one child process of the server (1 worker)."""
    deadline = time.monotonic() + timeout
    while True:
        kids = sorted(proc.pid for proc in children_of(server_pid))
        if len(kids) == 1:
            return kids[0]
        if time.monotonic() > deadline:
            raise RuntimeError(f"expected one worker process under {server_pid}, found {kids}")
        time.sleep(0.1)


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_path: Path) -> float:
    """utime + stime of a /proc ``stat`` file (a process: all its threads)."""
    fields = stat_path.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def thread_cpu(pid: int) -> dict[int, float]:
    found = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            found[int(stat.parent.name)] = cpu_seconds(stat)
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
    return found


MAIN_THREAD = "main Python thread"
RUNTIME_THREADS = "granian's Rust runtime"
OTHER_THREADS = "other threads"
THREAD_GROUPS = (MAIN_THREAD, RUNTIME_THREADS, OTHER_THREADS)


def threads_by_group(pid: int) -> dict[int, tuple[str, float]]:
    """Each thread of a worker: its group of :data:`THREAD_GROUPS` and its CPU seconds so far.

    The main thread runs the event loop and every line of the app; granian's Rust runtime
    (tokio's ``tokio-rt-worker`` threads) reads and writes the sockets, and takes the GIL to
    hand each request to the loop; the rest are granian's other threads and pkgcat's own
    (access log writer, WAL checkpoints).
    """
    found = {}
    for tid, seconds in thread_cpu(pid).items():
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
        if tid == pid:
            found[tid] = (MAIN_THREAD, seconds)
        elif name.startswith("tokio-rt"):
            found[tid] = (RUNTIME_THREADS, seconds)
        else:
            found[tid] = (OTHER_THREADS, seconds)
    return found


def cpu_by_group(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each group used between two readings, from the threads alive at the second
    (a thread that ended meanwhile is left out, not counted as negative)."""
    groups = dict.fromkeys(THREAD_GROUPS, 0.0)
    for tid, (group, seconds) in after.items():
        groups[group] += seconds - before.get(tid, (group, 0.0))[1]
    return groups


def cpu_ticks(cpus: str) -> tuple[int, int]:
    """Busy and total ticks of these CPUs (``"0"``, ``"1,2"``) since boot, from /proc/stat."""
    wanted = {f"cpu{c}" for c in cpus.split(",")}
    busy = total = 0
    for line in Path("/proc/stat").read_text().splitlines():
        name, *values = line.split()
        if name in wanted:
            ticks = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal
            total += sum(ticks)
            busy += sum(ticks) - ticks[3] - ticks[4]
    return busy, total


def served_package(env: dict[str, str]) -> Path:
    """Where the ``pkgcat`` the server runs is imported from (``PYTHONPATH`` included)."""
    done = subprocess.run(
        [sys.executable, "-c", "import pkgcat; print(pkgcat.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Path(done.stdout.strip()).parent


@dataclass(frozen=True)
class Measured:
    summary: Summary
    cpu_us_per_request: float
    """1e6 / req/s: the server's core is saturated."""
    worker_busy: float
    """Median share of a core the worker process used during the rounds."""
    core_busy: float | None
    """Median busy share of the server's core during the rounds (``None``: not pinned).

    What says whether the server was saturated: the worker's own share leaves out
    the kernel's network work done on that core outside the worker's time.
    """

    threads_us_per_request: dict[str, float]
    """Median CPU microseconds a request cost each of :data:`THREAD_GROUPS` (from /proc)."""

    @property
    def saturation(self) -> float:
        return self.core_busy if self.core_busy is not None else self.worker_busy


@dataclass(frozen=True)
class Profile:
    round: Round
    breakdown: Breakdown
    main_thread_cpu_share: float
    """The main thread's share of the worker's CPU time during the capture."""
    worker_busy: float
    collapsed: str


def shared_core(worker: float, core: float | None) -> bool:
    """Whether the worker had far less of its core than the core was busy: another load ran there."""
    return core is not None and worker < SHARED * core


def measure(
    wrk: str,
    targets: Sequence[tuple[Target, int]],
    args: argparse.Namespace,
    server_cpus: str | None,
    wrk_cpus: str | None,
) -> dict[str, Measured]:
    """Interleaved rounds of every (target, worker pid); medians."""

    Taken = tuple[Round, float, float | None, dict[str, float]]

    def one(target: Target, pid: int, duration: int) -> Taken:
        """wrk's round; the worker's share of a core; the core's busy share (None: not
        pinned); the CPU microseconds a request cost each thread group."""
        stat = Path(f"/proc/{pid}/stat")
        core = cpu_ticks(server_cpus) if server_cpus else (0, 0)
        before = threads_by_group(pid)
        cpu, start = cpu_seconds(stat), time.monotonic()
        result = run_wrk(
            wrk, target, duration=duration, connections=CONNECTIONS, threads=THREADS, cpus=wrk_cpus
        )
        worker = (cpu_seconds(stat) - cpu) / (time.monotonic() - start)
        used = cpu_by_group(before, threads_by_group(pid))
        threads = {g: used[g] * 1e6 / max(1, result.requests) for g in THREAD_GROUPS}
        if not server_cpus:
            return result, worker, None, threads
        busy, total = cpu_ticks(server_cpus)
        busy, total = busy - core[0], total - core[1]
        return result, worker, busy / total if total else None, threads

    if args.warmup > 0:
        for target, pid in targets:
            one(target, pid, args.warmup)
    rounds: dict[str, list[Taken]] = {t.name: [] for t, _ in targets}
    for n in range(1, args.rounds + 1):
        for target, pid in targets:  # interleaved: drift hits every target alike
            taken = one(target, pid, args.duration)
            rounds[target.name].append(taken)
            result, worker, core, _ = taken
            print(
                f"  round {n} {target.name:<22} {result.requests_per_second:>9,.0f} req/s  "
                f"p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms  "
                f"worker {worker:.0%} of a core"
                + ("" if core is None else f", server core {core:.0%} busy")
                + ("  (another load on the core?)" if shared_core(worker, core) else ""),
                file=sys.stderr,
            )
    measured = {}
    for target, _ in targets:
        done = rounds[target.name]
        summary = summarize(target.name, 0, [r for r, _, _, _ in done])
        cores = [c for _, _, c, _ in done if c is not None]
        measured[target.name] = Measured(
            summary,
            1e6 / summary.requests_per_second,
            statistics.median(w for _, w, _, _ in done),
            statistics.median(cores) if cores else None,
            {g: statistics.median(t[g] for _, _, _, t in done) for g in THREAD_GROUPS},
        )
    return measured


RAW = (
    "--format=raw",
    "--threads",  # to tell the main thread from granian's and the checkpoint thread
    "--idle",  # the loop's waits too: the samples then cover the whole run
    "--full-filenames",  # the rules match on paths; the code rules read the files
)
FLAME_GRAPH = (
    "--format=flamegraph",
    "--threads",  # one tower per thread, named: the main thread is one click away
    "--function",  # one box per function, not one per line of it
)  # no --idle: the work, not the waits (see the docstring)


def record(
    py_spy: str,
    wrk: str,
    target: Target,
    worker_pid: int,
    args: argparse.Namespace,
    cpus: str | None,
    options: Sequence[str],
    out: Path,
) -> tuple[Round, dict[int, float], float]:
    """``py-spy record`` of the worker (blocking) into ``out`` while wrk loads ``target``.

    wrk's run (it starts before py-spy and ends after it), the CPU seconds each
    of the worker's threads used during the capture, and the capture's wall time.
    """
    command = [py_spy, "record", f"--pid={worker_pid}", f"--rate={args.rate}"]
    command += [f"--duration={args.duration}", *options, f"--output={out}"]
    with ThreadPoolExecutor(1) as pool:
        load = pool.submit(
            run_wrk,
            wrk,
            target,
            duration=args.duration + 2 * PROFILE_LEAD_S,
            connections=CONNECTIONS,
            threads=THREADS,
            cpus=cpus,
        )
        time.sleep(PROFILE_LEAD_S)
        before, start = thread_cpu(worker_pid), time.monotonic()
        done = subprocess.run(
            pinned(command, cpus),
            capture_output=True,
            text=True,
            timeout=args.duration + 60,
            check=False,
        )
        after, wall = thread_cpu(worker_pid), time.monotonic() - start
        result = load.result()
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"py-spy failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return result, {tid: after[tid] - before.get(tid, 0.0) for tid in after}, wall


def profile(
    py_spy: str,
    wrk: str,
    target: Target,
    worker_pid: int,
    args: argparse.Namespace,
    cpus: str | None,
    sources: SourceLines,
    out: Path,
) -> Profile:
    """Load ``target`` with wrk while py-spy samples the worker's stacks, sorted into stages."""
    result, used, wall = record(py_spy, wrk, target, worker_pid, args, cpus, RAW, out)
    total = sum(used.values())
    collapsed = out.read_text()
    breakdown = analyse(parse_collapsed(collapsed), worker_pid, sources)
    if breakdown.samples == 0:
        raise RuntimeError("py-spy recorded no sample of the worker's main thread")
    return Profile(
        round=result,
        breakdown=breakdown,
        main_thread_cpu_share=used.get(worker_pid, 0.0) / total if total else math.nan,
        worker_busy=total / wall,
        collapsed=collapsed,
    )


@dataclass(frozen=True)
class Run:
    baseline: Measured
    details: Measured
    profile: Profile
    flame_round: Round
    """wrk's run during the flame graph's capture."""
    flame_svg: str
    """py-spy's flame graph."""
    package_dir: Path
    body_bytes: int
    pin_note: str


def bench(args: argparse.Namespace) -> Run:
    wrk, py_spy = find_wrk(), find_py_spy()
    pkgcat = str(Path(sys.executable).with_name("pkgcat"))
    server_cpus, wrk_cpus = cpu_plan(args.pin)
    with (
        tempfile.TemporaryDirectory(prefix="pkgcat-flame-") as tmp_name,
        contextlib.ExitStack() as databases,
        children() as group,
    ):
        tmp = Path(tmp_name)
        env = dict(os.environ)  # PYTHONPATH included: it picks the pkgcat the server runs
        env |= {
            "PKGCAT_DATABASE_URL": f"sqlite:///{tmp / 'pkgcat.db'}",
            "PKGCAT_RATE_LIMIT": details.RATE_LIMIT,
            "PKGCAT_RATE_LIMIT_STORAGE": "memory://",
            "PKGCAT_WORKERS": "1",
        }
        package_dir = served_package(env)
        print(f"pkgcat served from {package_dir}", file=sys.stderr)
        demo = details.seed(pkgcat, env)
        if args.backend == "postgres":
            # The demo seeded into SQLite, then copied row for row into a fresh database.
            env["PKGCAT_DATABASE_URL"] = databases.enter_context(
                postgres.catalogue_database(tmp / "pkgcat.db", args.postgres_url)
            )
            env["PKGCAT_REDIS_URL"] = args.redis_url
        app = next(a for a in demo["applications"] if a["shape"] == "A" and a["timezone"] == "UTC")
        key, package = app["secret_key"], app["paid_package"]
        path = f"/1.0/package/details.json?package={package}"

        sources = SourceLines(package_dir)  # as close as can be to what the server imported
        api_root, api = start_server(
            group, [pkgcat, "serve"], "/healthz", env, tmp / "serve.log", server_cpus
        )
        status, body = fetch(api_root + path, key)
        if status != 200:
            raise RuntimeError(f"details: HTTP {status}: {body[:300]!r}")
        base_root, base = start_server(
            group,
            [sys.executable, str(BENCH_DIR / "baseline_app.py"), "--body-bytes", str(len(body))],
            "/",
            env,
            tmp / "baseline.log",
            server_cpus,
        )
        baseline = Target("baseline (bare ASGI)", base_root + path, key)
        api_target = Target("details", api_root + path, key)
        api_worker = worker_of(api.pid)
        pin_note = (
            f"servers on CPU {server_cpus}, wrk and py-spy on CPU {wrk_cpus}"
            if server_cpus
            else "unpinned"
        )
        print(
            f"wrk -t{THREADS} -c{CONNECTIONS}, {args.rounds} x {args.duration} s per target "
            f"after a {args.warmup} s warm-up, interleaved; {pin_note}",
            file=sys.stderr,
        )
        measured = measure(
            wrk,
            [(baseline, worker_of(base.pid)), (api_target, api_worker)],
            args,
            server_cpus,
            wrk_cpus,
        )
        print(
            f"py-spy on worker {api_worker}: {args.duration} s at {args.rate} Hz under wrk",
            file=sys.stderr,
        )
        profiled = profile(
            py_spy, wrk, api_target, api_worker, args, wrk_cpus, sources, tmp / "collapsed.txt"
        )
        print(f"py-spy flame graph of worker {api_worker}: {args.duration} s", file=sys.stderr)
        svg = tmp / "flame.svg"
        flame_round, _, _ = record(
            py_spy, wrk, api_target, api_worker, args, wrk_cpus, FLAME_GRAPH, svg
        )
        flame_svg = svg.read_text()
        group.check_alive()
    return Run(
        baseline=measured[baseline.name],
        details=measured[api_target.name],
        profile=profiled,
        flame_round=flame_round,
        flame_svg=flame_svg,
        package_dir=package_dir,
        body_bytes=len(body),
        pin_note=pin_note,
    )


# --- the report -------------------------------------------------------------------------------


def stage_rows(run: Run) -> list[tuple[str, float, float]]:
    """(stage, share of the main thread's samples, us per request)."""
    b, cpu = run.profile.breakdown, run.details.cpu_us_per_request
    return [(stage, b.share(stage), b.share(stage) * cpu) for stage in STAGES]


def report(run: Run, args: argparse.Namespace, top: int = 12) -> str:
    base, det, prof = run.baseline, run.details, run.profile
    b = prof.breakdown
    out = [
        "## A served details request, stage by stage",
        "",
        f"wrk -t{THREADS} -c{CONNECTIONS}, {args.rounds} x {args.duration} s per target, "
        f"interleaved, medians; {run.pin_note}; details body {run.body_bytes:,} bytes.",
        "",
        "| target | req/s | p50 ms | p99 ms | CPU us per request | worker CPU | server core busy |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for m in (base, det):
        s = m.summary
        core = "-" if m.core_busy is None else f"{m.core_busy:.0%}"
        out.append(
            f"| {s.name} | {s.requests_per_second:,.0f} | {s.p50_ms:.2f} | {s.p99_ms:.2f} "
            f"| {m.cpu_us_per_request:.1f} | {m.worker_busy:.0%} | {core} |"
        )
    out += [
        "",
        f"details / baseline: req/s {det.summary.requests_per_second / base.summary.requests_per_second:.2f}x, "
        f"p99 {det.summary.p99_ms / base.summary.p99_ms:.2f}x.",
        "",
        "CPU per request by thread of the worker (the same rounds, from /proc; the kernel's "
        "network work on the core is in neither):",
        "",
        "| target | " + " | ".join(THREAD_GROUPS) + " | all |",
        "|---|" + "---:|" * (len(THREAD_GROUPS) + 1),
    ]
    for m in (base, det):
        t = m.threads_us_per_request
        out.append(
            f"| {m.summary.name} | "
            + " | ".join(f"{t[g]:.1f}" for g in THREAD_GROUPS)
            + f" | {sum(t.values()):.1f} |"
        )
    out += [
        "",
        "| stage | share of the worker's Python samples | us per request |",
        "|---|---:|---:|",
    ]
    for stage, share, us in stage_rows(run):
        out.append(f"| {stage} | {share:.1%} | {us:.1f} |")
    out += [
        f"| **details, CPU per request** | 100.0% | **{det.cpu_us_per_request:.1f}** |",
        f"| baseline (bare ASGI), CPU per request | | {base.cpu_us_per_request:.1f} |",
        f"| **what pkgcat adds over the bare server** | | "
        f"**{det.cpu_us_per_request - base.cpu_us_per_request:.1f}** |",
        "",
        f"py-spy: {b.samples:,} samples of the worker's main Python thread ({args.rate} Hz, "
        f"{args.duration} s, blocking, idle included) under wrk at "
        f"{prof.round.requests_per_second:,.0f} req/s (p99 {prof.round.p99_ms:.2f} ms); "
        f"{b.selector_wait / b.samples:.1%} of them wait in the selector (part of "
        f'"{HAND_OFF}"). The main thread used {prof.main_thread_cpu_share:.0%} of the '
        f"worker's CPU time (worker busy {prof.worker_busy:.0%}); granian's threads and "
        f"{b.other_threads:,} samples of other Python threads are left out.",
    ]
    for m in (base, det):
        if m.saturation < UNSATURATED:
            out += [
                "",
                f"Note: {m.summary.name}: the server's core was {m.saturation:.0%} busy, not "
                "saturated, so 1e6 / req/s overstates its CPU per request (wrk held it back?).",
            ]
        if m.core_busy is not None and shared_core(m.worker_busy, m.core_busy):
            out += [
                "",
                f"Note: {m.summary.name}: the worker had {m.worker_busy:.0%} of a core while the "
                f"core was {m.core_busy:.0%} busy: another load shared it; run again.",
            ]
    if b.unmatched:
        out += ["", f'Unmatched frames ("{OTHER}"), innermost pkgcat frame <- leaf:', ""]
        out += [f"- {n / b.samples:.1%} {label}" for label, n in b.unmatched.most_common(top)]
    return "\n".join(out)


def figures(run: Run, args: argparse.Namespace, svg: Path) -> dict[str, Any]:
    def target(m: Measured) -> dict[str, Any]:
        s = m.summary
        return {
            "requests_per_second": s.requests_per_second,
            "p50_ms": s.p50_ms,
            "p99_ms": s.p99_ms,
            "cpu_us_per_request": m.cpu_us_per_request,
            "worker_busy": m.worker_busy,
            "core_busy": m.core_busy,
            "threads_us_per_request": m.threads_us_per_request,
            "bad_responses": s.bad_responses,
            "socket_errors": s.socket_errors,
            "rounds": [r.__dict__ for r in s.rounds],
        }

    b = run.profile.breakdown
    return {
        "settings": {
            "rounds": args.rounds,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "rate_hz": args.rate,
            "connections": CONNECTIONS,
            "threads": THREADS,
            "pinning": run.pin_note,
            "package_dir": str(run.package_dir),
            "body_bytes": run.body_bytes,
        },
        "baseline": target(run.baseline),
        "details": target(run.details),
        "ratios": {
            "requests_per_second": run.details.summary.requests_per_second
            / run.baseline.summary.requests_per_second,
            "p99": run.details.summary.p99_ms / run.baseline.summary.p99_ms,
        },
        "pkgcat_adds_us_per_request": run.details.cpu_us_per_request
        - run.baseline.cpu_us_per_request,
        "stages": [
            {"stage": stage, "samples": b.by_stage[stage], "share": share, "us_per_request": us}
            for stage, share, us in stage_rows(run)
        ],
        "profile": {
            "samples": b.samples,
            "selector_wait_samples": b.selector_wait,
            "other_thread_samples": b.other_threads,
            "main_thread_cpu_share": run.profile.main_thread_cpu_share,
            "worker_busy": run.profile.worker_busy,
            "wrk": run.profile.round.__dict__,
            "unmatched": dict(b.unmatched.most_common(50)),
            "svg": str(svg),
            "flame_graph_wrk": run.flame_round.__dict__,
        },
    }


# --- main -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="wrk runs per target (median)")
    parser.add_argument(
        "--duration", type=int, default=5, help="whole seconds per wrk run and of each profile"
    )
    parser.add_argument(
        "--warmup", type=int, default=2, help="whole seconds of warm-up per target (0: none)"
    )
    parser.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    parser.add_argument(
        "--svg", type=Path, default=DEFAULT_SVG, help="py-spy's flame graph (default: %(default)s)"
    )
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false", help="do not pin servers, wrk and py-spy"
    )
    postgres.add_backend_arguments(parser)
    args = parser.parse_args()
    if args.rounds < 1 or args.duration < 1 or args.warmup < 0 or args.rate < 1:
        parser.error("--rounds, --duration and --rate must be at least 1, --warmup at least 0")
    find_py_spy()  # before anything starts

    try:
        run = bench(args)
    except KeyboardInterrupt:  # the servers are stopped by then
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    print(report(run, args))
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(run.flame_svg)
    collapsed = args.svg.with_suffix(".collapsed.txt")
    collapsed.write_text(run.profile.collapsed)
    print(
        f"\npy-spy's flame graph: {args.svg} (under wrk at "
        f"{run.flame_round.requests_per_second:,.0f} req/s); the table's raw capture: {collapsed}",
        file=sys.stderr,
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures(run, args, args.svg), indent=2) + "\n")
    problems = [
        m.summary
        for m in (run.baseline, run.details)
        if m.summary.bad_responses or m.summary.socket_errors
    ]
    for s in problems:
        print(
            f"warning: {s.name}: {s.bad_responses} non-2xx responses, "
            f"{s.socket_errors} socket errors",
            file=sys.stderr,
        )
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
