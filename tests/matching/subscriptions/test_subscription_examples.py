"""SPEC 8.3's worked examples (forms 1 and 2) through the evaluator."""

from __future__ import annotations

import pytest

from matching.subscriptions import Subscription, parse_query, parse_timestamp, run_offline
from tests.matching.subscriptions.subscription_cases import (
    COMPOSITE,
    COMPOSITE_QUERY,
    EXAMPLES,
    TRADES,
    at,
)


def notifications(query: str, events, now: str | None):
    moment = parse_timestamp(now or events[0]["time"], "now")
    return list(run_offline(parse_query(query), events, now=moment))


@pytest.mark.parametrize(("query", "now", "expected"), EXAMPLES)
def test_worked_example(query, now, expected):
    assert notifications(query, TRADES, now) == [
        {"n": n, "seq": seq, "data": data} for n, (seq, data) in enumerate(expected, 1)
    ]


def test_the_hybrid_example_sends_history_before_live():
    # Registered at 10:30: seq 2 and 4 are history, 5 and 6 arrive live.
    sub = Subscription(
        parse_query("SELECT price WHERE type = 'trade', price > 1.00, start_time = NOW - 25m"),
        now=parse_timestamp(at("10:30"), "now"),
    )
    history = [o for e in TRADES[:4] for o in sub.push(e, live=False)]
    live = [o for e in TRADES[4:] for o in sub.push(e, live=True)]
    assert [o.seq for o in history] == [2, 4]
    assert [(o.n, o.seq) for o in live] == [(3, 5), (4, 6)]
    assert not sub.finished


def test_the_composite_example():
    assert notifications(COMPOSITE_QUERY, COMPOSITE, None) == [
        {"n": 1, "seq": 2, "data": {"b": {"offer": 7}}}
    ]
