"""Section 8's work bounded before it is done (issue 37 item 4, SPEC 8.3's fine point on
work limits), through the exchange: a subscription past a limit is suspended with the
``state_limit`` notification by the engine, one event at a time or in batches alike, its owner sees
why, and a backtest stops at its time bound however the time is spent."""

from __future__ import annotations

import types

import pytest

from exchange.models import Subscription
from exchange.selectors import subscriptions as selectors
from exchange.services.subscriptions import subscription_create
from matching.subscriptions.run.limits import WORK_LIMIT, Meter
from tests.api.conftest import client_for
from tests.factories import UserFactory
from tests.subscriptions.log import DAY, advance, append, append_at, offline, outbox, trade

pytestmark = pytest.mark.django_db

FOUR_WAY = "SELECT * FROM a AND b AND c AND d WHERE start_time = NOW - 7d"
NO_EQUALITY = (
    "SELECT * FROM a AND b AND c WHERE a.price <= b.price, b.price <= c.price, "
    "c.price < a.price, a.type = 'trade', b.type = 'trade', c.type = 'trade'"
)


def trades(count: int) -> None:
    append_at([trade("1.00", trade_id=i) for i in range(1, count + 1)], DAY)


def test_the_issues_four_way_composite_is_suspended_through_the_api_with_its_reason():
    # Given 30 trades in the log and the issue's query registered over their week
    trades(30)
    user = UserFactory()
    created = client_for(user).post("/api/v1/subscriptions/", {"query": FOUR_WAY}, format="json")
    assert created.status_code == 201
    sub = Subscription.objects.get(pk=created.json()["id"])

    # When the engine advances it
    advance(sub)

    # Then it is suspended at the 16th event with the state_limit notification, exactly
    # what subscription_run prints on the same log, and its owner sees why
    lines = outbox(sub)
    assert (sub.state, sub.reason, sub.evaluator) == ("suspended", "state_limit", None)
    assert lines == offline(sub)
    assert lines[-1] == {"n": len(lines), "seq": 16, "data": {"error": "state_limit"}}
    shown = client_for(user).get(f"/api/v1/subscriptions/{sub.pk}/").json()
    assert (shown["state"], shown["reason"]) == ("suspended", "state_limit")


def test_a_join_without_equality_is_suspended_by_the_engine_as_offline():
    # Given two copies of a three-alias join that pairs every trade and outputs nothing
    owner = UserFactory()
    alone = subscription_create(owner=owner, query=NO_EQUALITY)
    together = subscription_create(owner=owner, query=NO_EQUALITY)

    # When 100 trades arrive and the engine follows them in batches of 7
    for i in range(100):
        append([trade("1.00")])
        if i % 7 == 6:
            advance(alone, together, chunks=[7])
    advance(alone, together)

    # Then both stop at the same event, the first whose join would examine more than
    # WORK_LIMIT candidates, with the state_limit notification and nothing else: what
    # subscription_run prints on the same log
    lines = outbox(alone)
    assert lines == outbox(together) == offline(alone)
    assert [line["data"] for line in lines] == [{"error": "state_limit"}]
    assert (alone.state, alone.reason) == (together.state, together.reason)
    assert (alone.state, alone.reason) == ("suspended", "state_limit")


class SimulatedClock:
    """Time as the evaluation spends it: each candidate a join examines costs ``cost``
    seconds (``Meter.spend`` is counted), so the bound is tested however the time is spent,
    without a wall clock."""

    def __init__(self, cost: float) -> None:
        self.cost = cost
        self.units = 0
        self.readings: list[float] = []

    def spend(self, real):
        clock = self

        def spend(meter: Meter, units: int) -> None:
            clock.units += units
            real(meter, units)

        return spend

    def monotonic(self) -> float:
        self.readings.append(self.units * self.cost)
        return self.readings[-1]


def test_a_backtest_of_a_heavy_composite_stops_within_a_tenth_of_its_time_bound(monkeypatch):
    # Given 1,500 trades and a two-alias join with no equality, whose joins would take
    # (1,500 squared) candidates, at 30 us each far more than the 3 s bound
    append_at([trade("1.00", trade_id=i) for i in range(1, 1501)], DAY)
    assert WORK_LIMIT > 2 * 1500  # no event passes the work limit: the time stops it
    clock = SimulatedClock(cost=30e-6)
    monkeypatch.setattr(Meter, "spend", clock.spend(Meter.spend))
    monkeypatch.setattr(selectors, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    query = "SELECT a.seq FROM a AND b WHERE a.price < b.price, a.start_time = NOW - 1d"

    # When it is backtested through the API
    response = client_for(UserFactory()).post(
        "/api/v1/subscriptions/test/",
        {"query": query, "since": DAY.isoformat(), "until": DAY.replace(hour=1).isoformat()},
        format="json",
    )

    # Then it answers truncated, having stopped at the first reading past its bound, and
    # spent at most a tenth more than the bound
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["truncated"], body["end"], body["notifications"]) == (True, False, [])
    budget = selectors.BACKTEST_SECONDS
    assert clock.readings[-2] <= budget < clock.readings[-1] <= budget * 1.1
    # the join was stopped inside: far fewer candidates than it would have examined
    assert clock.units < 1500 * 1499 // 2
