"""Form 4's evaluation (SPEC 8.3): the open offers built from the events, the answer,
the first notification at registration, the threshold rule and the choices of
docs/subscriptions.md, each as exact output lines of ``run_offline``."""

from __future__ import annotations

import datetime as dt

import pytest

from matching.subscriptions import Subscription, parse_query, parse_timestamp, run_offline
from tests.matching.subscriptions.form4_cases import (
    PENCILS,
    RANGE_MIN_QUERY,
    VALUE_QUERY,
    Flow,
    range_min_flow,
    value_flow,
)

BEFORE = "2026-11-20T09:00:00Z"


def run(query: str, flow: Flow, now: str | None = None) -> list[tuple[int | None, dict]]:
    """``(seq, data)`` of every line, checking that ``n`` counts 1, 2, 3, ... and no end."""
    events = flow.events
    at = parse_timestamp(now or (events[0]["time"] if events else BEFORE), "now")
    lines = list(run_offline(parse_query(query), events, now=at))
    assert [line["n"] for line in lines] == list(range(1, len(lines) + 1))
    return [(line["seq"], line["data"]) for line in lines]


def offer(id_, value):
    return {"offer": id_, "value": value}


NONE = {"offer": None}


def range_watch(func="MIN", attribute="ask", where="", threshold=""):
    extra = f", {where}" if where else ""
    notify = f" NOTIFY WHEN CHANGED BY {threshold}" if threshold else ""
    return f"SELECT {func}({attribute}) FROM offers WHERE subject = '{PENCILS}'{extra}{notify}"


# -- the worked examples --------------------------------------------------------------------


def test_range_min_registered_with_offers_1_to_3_open():
    f = range_min_flow()
    assert run(RANGE_MIN_QUERY, f, now=f.time(4)) == [
        (3, offer(1, "1.00")),
        (4, offer(4, "0.97")),
        (5, offer(1, "1.00")),
    ]


def test_range_min_registered_before_the_first_event():
    assert run(RANGE_MIN_QUERY, range_min_flow()) == [
        (None, NONE),
        (1, offer(1, "1.00")),
        (4, offer(4, "0.97")),
        (5, offer(1, "1.00")),
    ]


def test_value_based_notifies_none_100_106_112_none():
    assert run(VALUE_QUERY, value_flow()) == [
        (None, NONE),
        (3, offer(1, "1.00")),
        (5, offer(1, "1.06")),
        (6, offer(1, "1.12")),
        (7, NONE),
    ]


# -- the open offers ------------------------------------------------------------------------


def test_matching_bids_is_0_before_the_first_best_offer():
    f = Flow()
    f.post(1, "1.00")
    f.best(1, "1.10", 2)
    assert run("SELECT matching_bids FROM offers WHERE offer = 1", f) == [
        (None, NONE),
        (1, offer(1, 0)),
        (2, offer(1, 2)),
    ]


def test_an_amendment_keeps_best_value_and_bids_until_the_next_best_offer():
    f = Flow()
    f.post(1, "1.00", quantity_max=100)
    f.best(1, "1.10", 2)
    f.amend(1, "0.95", quantity_max=200)  # 3: the terms change, value and bids stay
    f.best(1, "1.20", 3)
    for attribute, expected in [
        ("best_value", [(None, NONE), (2, offer(1, "1.10")), (4, offer(1, "1.20"))]),
        ("matching_bids", [(None, NONE), (1, offer(1, 0)), (2, offer(1, 2)), (4, offer(1, 3))]),
        ("ask", [(None, NONE), (1, offer(1, "1.00")), (3, offer(1, "0.95"))]),
        ("quantity_max", [(None, NONE), (1, offer(1, 100)), (3, offer(1, 200))]),
    ]:
        assert run(f"SELECT {attribute} FROM offers WHERE offer = 1", f) == expected, attribute


def test_an_amendment_drops_terms_it_does_not_carry():
    f = Flow()
    f.post(1, "1.00", quantity_max=5000)
    f.amend(1, "1.00")  # the lot is unbounded above now: no quantity_max
    assert run(RANGE_MIN_QUERY, f) == [(None, NONE), (1, offer(1, "1.00")), (2, NONE)]


def test_an_amendment_of_an_offer_never_posted_opens_it():
    f = Flow()
    f.amend(7, "1.30")
    f.best(7, "1.40", 1)
    assert run("SELECT best_value FROM offers WHERE offer = 7", f) == [
        (None, NONE),
        (2, offer(7, "1.40")),
    ]


def test_a_second_posting_of_an_open_offer_starts_it_afresh():
    f = Flow()
    f.post(1, "1.00")
    f.best(1, "1.10", 2)
    f.post(1, "1.20")
    assert run("SELECT best_value FROM offers WHERE offer = 1", f) == [
        (None, NONE),
        (2, offer(1, "1.10")),
        (3, NONE),
    ]
    assert run("SELECT matching_bids FROM offers WHERE offer = 1", f)[-1] == (3, offer(1, 0))


def test_a_best_offer_for_an_offer_not_open_is_ignored():
    f = Flow()
    f.best(1, "1.10", 1)  # never posted
    f.post(1, "1.00")
    f.best(2, "2.00", 1)  # never posted
    f.end(1)
    f.best(1, "1.50", 4)  # withdrawn
    f.post(1, "1.00")  # posted again: afresh
    assert run("SELECT best_value FROM offers WHERE offer = 1", f) == [(None, NONE)]
    assert run("SELECT matching_bids FROM offers WHERE offer = 1", f) == [
        (None, NONE),
        (2, offer(1, 0)),
        (4, NONE),
        (6, offer(1, 0)),
    ]
    assert run(range_watch("MAX", "best_value"), f) == [(None, NONE)]


@pytest.mark.parametrize("how", ["offer_withdrawn", "offer_cancelled", "offer_closed"])
def test_every_ending_removes_the_offer(how):
    f = Flow()
    f.post(1, "1.00")
    f.post(2, "1.50")
    f.end(1, how)
    assert run(range_watch(), f) == [
        (None, NONE),
        (1, offer(1, "1.00")),
        (3, offer(2, "1.50")),
    ]


def test_events_that_change_no_offer_send_nothing():
    f = Flow()
    f.post(1, "1.00")
    f.add("trade", offer=1, trade=1, price="1.00", quantity=5)
    f.add("bid_placed", bid=3, version=1, limit="1.20", constraint="lot = 1")
    f.post(2, "0.80", subject="office.supplies.pens")  # another market
    f.best(2, "0.90", 1, subject="office.supplies.pens")
    assert run(range_watch(), f) == [(None, NONE), (1, offer(1, "1.00"))]


# -- the answer -----------------------------------------------------------------------------


def test_ties_go_to_the_lower_offer_id_for_min_and_max():
    f = Flow()
    f.post(5, "1.00")
    f.post(3, "1.00")  # 2: same ask, lower id: it becomes the answer
    f.post(4, "1.00")
    f.end(3)  # 4: back to 4, the lowest id left at 1.00
    f.post(6, "2.00")
    for func in ("MIN", "MAX"):
        expected = [
            (None, NONE),
            (1, offer(5, "1.00")),
            (2, offer(3, "1.00")),
            (4, offer(4, "1.00")),
        ]
        if func == "MAX":
            expected.append((5, offer(6, "2.00")))
        assert run(range_watch(func), f) == expected, func


def test_max_follows_the_highest_value():
    f = Flow()
    f.post(1, "1.00")
    f.best(1, "1.10", 1)
    f.post(2, "1.00")
    f.best(2, "1.30", 1)
    f.best(1, "1.40", 2)
    f.best(1, None, 0)  # no bid matches offer 1 any more: it has no value
    assert run(range_watch("MAX", "best_value"), f) == [
        (None, NONE),
        (2, offer(1, "1.10")),
        (4, offer(2, "1.30")),
        (5, offer(1, "1.40")),
        (6, offer(2, "1.30")),
    ]


def test_an_offer_without_the_key_fails_the_key_and_a_pattern_subject():
    f = Flow()
    f.post(1, "0.50")  # no quantity_max: unbounded lot
    f.post(2, "0.70", subject="office.tools.saws", quantity_max=3000)
    f.post(3, "0.60", subject="garden.tools.saws", quantity_max=3000)
    query = "SELECT MIN(ask) FROM offers WHERE subject MATCHES 'office.>', quantity_max = *"
    assert run(query, f) == [(None, NONE), (2, offer(2, "0.70"))]
    query = "SELECT MIN(ask) FROM offers WHERE subject MATCHES 'office.>'"
    assert run(query, f) == [(None, NONE), (1, offer(1, "0.50"))]


def test_the_key_bounds_are_exact():
    f = Flow()
    f.post(1, "1.00", quantity_max=2000)
    f.post(2, "0.90", quantity_max=10000)
    f.post(3, "0.80", quantity_max="10000.5")
    query = RANGE_MIN_QUERY.replace("BETWEEN 2000 AND 10000", "IN (2000, 10000]")
    assert run(query, f) == [(None, NONE), (2, offer(2, "0.90"))]


def test_an_empty_key_range_watches_nothing():
    assert run(range_watch(where="ask > 5, ask < 3"), range_min_flow()) == [(None, NONE)]


def test_a_value_equal_as_a_number_is_no_change():
    f = Flow()
    f.post(1, "1.0")
    f.amend(1, "1.00")
    f.amend(1, "1.01")
    assert run(range_watch(), f) == [(None, NONE), (1, offer(1, "1.0")), (3, offer(1, "1.01"))]


# -- registration ---------------------------------------------------------------------------


def test_the_first_notification_is_at_the_last_history_event_whatever_its_type():
    f = Flow()
    f.post(1, "1.00")
    f.add("trade", offer=1, trade=1, price="1.00", quantity=5)
    f.post(2, "0.90")
    assert run(range_watch(), f, now=f.time(3)) == [(2, offer(1, "1.00")), (3, offer(2, "0.90"))]
    assert run(range_watch(), f, now="2026-11-20T12:00:00Z") == [(3, offer(2, "0.90"))]


def test_an_empty_file_gives_one_line_with_no_seq():
    assert run(range_watch(), Flow()) == [(None, NONE)]


def test_a_watch_never_completes_nor_hits_the_state_limit():
    f = Flow()
    for i in range(1, 6):
        f.post(i, f"{10 - i}.00")
    sub = Subscription(parse_query(range_watch()), now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
                       state_limit=1)  # fmt: skip
    outputs = [o.to_json() for e in f.events for o in sub.push(e, live=True)]
    assert [o["data"]["offer"] for o in outputs] == [None, 1, 2, 3, 4, 5]
    assert not sub.finished and sub.history_done() == []


# -- NOTIFY WHEN CHANGED BY -----------------------------------------------------------------


def asks(*values: str, offers=None) -> Flow:
    """One offer (or one per value, by ``offers``) amended through ``values``."""
    f = Flow()
    seen = set()
    for i, value in enumerate(values):
        id_ = 1 if offers is None else offers[i]
        (f.amend if id_ in seen else f.post)(id_, value)
        seen.add(id_)
    return f


def test_an_absolute_threshold_is_strict():
    f = asks("1.00", "1.05", "1.10", "1.16", "1.05")
    assert run(range_watch(threshold="0.1"), f) == [
        (None, NONE),
        (1, offer(1, "1.00")),
        (4, offer(1, "1.16")),  # 1.10 moved exactly 0.10: not notified
        (5, offer(1, "1.05")),
    ]


def test_a_percent_threshold_is_strict_and_relative_to_the_last_notified_value():
    f = asks("2.00", "2.10", "1.90", "1.89", "2.08", "2.17")
    assert run(range_watch(threshold="5%"), f) == [
        (None, NONE),
        (1, offer(1, "2.00")),
        (4, offer(1, "1.89")),  # 2.10 and 1.90 moved exactly 5% of 2.00
        (5, offer(1, "2.08")),  # 0.19 > 5% of 1.89; then 2.17 moves 0.09 <= 5% of 2.08
    ]


def test_from_zero_a_percent_threshold_notifies_any_move_and_0_any_move_at_all():
    f = Flow()
    f.post(1, "1.00")
    f.best(1, "0", 1)
    f.best(1, "0.01", 2)
    f.best(1, "0.01", 3)
    f.best(1, "-0.01", 3)
    single = "SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY "
    expected = [(None, NONE), (2, offer(1, "0")), (3, offer(1, "0.01")), (5, offer(1, "-0.01"))]
    assert run(single + "50%", f) == expected
    assert run(single + "0", f) == expected


def test_a_change_of_offer_within_the_threshold_is_not_notified():
    f = asks("1.00", "0.99", "0.95", "0.94", offers=[1, 2, 3, 4])
    assert run(range_watch(threshold="0.05"), f) == [
        (None, NONE),
        (1, offer(1, "1.00")),
        (4, offer(4, "0.94")),  # offers 2 and 3 were within 0.05 of 1.00
    ]
    # Threshold 0 still needs the value to move; no threshold notifies every change of offer.
    g = asks("1.00", "1.00", offers=[2, 1])
    assert run(range_watch(threshold="0"), g) == [(None, NONE), (1, offer(2, "1.00"))]
    assert run(range_watch(), g) == [(None, NONE), (1, offer(2, "1.00")), (2, offer(1, "1.00"))]


def test_between_none_and_a_value_always_notifies():
    f = Flow()
    f.post(1, "1.00")
    f.end(1)
    f.post(2, "1.00")
    assert run(range_watch(threshold="1000"), f) == [
        (None, NONE),
        (1, offer(1, "1.00")),
        (2, NONE),
        (3, offer(2, "1.00")),
    ]
