"""The in-process rate limit: a fixed window per application, as the Redis one keeps it."""

from __future__ import annotations

import asyncio

from pkgcat.domain import RateDecision
from pkgcat.storage.limiter import PRUNE_EVERY, WindowLimiter


class Clock:
    """Monotonic seconds that the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def hits(limiter: WindowLimiter, application_id: int, n: int) -> list[RateDecision]:
    async def run() -> list[RateDecision]:
        return [await limiter.hit(application_id) for _ in range(n)]

    return asyncio.run(run())


def test_a_window_admits_the_limit_then_refuses_until_it_ends() -> None:
    clock = Clock()
    limiter = WindowLimiter("3/minute", clock=clock)
    assert hits(limiter, 1, 4) == [
        RateDecision(True, 3, 2, 60, 60),
        RateDecision(True, 3, 1, 60, 60),
        RateDecision(True, 3, 0, 60, 60),
        RateDecision(False, 3, 0, 60, 60),
    ]
    clock.now += 59.5
    assert hits(limiter, 1, 1) == [RateDecision(False, 3, 0, 1, 60)]
    clock.now += 0.5  # the window opened by the first hit has ended: a new one opens
    assert hits(limiter, 1, 1) == [RateDecision(True, 3, 2, 60, 60)]


def test_each_application_has_its_own_window() -> None:
    clock = Clock()
    limiter = WindowLimiter("2/hour", clock=clock)
    hits(limiter, 1, 2)
    clock.now += 1800
    assert hits(limiter, 2, 1) == [RateDecision(True, 2, 1, 3600, 3600)]
    assert hits(limiter, 1, 1) == [RateDecision(False, 2, 0, 1800, 3600)]


def test_ended_windows_are_dropped_and_open_again_on_the_next_hit() -> None:
    clock = Clock()
    limiter = WindowLimiter("1/second", clock=clock)

    async def one_each() -> list[RateDecision]:
        return [await limiter.hit(application_id) for application_id in range(PRUNE_EVERY + 10)]

    assert all(decision.allowed for decision in asyncio.run(one_each()))
    clock.now += 0.5
    assert not hits(limiter, PRUNE_EVERY + 9, 1)[0].allowed  # still in its window
    clock.now += 1
    assert hits(limiter, 0, 2) == [RateDecision(True, 1, 0, 1, 1), RateDecision(False, 1, 0, 1, 1)]


def test_the_reset_never_exceeds_the_window_whatever_the_clock_reads() -> None:
    # Window ends are sums of floats: end - now can come out a hair above the window.
    for start in (0.1, 496.921, 496.551, 1e9 + 0.7):
        clock = Clock()
        clock.now = start
        limiter = WindowLimiter("3600/hour", clock=clock)
        assert hits(limiter, 1, 1)[0].reset_after == 3600
