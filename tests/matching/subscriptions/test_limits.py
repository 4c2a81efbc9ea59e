"""What one subscription may cost (``matching.subscriptions.run.limits``, SPEC 8.3's fine point
on work limits, SPEC 9's Isolation): checked as it runs, past a limit suspended with the
``state_limit`` notification, offline and in a ``SubscriptionSet`` alike; an interrupt (a
backtest's deadline) is asked inside a join."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from matching.subscriptions import Subscription, parse_query, run_offline
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.run import limits
from matching.subscriptions.run.limits import (
    CHECK_EVERY,
    LIMITS,
    OUTPUT_LIMIT,
    STATE_BYTES_LIMIT,
    WORK_LIMIT,
    Interrupted,
    Limits,
    Meter,
    event_size,
)
from matching.subscriptions.run.multi import SubscriptionSet

NOW = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
SUSPENDED = {"error": "state_limit"}
FOUR_WAY = "SELECT * FROM a AND b AND c AND d WHERE start_time = NOW - 7d"
# three aliases and no equality: every pair joins, no triple does (the stall)
NO_EQUALITY = (
    "SELECT * FROM a AND b AND c WHERE a.price <= b.price, b.price <= c.price, "
    "c.price < a.price, a.seq < 121, b.seq < 121, c.seq < 121"
)


def trade(seq: int, **attrs: Any) -> dict[str, Any]:
    time = (NOW + dt.timedelta(seconds=seq)).isoformat().replace("+00:00", "Z")
    return {"seq": seq, "time": time, "type": "trade", "subject": "a.b", "price": "1.00", **attrs}


def test_the_limits_are_the_documented_ones():
    documented = Limits(state=100_000, state_bytes=4 * 1024 * 1024, work=20_000, outputs=10_000)
    assert documented == LIMITS
    assert Subscription(parse_query("SELECT *"), now=NOW).limits == LIMITS


def test_a_four_way_composite_over_few_events_is_suspended_at_the_first_event_past_its_outputs():
    # Given thirty trades, each of which qualifies for all four aliases
    events = [trade(seq) for seq in range(1, 31)]

    # When the query runs over them offline
    lines = list(run_offline(parse_query(FOUR_WAY), events, now=NOW))

    # Then seq 16 would complete 4 * 15 * 14 * 13 = 10,920 tuples, more than an event may
    # send: none of them is sent, the suspension is, and nothing after it (no end)
    per_event: dict[int, int] = {}
    for line in lines[:-1]:
        per_event[line["seq"]] = per_event.get(line["seq"], 0) + 1
    assert per_event == {seq: 4 * (seq - 1) * (seq - 2) * (seq - 3) for seq in range(4, 16)}
    assert max(per_event.values()) <= OUTPUT_LIMIT
    assert lines[-1] == {"n": len(lines), "seq": 16, "data": SUSPENDED}


def test_a_join_without_equality_is_suspended_before_it_examines_more_than_its_work():
    # Given the join of three aliases that pairs everything and outputs nothing
    sub = Subscription(parse_query(NO_EQUALITY), now=NOW)
    engine = sub.engine
    spent = []
    real = engine.event

    def metered(e, meter):
        spent.append(meter)
        return real(e, meter)

    engine.event = metered  # type: ignore[method-assign]  # metered for this test only

    # When trades arrive until it stops
    outputs = []
    for seq in range(1, 121):
        outputs.extend(o.to_json() for o in sub.push(trade(seq), live=True))
        if sub.finished:
            break

    # Then it is suspended at seq 72, whose join would examine more than WORK_LIMIT
    # candidates, and no event was let past the limit
    assert outputs == [{"n": 1, "seq": 72, "data": SUSPENDED}]
    assert sub.suspended
    assert [m.spent > WORK_LIMIT for m in spent] == [False] * 71 + [True]
    assert spent[-1].spent <= WORK_LIMIT + 72  # it stopped at the list that passed it


def test_a_join_over_its_work_gives_the_same_suspension_offline_as_in_a_set():
    events = [trade(seq) for seq in range(1, 100)]
    offline = list(run_offline(parse_query(NO_EQUALITY), events, now=NOW))
    subs = SubscriptionSet()
    subs.add("x", Subscription(parse_query(NO_EQUALITY), now=NOW))
    live = [(key, out.to_json()) for e in events for key, out in subs.push(e)]
    assert offline == [{"n": 1, "seq": 72, "data": SUSPENDED}]
    assert live == [("x", offline[0])]
    assert "x" not in subs


def test_a_hundred_composites_that_keep_every_event_stay_within_their_bytes():
    # Given 100 copies of the query, whose alias b never qualifies (seq >= 1), so
    # a keeps every event, and events of about 4 KB
    text = "SELECT * FROM a AND b WHERE a.start_time = NOW - 7d, b.seq = 0"
    subs = SubscriptionSet()
    for i in range(100):
        subs.add(i, Subscription(parse_query(text), now=NOW))
    events = [event_from_dict(trade(seq, note="x" * 4000)) for seq in range(1, 1100)]
    size = event_size(events[0].raw)
    past = STATE_BYTES_LIMIT // size + 1  # the event whose keeping passes the limit

    # When the events arrive
    held = []
    suspended = []
    for e in events:
        for key, out in subs.push(e):
            suspended.append((key, out.to_json()))
        held.append(sum(subs.subscription(i).engine.kept_bytes for i in range(100) if i in subs))

    # Then each copy held at most the limit's bytes (plus the event that passed it), and
    # was suspended at that event; nothing is held after it
    assert max(held) <= 100 * (STATE_BYTES_LIMIT + size)
    assert suspended == [(i, {"n": 1, "seq": past, "data": SUSPENDED}) for i in range(100)]
    assert len(subs) == 0
    assert held[past - 2] == 100 * (past - 1) * size  # the event before: all still held


def test_held_bytes_follow_windows_that_open_and_close():
    # tumbling windows of 2: the bytes of an open window only
    sub = Subscription(parse_query("SELECT COUNT(price, 2)"), now=NOW, limits=Limits())
    sizes = []
    for seq in range(1, 5):
        sub.push(trade(seq), live=True)
        sizes.append(sub.engine.kept_bytes)
    one = event_size(trade(1))
    assert sizes == [one, 0, one, 0]
    # a sliding HAVING window of 2: at most two events' bytes
    sub = Subscription(parse_query("SELECT seq HAVING COUNT(price, 2) > 5"), now=NOW)
    for seq in range(1, 5):
        sub.push(trade(seq), live=True)
    assert sub.engine.kept_bytes == 2 * event_size(trade(4))
    # past the bytes limit: suspended after the event's outputs
    small = Limits(state_bytes=2 * one)
    sub = Subscription(parse_query("SELECT seq HAVING COUNT(price, 5) > 5"), now=NOW, limits=small)
    got = [o.to_json() for seq in range(1, 5) for o in sub.push(trade(seq), live=True)]
    assert got == [{"n": 1, "seq": 3, "data": SUSPENDED}]


def test_a_having_window_that_would_send_more_than_its_outputs_sends_the_suspension():
    query = parse_query("SELECT seq HAVING COUNT(price, 3) = 3")
    sub = Subscription(query, now=NOW, limits=Limits(outputs=2))
    got = [o.to_json() for seq in range(1, 5) for o in sub.push(trade(seq), live=True)]
    assert got == [{"n": 1, "seq": 3, "data": SUSPENDED}]


def test_a_pattern_event_completing_more_than_its_outputs_is_suspended_alone_and_in_a_set():
    text = (
        "SELECT a.seq, b.seq FROM FILTER{type = 'trade'}(EVENTS) AS a "
        "NEXT{b.price > a.price} FILTER{type = 'trade'}(EVENTS) AS b"
    )
    events = [trade(1), trade(2), trade(3), trade(4, price="2.00")]
    limits = Limits(outputs=2)
    alone = Subscription(parse_query(text), now=NOW, limits=limits)
    got = [o.to_json() for e in events for o in alone.push(e, live=True)]
    subs = SubscriptionSet()
    for i in range(3):
        subs.add(i, Subscription(parse_query(text), now=NOW, limits=limits))
    in_set = [(key, o.to_json()) for e in events for key, o in subs.push(e)]
    # seq 4 completes the three waiting instances: one too many
    assert got == [{"n": 1, "seq": 4, "data": SUSPENDED}]
    assert in_set == [(i, got[0]) for i in range(3)]
    assert len(subs) == 0


def test_an_interrupt_is_asked_inside_a_join_and_stops_it():
    # Given the join without equality, fed 59 trades (its work grows with the square)
    query = parse_query(NO_EQUALITY)
    sub = Subscription(query, now=NOW)
    for seq in range(1, 60):
        sub.push(trade(seq), live=True)
    asked = []

    def interrupt() -> bool:
        asked.append(True)
        return False

    # When the 60th is joined with an interrupt
    meter = Meter(LIMITS, interrupt)
    assert sub.engine.event(event_from_dict(trade(60)), meter) == []

    # Then it was asked once per CHECK_EVERY candidates or so (a list is paid for whole,
    # and no list is longer than 60 here)
    assert meter.spent > 5 * CHECK_EVERY
    assert meter.spent // (CHECK_EVERY + 60) <= len(asked) <= meter.spent // CHECK_EVERY

    # And one that answers true stops inside the event: Interrupted, and the subscription
    # is left finished, not suspended
    stop = Subscription(query, now=NOW)
    for seq in range(1, 60):
        stop.push(trade(seq), live=True)
    with pytest.raises(Interrupted):
        stop.push(trade(60), live=True, interrupt=lambda: True)
    assert stop.finished and not stop.suspended
    assert stop.push(trade(61), live=True) == []


def test_an_interrupted_offline_run_stops_where_it_is_with_no_end():
    read = []

    def events():
        for seq in range(1, 200):
            read.append(seq)
            yield trade(seq, price="1.00" if seq % 2 else "2.00")

    answers = iter([False] * 30 + [True])
    query = parse_query("SELECT seq WHERE price > 1.50, end_time = NOW + 1h")
    lines = list(run_offline(query, events(), now=NOW, interrupt=answers.__next__))
    # asked before each event: the 31st is not evaluated
    assert read == list(range(1, 32))
    assert lines == [{"n": n, "seq": 2 * n, "data": {"seq": 2 * n}} for n in range(1, 16)]


def test_an_interrupt_is_asked_inside_a_patterns_event_once_per_instances_offered(monkeypatch):
    # Given a pattern whose 50 waiting instances are each offered every trade (none moves)
    text = (
        "SELECT a.seq FROM FILTER{type = 'trade'}(EVENTS) AS a "
        "NEXT{b.subject = a.subject AND b.price != a.price} FILTER{type = 'trade'}(EVENTS) AS b"
    )
    monkeypatch.setattr(limits, "CHECK_EVERY", 10)
    sub = Subscription(parse_query(text), now=NOW)
    for seq in range(1, 51):
        sub.push(trade(seq), live=True)
    asked = []

    def interrupt() -> bool:
        asked.append(True)
        return False

    # When the 51st is offered with an interrupt
    assert sub.push(trade(51), live=True, interrupt=interrupt) == []

    # Then it was asked every 10 instances offered, and the meter is gone with the event
    assert len(asked) == 5
    automaton = sub.engine.sides[0]
    assert "meter" not in vars(automaton)
    # and one that answers true stops the pattern inside the event
    with pytest.raises(Interrupted):
        sub.push(trade(52), live=True, interrupt=lambda: True)
    assert sub.finished and not sub.suspended
