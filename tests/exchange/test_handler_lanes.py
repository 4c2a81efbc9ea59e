"""A request lane (exchange/handler.py, ``Lane``): one thread that runs its calls in order,
hands each result or exception back to the caller's loop, outlives a caller that stopped
waiting, and serves asgiref as an ``Executor``."""

from __future__ import annotations

import asyncio
import threading

import pytest

from exchange.handler import Lane


def _thread_name() -> str:
    return threading.current_thread().name


def test_a_call_runs_on_the_lanes_thread_and_returns_its_result():
    lane = Lane("request-lane-test")

    async def main() -> list[str]:
        return [await lane.call(_thread_name) for _ in range(3)]

    assert asyncio.run(main()) == ["request-lane-test"] * 3


def test_an_exception_reaches_the_caller_and_the_lane_carries_on():
    lane = Lane("request-lane-test")

    def fail() -> None:
        raise ValueError("refused")

    async def main() -> str:
        with pytest.raises(ValueError, match="refused"):
            await lane.call(fail)
        return await lane.call(_thread_name)

    assert asyncio.run(main()) == "request-lane-test"


def test_a_caller_that_stops_waiting_leaves_the_lane_working():
    lane = Lane("request-lane-test")
    release = threading.Event()
    ran: list[str] = []

    def slow() -> str:
        release.wait(5)
        ran.append("slow")
        return "slow"

    async def main() -> str:
        waiting = asyncio.ensure_future(lane.call(slow))
        await asyncio.sleep(0)
        waiting.cancel()
        release.set()
        return await lane.call(_thread_name)  # queued behind the slow one

    assert asyncio.run(main()) == "request-lane-test"
    assert ran == ["slow"]


def test_a_lane_outlives_the_loop_of_a_call():
    lane = Lane("request-lane-test")
    release = threading.Event()

    async def leave() -> None:
        lane.call(release.wait, 5)  # nobody awaits it; the loop closes first

    asyncio.run(leave())
    release.set()

    async def main() -> str:
        return await lane.call(_thread_name)

    assert asyncio.run(main()) == "request-lane-test"


def test_a_lane_is_an_executor_for_asgiref():
    lane = Lane("request-lane-test")

    async def main() -> str:
        return await asyncio.get_running_loop().run_in_executor(lane, _thread_name)

    assert asyncio.run(main()) == "request-lane-test"
    assert lane.submit(lambda x, y=0: x + y, 2, y=3).result(timeout=5) == 5
    failed = lane.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed.result(timeout=5)
