"""The evaluator's rules one by one (SPEC 8.3 forms 1 and 2), on small hand-made logs."""

from __future__ import annotations

import datetime as dt

import pytest

from matching.subscriptions import (
    STATE_LIMIT,
    End,
    EventError,
    Notification,
    Subscription,
    event_from_dict,
    parse_query,
    run_offline,
)
from tests.matching.subscriptions.subscription_cases import SUBJECT, TRADES, at

NOW = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)


def ev(seq: int, hhmm: str, type_: str = "trade", subject: str = SUBJECT, **attrs) -> dict:
    return {"seq": seq, "time": at(hhmm), "type": type_, "subject": subject, **attrs}


def run(query: str, events, now: dt.datetime = NOW, **kw):
    return [
        (o["seq"], o["data"]) if "n" in o else "end"
        for o in run_offline(parse_query(query), events, now=now, **kw)
    ]


# -- form 1 ---------------------------------------------------------------------------------


def test_an_absent_attribute_fails_every_predicate_and_star_means_present():
    events = [ev(1, "10:00", price="1.00"), ev(2, "10:01"), ev(3, "10:02", price="2.00")]
    assert run("SELECT seq WHERE (NOT price > 1.50)", events) == [(1, {"seq": 1})]
    assert run("SELECT seq WHERE price != 1.00", events) == [(3, {"seq": 3})]
    assert run("SELECT seq WHERE price = *", events) == [(1, {"seq": 1}), (3, {"seq": 3})]


def test_contradictory_conjuncts_are_accepted_and_match_nothing():
    assert run("SELECT seq WHERE price > 5, price < 3", TRADES) == []


def test_projection_holds_only_the_attributes_the_event_has():
    events = [ev(1, "10:00", price="1.00"), ev(2, "10:01", offer=4)]
    assert run("SELECT price AS p, offer", events) == [(1, {"p": "1.00"}), (2, {"offer": 4})]
    assert run("SELECT *", events[:1]) == [(1, events[0])]


def test_subject_patterns_select_markets():
    events = [
        ev(1, "10:00"),
        ev(2, "10:01", subject="office.supplies"),
        ev(3, "10:02", subject="garden.tools"),
    ]
    assert [s for s, _ in run("SELECT seq WHERE subject MATCHES 'office.>'", events)] == [1, 2]
    assert [s for s, _ in run("SELECT seq WHERE subject MATCHES 'office.*'", events)] == [2]
    assert [s for s, _ in run("SELECT seq WHERE (NOT subject MATCHES 'office.>')", events)] == [3]


def test_avg_is_rounded_half_even_to_8_places_and_others_keep_their_type():
    events = [ev(1, "10:00", price="0.000000005", quantity=3),
              ev(2, "10:01", price="0.000000010", quantity=4),
              ev(3, "10:02", price="0.000000025", quantity=5),
              ev(4, "10:03", price="0.000000000", quantity=6)]  # fmt: skip
    # (5 + 10) / 2 = 7.5e-9 rounds to 1e-8; (25 + 0) / 2 = 12.5e-9 rounds to 1e-8 (half-even)
    assert run("SELECT AVG(price, 2), SUM(quantity, 2), MAX(time, 2), MIN(price, 2)", events) == [
        (2, {"AVG(price, 2)": "0.00000001", "SUM(quantity, 2)": 7,
             "MAX(time, 2)": at("10:01"), "MIN(price, 2)": "0.000000005"}),
        (4, {"AVG(price, 2)": "0.00000001", "SUM(quantity, 2)": 11,
             "MAX(time, 2)": at("10:03"), "MIN(price, 2)": "0.000000000"}),
    ]  # fmt: skip
    assert run("SELECT SUM(price, 2), AVG(quantity, 2), COUNT(price, 2)", events[:2]) == [
        (
            2,
            {
                "SUM(price, 2)": "0.000000015",
                "AVG(quantity, 2)": "3.50000000",
                "COUNT(price, 2)": 2,
            },
        )
    ]


def test_tumbling_windows_run_per_group_and_skip_events_without_the_attribute():
    events = [ev(1, "10:00", price="1.00"), ev(2, "10:01", subject="a.b", price="2.00"),
              ev(3, "10:02"), ev(4, "10:03", price="3.00"), ev(5, "10:04", subject="a.b", price="4.00")]  # fmt: skip
    assert run("SELECT subject, MAX(price, 2) AS top GROUP BY subject", events) == [
        (4, {"subject": SUBJECT, "top": "3.00"}),
        (5, {"subject": "a.b", "top": "4.00"}),
    ]
    # grouped but not selected: the group does not show
    assert run("SELECT COUNT(price, 2) GROUP BY subject", events) == [
        (4, {"COUNT(price, 2)": 2}),
        (5, {"COUNT(price, 2)": 2}),
    ]


def test_aggregate_windows_count_history():
    # registered at 10:30 with start 10:05: seq 2, 3, 4 are history, 5 and 6 live
    got = run("SELECT SUM(price, 2) WHERE start_time = NOW - 25m", TRADES, at_("10:30"))
    assert got == [(3, {"SUM(price, 2)": "2.00"}), (5, {"SUM(price, 2)": "2.50"})]


def at_(hhmm: str) -> dt.datetime:
    return dt.datetime.fromisoformat(at(hhmm))


def test_having_compares_the_exact_aggregate():
    events = [ev(k, f"10:0{k}", price=p) for k, p in enumerate(["1", "1", "2"], 1)]
    # the average is 4/3: above 1.33333333, below 1.33333334 (and its print would be 1.33333333)
    assert [s for s, _ in run("SELECT seq HAVING AVG(price, 3) > 1.33333333", events)] == [1, 2, 3]
    assert run("SELECT seq HAVING AVG(price, 3) >= 1.33333334", events) == []


def test_having_windows_are_per_group():
    events = [ev(1, "10:00", price="2"), ev(2, "10:01", subject="x.y", price="2"),
              ev(3, "10:02", price="2"), ev(4, "10:03", subject="x.y", price="0")]  # fmt: skip
    assert run("SELECT seq HAVING MIN(price, 2) >= 2 GROUP BY subject", events) == [
        (1, {"seq": 1}),
        (3, {"seq": 3}),
    ]


def test_a_window_that_holds_more_than_the_limit_suspends_the_subscription():
    events = [ev(k, "10:00", subject=f"s{k}", price="1") for k in range(1, 6)]
    assert run("SELECT COUNT(price, 2) GROUP BY subject", events, state_limit=3) == [
        (4, {"error": "state_limit"})
    ]
    assert (
        run("SELECT seq GROUP BY subject HAVING COUNT(price, 2) = 2", events, state_limit=5) == []
    )


# -- time -----------------------------------------------------------------------------------


def test_the_default_start_is_now_so_history_is_skipped():
    assert [s for s, _ in run("SELECT seq", TRADES, at_("10:30"))] == [5, 6]


def test_an_absolute_range_in_the_past_is_purely_historic():
    q = "SELECT seq WHERE start_time = TIMESTAMP '2026-11-20T10:05:00Z', end_time = NOW - 15m"
    assert run(q, TRADES, at_("10:30")) == [(2, {"seq": 2}), (3, {"seq": 3}), "end"]


def test_an_end_equal_to_now_completes_after_the_history():
    assert run("SELECT seq WHERE start_time = NOW - 1h, end_time = NOW", TRADES, at_("10:10")) == [
        (1, {"seq": 1}),
        (2, {"seq": 2}),
        "end",
    ]


def test_the_event_reaching_the_end_is_not_delivered_and_ends_it():
    q = "SELECT seq WHERE end_time = TIMESTAMP '2026-11-20T10:20:00Z'"
    assert run(q, TRADES) == [(1, {"seq": 1}), (2, {"seq": 2}), (3, {"seq": 3}), "end"]


def test_a_future_end_without_a_live_event_reaching_it_does_not_complete():
    assert run("SELECT seq WHERE end_time = NOW + 1w", TRADES)[-1] == (6, {"seq": 6})


def test_a_future_start():
    assert [s for s, _ in run("SELECT seq WHERE start_time = NOW + 20m", TRADES)] == [4, 5, 6]


# -- the Subscription object ----------------------------------------------------------------


def test_the_subscription_numbers_notifications_and_stops_once_finished():
    sub = Subscription(parse_query("SELECT seq WHERE end_time = NOW + 10m"), now=NOW)
    out = [o for e in TRADES for o in sub.push(e, live=True)]
    assert out == [Notification(1, 1, {"seq": 1}), Notification(2, 2, {"seq": 2}), End()]
    assert sub.finished and not sub.suspended
    assert sub.push(TRADES[0], live=True) == []


def test_history_done_completes_a_historic_subscription_once():
    sub = Subscription(
        parse_query("SELECT seq WHERE start_time = NOW - 1h, end_time = NOW"), now=at_("11:00")
    )
    assert [o.seq for e in TRADES for o in sub.push(e, live=False)] == [1, 2, 3, 4, 5, 6]
    assert sub.history_done() == [End()]
    assert sub.history_done() == []


def test_a_malformed_event_is_an_event_error():
    with pytest.raises(EventError) as info:
        event_from_dict({"seq": 1, "time": "yesterday", "type": "trade", "subject": SUBJECT})
    assert info.value.field == "time"


# -- form 2 ---------------------------------------------------------------------------------


def test_tuples_are_of_distinct_events_and_completed_by_the_last():
    events = [ev(1, "10:00", offer=1), ev(2, "10:01", offer=2), ev(3, "10:02", offer=3)]
    got = run("SELECT a.seq, b.seq FROM a AND b WHERE a.offer < b.offer", events)
    assert got == [
        (2, {"a": {"seq": 1}, "b": {"seq": 2}}),
        (3, {"a": {"seq": 1}, "b": {"seq": 3}}),
        (3, {"a": {"seq": 2}, "b": {"seq": 3}}),
    ]


def test_tuples_completed_by_one_event_go_in_from_order_of_their_seqs():
    events = [ev(1, "10:00", offer=5), ev(2, "10:01", offer=5), ev(3, "10:02", offer=5)]
    got = run("SELECT a.seq, b.seq FROM a AND b WHERE a.offer = b.offer", events)
    assert [(s, d["a"]["seq"], d["b"]["seq"]) for s, d in got] == [
        (2, 1, 2), (2, 2, 1),
        (3, 1, 3), (3, 2, 3), (3, 3, 1), (3, 3, 2),
    ]  # fmt: skip


def test_each_alias_has_its_own_range_and_the_subscription_ends_with_the_last():
    q = (
        "SELECT a.price, b.price FROM a AND b WHERE a.type = 'trade', b.type = 'trade', "
        "a.start_time = NOW - 30m, a.end_time = NOW, b.end_time = NOW + 15m, b.price > a.price"
    )
    # at 10:30: a takes 10:00-10:30 (history), b 10:30-10:45 (live: seq 5 at 10:40)
    assert run(q, TRADES, at_("10:30")) == [
        (5, {"a": {"price": "1.00"}, "b": {"price": "1.30"}}),
        (5, {"a": {"price": "1.10"}, "b": {"price": "1.30"}}),
        (5, {"a": {"price": "0.90"}, "b": {"price": "1.30"}}),
        (5, {"a": {"price": "1.20"}, "b": {"price": "1.30"}}),
        "end",
    ]


def test_the_composite_with_a_week_of_history():
    events = [ev(1, "09:00", price="1.10"), ev(2, "10:01", "offer_posted", offer=7, ask="1.00"),
              ev(3, "10:02", "offer_posted", subject="x.y", offer=8, ask="1.00")]  # fmt: skip
    q = (
        "SELECT b.offer, b.ask FROM a AND b WHERE a.type = 'trade', a.price >= 1.05, "
        "a.start_time = NOW - 7d, b.type = 'offer_posted', b.subject = a.subject"
    )
    assert run(q, events, at_("10:00")) == [(2, {"b": {"offer": 7, "ask": "1.00"}})]
    # registered before the trade's week started, nothing
    assert run(q.replace("7d", "1m"), events, at_("10:00")) == []


def test_select_star_nests_every_alias():
    events = [ev(1, "10:00", offer=1), ev(2, "10:01", offer=2)]
    assert run("SELECT * FROM a AND b WHERE a.offer = 1, b.offer = 2", events) == [
        (2, {"a": events[0], "b": events[1]})
    ]


def test_kept_events_past_the_limit_suspend_a_composite():
    events = [ev(k, "10:00", offer=1) for k in range(1, 6)]
    got = run("SELECT a.seq FROM a AND b WHERE a.offer = 1, b.offer = 2", events, state_limit=3)
    assert got == [(4, {"error": "state_limit"})]


def test_the_state_limit_is_100000_events_by_default():
    # The behaviour at the limit is shown above with small limits (the same code path).
    assert STATE_LIMIT == 100_000
    sub = Subscription(parse_query("SELECT a.seq FROM a AND b WHERE a.offer = 1"), now=NOW)
    assert sub.state_limit == STATE_LIMIT


def test_a_closed_alias_keeps_nothing():
    # b's range ends at 10:05: a's events after that can never join, so none is kept
    events = [ev(k, "10:10", offer=1) for k in range(1, 6)]
    q = "SELECT a.seq FROM a AND b WHERE a.offer = 1, b.offer = 2, b.end_time = NOW + 5m"
    assert run(q, events, state_limit=2) == []


def test_an_equality_join_finds_partners_of_any_numeric_spelling():
    # kept events are hashed by the joined value: 6 and "6.0" are the same quantity
    events = [ev(1, "10:00", "offer_posted", offer=1, quantity_max=5),
              ev(2, "10:01", "offer_posted", offer=2, quantity_max="6.0"),
              ev(3, "10:02", quantity=5, price="1.00"),
              ev(4, "10:03", quantity=6, price="1.00")]  # fmt: skip
    q = "SELECT a.offer, b.seq FROM a AND b WHERE a.type = 'offer_posted', b.quantity = a.quantity_max"
    assert run(q, events) == [
        (3, {"a": {"offer": 1}, "b": {"seq": 3}}),
        (4, {"a": {"offer": 2}, "b": {"seq": 4}}),
    ]
