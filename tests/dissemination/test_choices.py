"""The optimizer's choices kept in Redis and read back for the staff dashboard."""

from __future__ import annotations

import pytest

from exchange.dissemination import choices
from exchange.redis_clients import redis_client
from exchange.selectors.dissemination import dissemination_choices
from matching.dissemination import Optimizer
from tests.dissemination.test_optimizer import UNITS, plan


@pytest.fixture
def empty_log():
    redis_client().delete(choices.choices_key())
    yield
    redis_client().delete(choices.choices_key())


def test_choices_are_kept_newest_first_and_bounded(empty_log, monkeypatch):
    monkeypatch.setattr(choices, "KEPT", 2)
    optimizer = Optimizer(UNITS, sink=choices.choice_record)
    optimizer.choose(1, plan(1000))
    optimizer.choose(2, plan(1000))
    optimizer.choose(3, plan(1000))
    got = dissemination_choices(limit=10)
    assert [(c["seq"], c["choice"]) for c in got] == [(3, "reformulate"), (2, "reformulate")]
    assert got[0]["estimates"]["reformulate"] == {"messages": 4, "bytes": 296, "seconds": 1440}
    assert got == optimizer.choices()[:2]


def test_no_choices_or_a_limit_below_one_read_as_none(empty_log):
    assert dissemination_choices() == []
    Optimizer(UNITS, sink=choices.choice_record).choose(1, plan(1000))
    assert dissemination_choices(limit=0) == []
    assert len(dissemination_choices(limit=1)) == 1
