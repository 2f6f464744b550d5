"""The running loop known without asking asyncio each time: always the loop asyncio would name."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from pkgcat.loops import RunningLoop


def test_it_names_the_loop_that_runs_the_caller() -> None:
    running = RunningLoop()

    async def main() -> list[bool]:
        loop = asyncio.get_running_loop()
        return [running() is loop for _ in range(3)]

    assert asyncio.run(main()) == [True, True, True]


def test_a_loop_that_starts_after_the_first_ended_is_named() -> None:
    running = RunningLoop()

    async def named() -> bool:
        return running() is asyncio.get_running_loop()

    assert asyncio.run(named())
    assert asyncio.run(named())  # a new loop, in the same thread


def test_a_loop_kept_open_but_stopped_is_not_named_while_another_runs() -> None:
    running = RunningLoop()
    first = asyncio.new_event_loop()
    second = asyncio.new_event_loop()

    async def named() -> asyncio.AbstractEventLoop:
        return running()

    try:
        assert first.run_until_complete(named()) is first
        assert second.run_until_complete(named()) is second
        assert first.run_until_complete(named()) is first
    finally:
        first.close()
        second.close()


def test_each_thread_gets_its_own_running_loop() -> None:
    running = RunningLoop()
    ready = threading.Barrier(2)
    named: dict[str, bool] = {}

    async def main(name: str) -> None:
        loop = asyncio.get_running_loop()
        running()
        await asyncio.to_thread(ready.wait, 10)  # both loops now run, each in its thread
        named[name] = running() is loop

    other = threading.Thread(target=lambda: asyncio.run(main("other")))
    other.start()
    asyncio.run(main("this"))
    other.join(timeout=10)
    assert named == {"this": True, "other": True}


def test_outside_a_loop_it_says_there_is_none() -> None:
    running = RunningLoop()

    async def main() -> None:
        running()

    asyncio.run(main())
    with pytest.raises(RuntimeError, match="no running event loop"):
        running()


def test_a_child_forked_while_the_loop_runs_is_told_none_runs_there() -> None:
    """As asyncio tells it: the parent's loop does not run in the child."""
    running = RunningLoop()

    async def main() -> int:
        running()
        child = os.fork()
        if child == 0:  # the child: no loop runs here
            try:
                running()
            except RuntimeError:
                os._exit(0)
            os._exit(1)
        _, status = os.waitpid(child, 0)
        return os.waitstatus_to_exitcode(status)

    assert asyncio.run(main()) == 0
