"""The logging set-up: formats, levels, the request id, the access switch and redaction."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re

import pytest
from rich.console import Console
from rich.progress import Progress

from pkgcat.config import Settings
from pkgcat.keys import is_well_formed
from pkgcat.logs import REQUEST_ID, configure_logging, redact, request_text
from pkgcat.storage.postgres.catalogue import PostgresChanges
from pkgcat.storage.postgres.connection import PostgresDatabase

# A fixed key of the real form: pytest-xdist needs the same test ids in every worker.
KEY = "pkc_" + "Q7dLw2XbRt9MvK4pN8sHc3YfJ6gTz5Ae1UoBiW0r"
PUBLIC = "pkp_" + "Q7dLw2XbRt9MvK4pN8sHc3YfJ6gTz5Ae1UoBiW0r"
assert is_well_formed(KEY)
"""A key of the right form; only its display prefix may ever be logged."""

TEXT_LINE = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) +(\S+) \[(\S+)\] (.*)"
)


def test_text_lines_have_time_level_logger_and_request_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(Settings(log_level="debug"))
    logging.getLogger("pkgcat.storage").debug("outside %s", "a request")
    token = REQUEST_ID.set("abc-1")
    try:
        logging.getLogger("pkgcat.http").warning("inside")
    finally:
        REQUEST_ID.reset(token)
    lines = capsys.readouterr().err.splitlines()
    assert [TEXT_LINE.fullmatch(line).groups() for line in lines] == [  # type: ignore[union-attr]
        ("DEBUG", "pkgcat.storage", "-", "outside a request"),
        ("WARNING", "pkgcat.http", "abc-1", "inside"),
    ]


def test_json_lines_are_one_object_each(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(Settings(log_format="json"))
    token = REQUEST_ID.set("abc-2")
    try:
        logging.getLogger("pkgcat.access").info("a line", extra={"status": 200})
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("pkgcat.http").exception("failed")
    finally:
        REQUEST_ID.reset(token)
    access, failed = (json.loads(line) for line in capsys.readouterr().err.splitlines())
    assert access["timestamp"].endswith("+00:00")
    assert {k: access[k] for k in ("level", "logger", "message", "request_id", "status")} == {
        "level": "INFO",
        "logger": "pkgcat.access",
        "message": "a line",
        "request_id": "abc-2",
        "status": 200,
    }
    assert (failed["level"], failed["request_id"]) == ("ERROR", "abc-2")
    assert "RuntimeError: boom" in failed["exc_info"]


def test_the_level_applies_to_pkgcat(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(Settings(log_level="warning"))
    logging.getLogger("pkgcat.http").info("hidden at warning")
    logging.getLogger("pkgcat.http").warning("shown at warning")
    configure_logging(Settings())
    logging.getLogger("pkgcat.http").info("shown at info")
    messages = [TEXT_LINE.fullmatch(x)[4] for x in capsys.readouterr().err.splitlines()]  # type: ignore[index]
    assert messages == ["shown at warning", "shown at info"]


FORGED = "2026-11-26T00:00:00.000Z INFO    pkgcat.access [forged-1] GET / - status=200"


def test_a_text_line_holds_one_record_whatever_its_message_and_trace_hold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """CR, LF, NUL, ESC and the like are escaped; a trace's lines are indented under its record."""
    configure_logging(Settings())
    log = logging.getLogger("pkgcat.http")
    log.warning("to %s failed", f"/x\n{FORGED}\r\x00\x1b[2J\u2028\x85")
    try:
        raise ValueError(f"bad\n{FORGED}")
    except ValueError:
        log.exception("failed\n%s", FORGED)
    output = capsys.readouterr().err
    assert "\x00" not in output
    assert "\r" not in output
    lines = output.split("\n")
    records = [line for line in lines if TEXT_LINE.fullmatch(line)]
    assert [TEXT_LINE.fullmatch(line)[4] for line in records] == [  # type: ignore[index]
        f"to /x\\x0a{FORGED}\\x0d\\x00\\x1b[2J\\u2028\\x85 failed",
        f"failed\\x0a{FORGED}",
    ]
    trace = lines[lines.index(records[1]) + 1 : -1]
    assert trace[0] == "  Traceback (most recent call last):"
    assert trace[-2:] == ["  ValueError: bad", f"  {FORGED}"]
    assert all(line.startswith("  ") for line in trace)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("/1.0/package/details.json", "/1.0/package/details.json"),
        ("/x\ny", "/x\\x0ay"),
        ("/a b\\c", "/a\\x20b\\x5cc"),
        (
            "/\x00\x1b\x7f\x85\u2028\u202e\U000e0001",
            "/\\x00\\x1b\\x7f\\x85\\u2028\\u202e\\U000e0001",
        ),
        ("/d\u00e9p\u00f4t", "/d\u00e9p\u00f4t"),  # printable letters stay as they are
        (f"/{KEY}", f"/{KEY[:12]}[redacted]"),
        ("/secret_key=abc", "/secret_key=[redacted]"),
        ("GET\r\n", "GET\\x0d\\x0a"),
    ],
)
def test_request_text(value: str, written: str) -> None:
    assert request_text(value) == written


def test_request_text_cuts_a_long_value_and_says_so() -> None:
    assert request_text("/" + "a" * 99, limit=10) == "/aaaaaaaaa...(90 more)"


def test_keys_and_authorization_never_reach_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(Settings(log_level="debug", log_format="json"))
    log = logging.getLogger("pkgcat.test")
    log.debug("GET /1.0/package/details.json?package=x&secret_key=%s", KEY)
    log.debug("headers %s", [(b"authorization", f"Bearer {KEY}".encode())])
    log.debug("query %r", {"secret_key": KEY[:20]})
    try:
        raise ValueError(f"bad key {KEY}")
    except ValueError:
        log.exception("Authorization: Basic %s", "dXNlcjpwYXNz")
    output = capsys.readouterr().err
    assert KEY[12:] not in output
    assert KEY[4:20] not in output
    assert "dXNlcjpwYXNz" not in output
    assert KEY[:12] in output  # the display prefix, which may be shown


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f"?package=x&secret_key={KEY}&days=2", "?package=x&secret_key=[redacted]&days=2"),
        ("secret_key%3Dabc&days=2", "secret_key%3D[redacted]&days=2"),
        ("{'secret_key': 'abc', 'n': 1}", "{'secret_key': '[redacted]', 'n': 1}"),
        ('{"secret_key": "abc"}', '{"secret_key": "[redacted]"}'),
        ("Authorization: Bearer abc.def", "Authorization: [redacted]"),
        ("(b'authorization', b'Basic eHk=')", "(b'authorization', b'[redacted]')"),
        ("token was bearer abc", "token was bearer [redacted]"),
        (f"key {KEY} refused", f"key {KEY[:12]}[redacted] refused"),
        (f"key {PUBLIC} refused", f"key {PUBLIC[:12]}[redacted] refused"),
        (f"?udid=x&public_key={PUBLIC}", "?udid=x&public_key=[redacted]"),
        ("application 3 over its limit", "application 3 over its limit"),
    ],
)
def test_redact(text: str, redacted: str) -> None:
    assert redact(text) == redacted


def test_the_change_feed_logs_under_no_request_id(capsys: pytest.CaptureFixture[str]) -> None:
    """The feed's listener lives as long as the worker, though a request starts it."""
    configure_logging(Settings(log_format="json"))
    # Nothing listens on port 1: the listener cannot connect, and says so once.
    feed = PostgresChanges(PostgresDatabase("postgresql://pkgcat@127.0.0.1:1/none"))
    output = ""

    async def first_request() -> None:
        nonlocal output
        REQUEST_ID.set("first-request")
        logging.getLogger("pkgcat.http").info("the request's own line")
        assert feed.current() == -1
        for _ in range(500):  # polling for the warning, not timing anything
            output += capsys.readouterr().err
            if "cannot listen" in output:
                break
            await asyncio.sleep(0.01)
        await feed.close()

    asyncio.run(first_request())
    own, warning = (json.loads(line) for line in output.splitlines())
    assert own["request_id"] == "first-request"
    assert warning["logger"] == "pkgcat.storage.postgres"
    assert "request_id" not in warning


def test_a_line_logged_under_a_progress_bar_is_printed_above_it() -> None:
    configure_logging(Settings())
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with Progress(console=console, transient=True, auto_refresh=False) as bar:
        bar.add_task("import", total=10)
        bar.refresh()
        logging.getLogger("pkgcat.ingest").warning("a warning during the bar")
    # What the terminal shows of each line: the text after its last carriage return or erase.
    shown = [re.split(r"\r|\x1b\[2K", line)[-1] for line in screen.getvalue().split("\n")]
    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in shown]
    warning = next(line for line in lines if "a warning during the bar" in line)
    assert TEXT_LINE.fullmatch(warning), warning  # one whole line, not mixed into the bar's
