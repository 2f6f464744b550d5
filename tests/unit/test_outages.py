"""An outage in the log: one warning when it starts, one a period while it lasts, one line at its end."""

from __future__ import annotations

import logging

import pytest

from pkgcat.outages import Outage


class Ticks:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_one_warning_a_period_and_one_line_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Ticks()
    log = logging.getLogger("pkgcat.test.outages")
    outage = Outage(
        "downloads cannot be counted", "downloads are counted again", log, every=60.0, clock=clock
    )
    outage.worked()  # nothing failed: nothing to say
    with caplog.at_level(logging.INFO, logger="pkgcat.test.outages"):
        for _ in range(1_000):  # a thousand failed downloads within a second
            outage.failed("ConnectionRefusedError")
        assert outage.failing
        clock.now += 59.0
        outage.failed("ConnectionRefusedError")  # still within the period: nothing
        clock.now += 1.0
        outage.failed("ConnectionRefusedError")  # a period since the last warning
        clock.now += 5.0
        outage.worked()
        outage.worked()  # once back, nothing more
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert lines == [
        (
            logging.WARNING,
            "downloads cannot be counted: ConnectionRefusedError; answered 503 until it "
            "works again",
        ),
        (
            logging.WARNING,
            "downloads cannot be counted, still: ConnectionRefusedError; 1001 more answered "
            "503 in the last 60 s",
        ),
        (logging.INFO, "downloads are counted again, after 65 s; 1002 answered 503 meanwhile"),
    ]
    assert not outage.failing
    assert all(r.exc_info is None for r in caplog.records)
