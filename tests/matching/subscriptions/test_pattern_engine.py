"""Form 3's automata beyond the examples: hashed instances (the counts), WITHIN, the
state limit, UNION's order, history ignored."""

from __future__ import annotations

import datetime as dt

from matching.subscriptions import Subscription, parse_query, run_offline
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.patterns.automaton import PatternEngine

BASE = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
T = "FILTER{type = 'trade'}(EVENTS)"


def trade(seq: int, subject: str, price: str, minute: int = 0) -> dict:
    time = (BASE + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"seq": seq, "time": time, "type": "trade", "subject": subject, "offer": 1,
            "trade": seq, "price": price, "quantity": 1}  # fmt: skip


def test_an_event_touches_only_the_instances_waiting_on_its_subject():
    # 1,000 markets, one waiting instance each: a trade on one market is offered to the
    # single instance hashed under its subject, not to the 1,000.
    engine = PatternEngine(
        parse_query(
            f"SELECT a.price, b.price FROM {T} AS a "
            f"NEXT{{b.subject = a.subject AND b.price > a.price}} {T} AS b"
        )
    )
    for i in range(1000):
        assert engine.event(event_from_dict(trade(i + 1, f"m.{i}", "1.00"))) == []
    assert (engine.kept_events, engine.touched) == (1000, 0)
    found = engine.event(event_from_dict(trade(1001, "m.7", "1.10")))
    assert found == [(1001, {"a.price": "1.00", "b.price": "1.10"})]
    # m.7's instance moved on (and completed); the new trade waits in its place
    assert (engine.kept_events, engine.touched) == (1000, 1)
    # below m.8's threshold (b.price > 1.00): not even offered to its instance, kept
    engine.event(event_from_dict(trade(1002, "m.8", "0.50")))
    assert (engine.kept_events, engine.touched) == (1001, 1)
    engine.event(event_from_dict(trade(1003, "m.9", "1.00")))  # equal: not above, kept
    assert (engine.kept_events, engine.touched) == (1002, 1)


def test_without_an_equality_or_an_order_every_waiting_instance_is_touched():
    engine = PatternEngine(
        parse_query(f"SELECT b.price FROM {T} AS a NEXT{{b.price != a.price}} {T} AS b")
    )
    for i in range(100):
        engine.event(event_from_dict(trade(i + 1, f"m.{i}", "2.00")))
    assert engine.touched == 99 * 100 // 2
    assert engine.kept_events == 100


def test_an_event_touches_only_the_instances_whose_threshold_it_passes():
    # "a trade, then a later one at least 10% higher": each instance waits on its own
    # threshold 1.1 * a.price, sorted; a trade is offered to those at or below its price
    engine = PatternEngine(
        parse_query(f"SELECT a.seq, b.seq FROM {T} AS a NEXT{{1.1 * a.price <= b.price}} {T} AS b")
    )
    for seq, price in enumerate(["3.00", "3.00", "2.00", "1.00"], 1):
        engine.event(event_from_dict(trade(seq, "x", price)))
    # waiting: thresholds 3.30 (two of them), 2.20, 1.10; none reached by the later trades
    assert (engine.kept_events, engine.touched) == (4, 0)
    # a trade without a price reaches no threshold and starts an instance whose threshold
    # is NULL, which no later trade passes
    no_price = trade(5, "x", "1.00")
    del no_price["price"]
    assert engine.event(event_from_dict(no_price)) == []
    assert (engine.kept_events, engine.touched) == (5, 0)
    # 2.20 passes 1.10 and equals 2.20 (<= holds): those two move on, nothing else is touched
    found = engine.event(event_from_dict(trade(6, "x", "2.20")))
    assert found == [(6, {"a.seq": 3, "b.seq": 6}), (6, {"a.seq": 4, "b.seq": 6})]
    assert (engine.kept_events, engine.touched) == (4, 2)  # 3.30 twice, NULL, 2.42 (new)
    found = engine.event(event_from_dict(trade(7, "x", "9.00")))
    assert [d for _, d in found] == [
        {"a.seq": 1, "b.seq": 7}, {"a.seq": 2, "b.seq": 7}, {"a.seq": 6, "b.seq": 7}
    ]  # fmt: skip
    assert (engine.kept_events, engine.touched) == (2, 5)  # the NULL one and 9.90 wait


def test_a_fold_rehashes_on_last_and_within_drops_old_instances():
    query = parse_query(
        f"SELECT a.price, b.price, n FROM {T} AS a "
        f"FOLD{{b.price = b.last.price + 1, b.subject = a.subject, COUNT AS n}} {T} AS b "
        "WITHIN 10m"
    )
    events = [trade(1, "x", "1", 0), trade(2, "x", "2", 5), trade(3, "x", "3", 10),
              trade(4, "x", "4", 11)]  # fmt: skip
    out = list(run_offline(query, events, now=BASE))
    assert out == [
        {"n": 1, "seq": 2, "data": {"a.price": "1", "b.price": "2", "n": 1}},
        {"n": 2, "seq": 3, "data": {"a.price": "1", "b.price": "3", "n": 2}},
        {"n": 3, "seq": 3, "data": {"a.price": "2", "b.price": "3", "n": 1}},
        # a (at 10:00) is 11 minutes old at seq 4: dropped; 2 and 3 go on
        {"n": 4, "seq": 4, "data": {"a.price": "2", "b.price": "4", "n": 2}},
        {"n": 5, "seq": 4, "data": {"a.price": "3", "b.price": "4", "n": 1}},
    ]


def test_more_live_instances_than_the_limit_suspend_the_subscription():
    sub = Subscription(
        parse_query(f"SELECT a.price FROM {T} AS a NEXT{{b.price > 5}} {T} AS b"),
        now=BASE,
        state_limit=3,
    )
    outs = [sub.push(trade(i, "x", "1"), live=True) for i in range(1, 5)]
    assert outs[:3] == [[], [], []]
    assert [o.to_json() for o in outs[3]] == [{"n": 1, "seq": 4, "data": {"error": "state_limit"}}]
    assert sub.finished and sub.suspended
    assert sub.push(trade(5, "x", "9"), live=True) == []


def test_union_keeps_both_sides_in_order():
    query = parse_query(
        f"SELECT b.price AS p FROM {T} AS a NEXT{{b.price > a.price}} {T} AS b "
        f"UNION SELECT a.price AS p FROM FILTER{{price > 1}}(EVENTS) AS a"
    )
    events = [trade(1, "x", "1"), trade(2, "x", "2")]
    assert list(run_offline(query, events, now=BASE)) == [
        {"n": 1, "seq": 2, "data": {"p": "2"}},  # the left side first on a tie
        {"n": 2, "seq": 2, "data": {"p": "2"}},
    ]


def test_history_starts_no_instance():
    sub = Subscription(
        parse_query(f"SELECT b.price FROM {T} AS a NEXT{{b.price > a.price}} {T} AS b"), now=BASE
    )
    assert sub.push(trade(1, "x", "1"), live=False) == []
    assert sub.push(trade(2, "x", "2"), live=True) == []
    assert sub.engine.kept_events == 1
