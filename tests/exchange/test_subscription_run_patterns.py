"""Form 3 (SPEC 8.3 patterns) through ``manage.py subscription_run``: the worked examples
of the SPEC's table and the four examples of form 3, with exact output lines."""

from __future__ import annotations

import pytest

from tests.exchange.test_subscription_run import run, write_events
from tests.matching.subscriptions.pattern_cases import FOUR_EXAMPLES, MARKETS, T
from tests.matching.subscriptions.subscription_cases import TRADES, at

SPEC_TABLE = [
    (
        f"SELECT a.price, b.price FROM {T} AS a "
        f"NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} {T} AS b",
        [
            (2, {"a.price": "1.00", "b.price": "1.10"}),
            (4, {"a.price": "1.10", "b.price": "1.20"}),
            (4, {"a.price": "0.90", "b.price": "1.20"}),
            (5, {"a.price": "1.20", "b.price": "1.30"}),
        ],
    ),
    (
        f"SELECT a.price, b.price, n, DUR FROM {T} AS a "
        f"FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} {T} AS b "
        "WHERE DUR >= 30m",
        [(5, {"a.price": "0.90", "b.price": "1.30", "n": 2, "DUR": "1800"})],
    ),
]


def lines(expected):
    return [{"n": n, "seq": seq, "data": data} for n, (seq, data) in enumerate(expected, 1)]


@pytest.mark.parametrize(("query", "expected"), SPEC_TABLE)
def test_the_spec_tables_patterns(tmp_path, query, expected):
    status, out, err = run(write_events(tmp_path, TRADES), query)
    assert (status, err) == (0, "")
    assert out == lines(expected)  # a pattern never completes: no end line


@pytest.mark.parametrize(
    ("what", "query", "expected"), FOUR_EXAMPLES, ids=[w for w, *_ in FOUR_EXAMPLES]
)
def test_the_four_examples_of_form_3(tmp_path, what, query, expected):
    status, out, err = run(write_events(tmp_path, MARKETS), query)
    assert (status, err) == (0, "")
    assert out == lines(expected)


def test_a_pattern_follows_live_events_only(tmp_path):
    # Registered at 10:15: trades 1-3 are history and start no instance.
    query, _ = SPEC_TABLE[0]
    status, out, _ = run(write_events(tmp_path, TRADES), query, "--now", at("10:15"))
    assert status == 0
    assert out == lines([(5, {"a.price": "1.20", "b.price": "1.30"})])


def test_a_bad_pattern_is_reported_with_its_column(tmp_path):
    status, out, err = run(
        write_events(tmp_path, TRADES),
        "SELECT a.price FROM FILTER{price > a.price}(EVENTS) AS a",
    )
    assert (status, out) == (2, [])
    assert err.startswith("QUERY:1:36: a FILTER condition is static")
