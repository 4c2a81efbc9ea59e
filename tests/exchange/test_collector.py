"""The collector settings of a matching worker's pool process (``exchange/collector.py``)."""

from __future__ import annotations

import gc

import pytest
from celery.signals import worker_process_init

from exchange import celery as celery_app
from exchange.collector import THRESHOLDS


@pytest.fixture
def restored_collector():
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


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
