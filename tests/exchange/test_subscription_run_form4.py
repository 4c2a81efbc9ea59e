"""``manage.py subscription_run`` with form 4 (SPEC 8.3): the two worked examples as exact
output lines, the registration line, and a refused watch. No database (no ``db`` fixture)."""

from __future__ import annotations

from tests.exchange.test_subscription_run import run, write_events
from tests.matching.subscriptions.form4_cases import (
    RANGE_MIN_QUERY,
    VALUE_QUERY,
    range_min_flow,
    value_flow,
)


def test_range_min_example_registered_with_offers_1_to_3_open(tmp_path):
    flow = range_min_flow()
    path = write_events(tmp_path, flow.events)
    status, lines, err = run(path, RANGE_MIN_QUERY, "--now", flow.time(4))
    assert (status, err) == (0, "")
    assert lines == [
        {"n": 1, "seq": 3, "data": {"offer": 1, "value": "1.00"}},
        {"n": 2, "seq": 4, "data": {"offer": 4, "value": "0.97"}},
        {"n": 3, "seq": 5, "data": {"offer": 1, "value": "1.00"}},
    ]


def test_range_min_example_registered_before_the_first_event(tmp_path):
    status, lines, err = run(write_events(tmp_path, range_min_flow().events), RANGE_MIN_QUERY)
    assert (status, err) == (0, "")
    assert lines == [
        {"n": 1, "seq": None, "data": {"offer": None}},
        {"n": 2, "seq": 1, "data": {"offer": 1, "value": "1.00"}},
        {"n": 3, "seq": 4, "data": {"offer": 4, "value": "0.97"}},
        {"n": 4, "seq": 5, "data": {"offer": 1, "value": "1.00"}},
    ]


def test_value_based_example(tmp_path):
    status, lines, err = run(write_events(tmp_path, value_flow().events), VALUE_QUERY)
    assert (status, err) == (0, "")
    assert lines == [
        {"n": 1, "seq": None, "data": {"offer": None}},
        {"n": 2, "seq": 3, "data": {"offer": 1, "value": "1.00"}},
        {"n": 3, "seq": 5, "data": {"offer": 1, "value": "1.06"}},
        {"n": 4, "seq": 6, "data": {"offer": 1, "value": "1.12"}},
        {"n": 5, "seq": 7, "data": {"offer": None}},
    ]


def test_an_empty_file_prints_the_registration_line_only(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    status, lines, err = run(str(path), RANGE_MIN_QUERY)
    assert (status, err, lines) == (0, "", [{"n": 1, "seq": None, "data": {"offer": None}}])


def test_a_refused_watch_exits_2_with_its_column(tmp_path):
    path = write_events(tmp_path, value_flow().events)
    query = "SELECT MIN(ask) FROM offers WHERE subject = 'a', ask != 1"
    status, lines, err = run(path, query)
    assert (status, lines) == (2, [])
    assert err.startswith("QUERY:1:54: a watch takes range predicates only")
