"""The access log's writer: whole lines in order, from several processes into one pipe, at
exit whichever way a process ends, and a bound on what waits for a blocked output."""

from __future__ import annotations

import fcntl
import io
import multiprocessing
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pkgcat.access_log import BATCH, MAX_PENDING, AccessLog

LINE = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO    pkgcat\.access \[(?P<id>[a-z]+-\d+)\] "
    r"GET /(?P<tag>[a-z]+)/\d+/x+ - status=404 code=- duration_ms=\d+\.\d{3} application=-"
)

WRITER = """
import sys
from pkgcat.access_log import AccessLog
tag, count = sys.argv[1], int(sys.argv[2])
log = AccessLog("text")
for n in range(count):
    log.line("GET", f"/{tag}/{n}/" + "x" * 300, None, 404, None, None, f"{tag}-{n}", 0.0)
print("appended", flush=True)
"""
"""A process that appends ``count`` lines and ends: what is left is written at its exit."""


def _read_until_closed(fd: int, piece: int) -> bytes:
    """Everything written to a pipe, read ``piece`` bytes at a time (slowly, so it fills)."""
    out = bytearray()
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(piece):
            out.extend(chunk)
    return bytes(out)


def test_two_processes_sharing_a_pipe_never_mix_within_a_line() -> None:
    """Each writes 4,000 lines of about 400 bytes: 3 MB into a 64 KB pipe read 512 bytes at a
    time, so both block on it again and again. Every line arrives whole, each process's in
    order, none missing: the last ones written when the process ended."""
    read, write = os.pipe()
    count = 4000
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, tag, str(count)],
            stdout=subprocess.DEVNULL,
            stderr=write,
        )
        for tag in ("alpha", "beta")
    ]
    os.close(write)
    output = _read_until_closed(read, 512).decode()
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    lines = output.splitlines()
    assert all(LINE.fullmatch(line) for line in lines), next(
        line for line in lines if not LINE.fullmatch(line)
    )
    for tag in ("alpha", "beta"):
        ids = [m["id"] for line in lines if (m := LINE.fullmatch(line)) and m["tag"] == tag]
        assert ids == [f"{tag}-{n}" for n in range(count)]


_KEPT: list[AccessLog] = []


def _append_and_return(path: str, count: int) -> None:
    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT), 2)  # the process's stderr until it ends
    log = AccessLog("text")
    _KEPT.append(log)  # alive until the process ends, as an app's log is
    for n in range(count):
        log.line("GET", f"/gamma/{n}/xx", None, 404, None, None, f"gamma-{n}", 0.0)


def test_a_process_multiprocessing_started_writes_its_lines_as_it_ends(tmp_path: Path) -> None:
    """granian's workers are such processes: they end with os._exit, past atexit."""
    log = tmp_path / "child.log"
    child = multiprocessing.get_context("fork").Process(
        target=_append_and_return, args=(str(log), 500)
    )
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    ids = [m["id"] for line in log.read_text().splitlines() if (m := LINE.fullmatch(line))]
    assert ids == [f"gamma-{n}" for n in range(500)]


def test_lines_waiting_for_a_blocked_output_are_bounded_and_the_drop_is_told() -> None:
    """Nobody reads the pipe while the process appends more lines than may wait: the excess
    is dropped and counted, and once the pipe is read, every kept line comes, and the count."""
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    extra = 5000
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, "delta", str(MAX_PENDING + extra)],
        stdout=subprocess.PIPE,
        stderr=write,
        text=True,
    )
    os.close(write)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "appended\n"  # all appended, the pipe still unread
        output: list[bytes] = []
        reader = threading.Thread(target=lambda: output.append(_read_until_closed(read, 65536)))
        reader.start()
        assert writer.wait(timeout=60) == 0
        reader.join(timeout=60)
    finally:
        writer.kill()
    lines = output[0].decode().splitlines()
    written = sum(1 for line in lines if LINE.fullmatch(line))
    (warning,) = [line for line in lines if " WARNING " in line]
    dropped = int(re.search(r"\] (\d+) access lines dropped", warning)[1])  # type: ignore[index]
    assert dropped > 0
    assert written + dropped == MAX_PENDING + extra
    assert written <= MAX_PENDING + BATCH  # what waited, and the batch in the writer's hands


def test_lines_go_to_the_process_stderr_not_to_a_replaced_sys_stderr(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code in the process may replace sys.stderr for a while (a command run in-process, a
    progress display): lines written meanwhile by the writer thread are not its output."""
    replaced = io.StringIO()
    monkeypatch.setattr(sys, "stderr", replaced)
    log = AccessLog("text")
    log.line("GET", "/epsilon/1/xx", None, 404, None, None, "epsilon-1", 0.0)
    log.flush()
    assert replaced.getvalue() == ""
    assert "[epsilon-1] GET /epsilon/1/xx - status=404" in capfd.readouterr().err
