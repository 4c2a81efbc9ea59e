"""The collector settings of a matching worker's pool process and of a subscription engine's
(``exchange/collector.py``)."""

from __future__ import annotations

import gc
import os
import signal
import weakref

import pytest
from celery.signals import worker_process_init
from django.conf import settings

from exchange import celery as celery_app
from exchange.collector import DROPPED_MIN, THRESHOLDS, EngineHeap
from exchange.subscription_engine import runner
from tests.conftest import collector_kept


@pytest.fixture
def restored_collector():
    with collector_kept():
        yield


def test_a_pool_process_freezes_what_it_holds_and_collects_its_young_less_often(
    restored_collector,
):
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    kept = object.__new__(type("Kept", (), {}))  # a tracked object alive at the start
    worker_process_init.send(sender=None)
    assert gc.get_threshold() == THRESHOLDS == (10_000, 10, 10)
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # out of the collector's sight
    assert celery_app.pool_process_settle in [
        receiver() for _key, receiver in worker_process_init.receivers
    ]


class Cycle:
    """An object that refers to itself: reference counting alone never frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_engines_heap_freezes_what_a_step_left_and_collects_after_many_drops(
    restored_collector,
):
    gc.unfreeze()
    gc.collect()
    cycle = Cycle()
    dead = weakref.ref(cycle)
    heap = EngineHeap()
    # Given a step's objects frozen, a cycle among them that dies is not collected
    assert heap.settle(dropped=0, followed=50_000) is False
    assert not any(o is cycle for o in gc.get_objects())  # out of the collector's sight
    del cycle
    gc.collect()
    assert dead() is not None
    # until a tenth of those followed have been dropped since the last full collection
    assert heap.settle(dropped=4_999, followed=50_000) is False
    assert dead() is not None
    assert heap.settle(dropped=5_000, followed=50_000) is True
    assert dead() is None
    assert gc.get_freeze_count() > 0  # what is alive frozen again after it
    # and at least DROPPED_MIN of them
    assert heap.settle(dropped=5_000 + DROPPED_MIN - 1, followed=100) is False
    assert heap.settle(dropped=5_000 + DROPPED_MIN, followed=100) is True


def test_the_engine_process_settles_its_heap_after_each_step(monkeypatch):
    settled: list[tuple[int, int]] = []
    steps = iter([True, False])

    class Stepping:
        name, lease_seconds, followed, dropped = "probe", 30.0, {1: None, 2: None}, 0

        def __init__(self, name: str) -> None:
            pass

        def step(self) -> bool:
            self.dropped += 3
            more = next(steps)
            if not more:
                os.kill(os.getpid(), signal.SIGTERM)  # the runner's stop, after this step
            return more

        def renew(self) -> set[int]:
            return set()

        def stop(self) -> None:
            pass

    monkeypatch.setattr(runner, "Engine", Stepping)
    monkeypatch.setattr(runner.EngineHeap, "settle", lambda self, **kw: settled.append(kw) or False)
    monkeypatch.setattr(runner, "_drain", lambda pubsub, engine, timeout: None)
    nices: list[int] = []  # (this process's own priority stays as it is)
    monkeypatch.setattr(runner, "run_at_nice", nices.append)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        runner.engine_run(name="probe")
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    assert settled == [{"dropped": 3, "followed": 2}, {"dropped": 6, "followed": 2}]
    assert nices == [settings.SUBSCRIPTION_ENGINE_NICE]
