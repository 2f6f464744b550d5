"""The PostgreSQL listener's reconnects: how long it waits between two attempts."""

from __future__ import annotations

import pytest

from pkgcat.storage.postgres.catalogue import RECONNECT_CAP, RECONNECT_FIRST, reconnect_delay


@pytest.mark.parametrize("draw", [0.0, 1.0])
def test_reconnects_back_off_up_to_the_cap(draw: float) -> None:
    delays = [reconnect_delay(n, draw=lambda: draw) for n in range(1, 12)]
    ceilings = [min(RECONNECT_FIRST * 2 ** (n - 1), RECONNECT_CAP) for n in range(1, 12)]
    # Between half and all of a ceiling that doubles from the first delay to the cap.
    assert delays == [c * (0.5 + draw / 2) for c in ceilings]
    assert delays[:4] == sorted(set(delays[:4]))  # growing: four different delays
    assert delays[-1] == RECONNECT_CAP * (0.5 + draw / 2)


def test_a_long_outage_waits_no_more_than_the_cap() -> None:
    assert reconnect_delay(10_000, draw=lambda: 1.0) == RECONNECT_CAP
