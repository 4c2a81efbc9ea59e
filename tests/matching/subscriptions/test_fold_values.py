"""A FOLD's aggregates show values as form 1's do (SPEC 8.3's fine point, issue 35 item 8):
COUNT and SUM of ints (and of quantities sent as ints) are ints, SUM of decimals an exact
decimal string, MIN/MAX the chosen event's value as it came, AVG a decimal string rounded
half-even to 8 places; never a decimal in exponent form."""

from __future__ import annotations

import datetime as dt
import itertools

from matching.subscriptions import parse_query, run_offline

BEFORE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def trade(seq: int, minute: int, price: str, quantity: int | str) -> dict:
    return {
        "seq": seq,
        "time": f"2026-11-20T10:{minute:02d}:00Z",
        "type": "trade",
        "subject": "office.supplies.pencils",
        "offer": seq,
        "trade": seq,
        "price": price,
        "quantity": quantity,
    }


# Rising prices; the quantities are ints but for the last trade's, a decimal string.
EVENTS = [
    trade(1, 0, "1.00", 100),
    trade(2, 5, "1.10", 200),
    trade(3, 10, "1.20", 300),
    trade(4, 20, "1.30", "2.5"),
]
QUERY = (
    "SELECT a.price, n, s, lo, hi, av, st FROM FILTER{type = 'trade'}(EVENTS) AS a "
    "FOLD{b.subject = a.subject, b.price >= b.last.price, COUNT AS n, SUM(b.quantity) AS s, "
    "MIN(b.price) AS lo, MAX(b.quantity) AS hi, AVG(b.quantity) AS av, SUM(b.trade) AS st} "
    "FILTER{type = 'trade'}(EVENTS) AS b"
)


def outputs(query: str, events: list[dict]) -> list[dict]:
    return [o["data"] for o in run_offline(parse_query(query), events, now=BEFORE)]


def test_a_folds_aggregates_are_shown_as_form_1_shows_them():
    assert outputs(QUERY, EVENTS) == [
        # only int quantities summed: ints; MIN of prices: the decimal as it came
        {"a.price": "1.00", "n": 1, "s": 200, "lo": "1.10", "hi": 200}
        | {"av": "200.00000000", "st": 2},
        {"a.price": "1.00", "n": 2, "s": 500, "lo": "1.10", "hi": 300}
        | {"av": "250.00000000", "st": 5},
        {"a.price": "1.10", "n": 1, "s": 300, "lo": "1.20", "hi": 300}
        | {"av": "300.00000000", "st": 3},
        # a decimal quantity joins: the sum is a decimal string; MAX is still the int 300
        {"a.price": "1.00", "n": 3, "s": "502.5", "lo": "1.10", "hi": 300}
        | {"av": "167.50000000", "st": 9},
        {"a.price": "1.10", "n": 2, "s": "302.5", "lo": "1.20", "hi": 300}
        | {"av": "151.25000000", "st": 7},
        # MAX chosen among a decimal alone is that decimal, as it came
        {"a.price": "1.20", "n": 1, "s": "2.5", "lo": "1.30", "hi": "2.5"}
        | {"av": "2.50000000", "st": 4},
    ]


def test_form_1_shows_the_same_sum_of_int_quantities_as_an_int():
    form1 = outputs(
        "SELECT SUM(quantity, 2) AS s, MAX(quantity, 2) AS hi WHERE type = 'trade'", EVENTS[:2]
    )
    assert form1 == [{"s": 300, "hi": 200}]


def test_a_tiny_decimal_sum_is_written_without_an_exponent():
    events = [trade(1, 0, "1.00", "0.0000001"), trade(2, 5, "1.10", "0.0000001")]
    query = (
        "SELECT s FROM FILTER{type = 'trade'}(EVENTS) AS a FOLD{b.subject = a.subject, "
        "b.price >= b.last.price, SUM(b.quantity) AS s} FILTER{type = 'trade'}(EVENTS) AS b"
    )
    assert list(itertools.islice(outputs(query, events), 1)) == [{"s": "0.0000001"}]
