"""Form 1 subscriptions (SPEC 8.3) in the matching index: parsed with the subscription
language's public API, compared with its evaluator on single events, and the conjuncts the
tree cannot hold left to the residual check."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from matching import Interval, Wildcard
from matching.index import MatchingIndex, add_query, choose_order, narrow, split_conditions
from matching.subscriptions import Subscription, event_from_dict, parse_query

NOW = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)

CONJUNCTS = [
    "subject MATCHES 'fruit.>'",
    "subject MATCHES 'fruit.*.green'",
    "subject MATCHES '*'",
    "(NOT subject MATCHES 'fruit.apple.>')",
    "type = 'trade'",
    "type = 'offer_posted'",
    "type != 'trade'",
    "price > 1.5",
    "price <= 2",
    "price BETWEEN 1 AND 2",
    "price = *",
    "price IN [1, 3)",
    "quantity >= 2",
    "quantity = 2",
    "offer = 3",
    "offer < 3",
    "(price < 1 OR quantity = 2)",
    "(type = 'trade' AND price >= 2)",
    "(NOT offer = 2)",
]

SUBJECTS = ["fruit", "fruit.apple", "fruit.apple.green", "fruit.pear.green", "veg.leek"]


@st.composite
def raw_events(draw: st.DrawFn) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "seq": draw(st.integers(1, 10**6)),
        "time": "2026-11-20T11:00:00Z",
        "type": draw(st.sampled_from(["trade", "offer_posted"])),
        "subject": draw(st.sampled_from(SUBJECTS)),
    }
    for attr, values in (
        ("price", st.sampled_from(["0.5", "1", "1.5", "1.75", "2", "3"])),
        ("quantity", st.sampled_from(["1", "2", "3"])),
        ("offer", st.integers(1, 4)),
    ):
        if draw(st.booleans()):
            raw[attr] = draw(values)
    return raw


def evaluator_matches(query: Any, raw: dict[str, Any]) -> bool:
    """Whether the form 1 evaluator delivers this one live event."""
    return bool(Subscription(query, now=NOW).push(raw, live=True))


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(CONJUNCTS), unique=True, max_size=4), min_size=1, max_size=12
    ),
    raws=st.lists(raw_events(), min_size=1, max_size=10),
)
def test_index_of_parsed_queries_agrees_with_the_form1_evaluator(
    texts: list[list[str]], raws: list[dict[str, Any]]
) -> None:
    queries = {
        i: parse_query("SELECT *" + (" WHERE " + ", ".join(c) if c else ""))
        for i, c in enumerate(texts)
    }
    order = choose_order(split_conditions(q.conditions).tests for q in queries.values())
    index = MatchingIndex(order)
    for i, query in queries.items():
        add_query(index, i, query)
    for raw in raws:
        expected = {i for i, q in queries.items() if evaluator_matches(q, raw)}
        assert index.match(event_from_dict(raw).values) == expected, raw


def test_or_and_not_go_to_the_residual_and_the_answer_stays_exact() -> None:
    query = parse_query(
        "SELECT * WHERE subject MATCHES 'fruit.>', (NOT subject MATCHES 'fruit.apple.>'), "
        "price > 1, price < 2, (type = 'trade' OR offer = 3)"
    )
    split = split_conditions(query.conditions)
    assert split.subject is not None and split.subject.text == "fruit.>"
    # The two tests on price are one range in the tree.
    assert split.tests == (("price", Interval(1, False, 2, False)),)
    # The negated pattern and the OR wait for the residual check.
    assert len(split.rest) == 2
    index = MatchingIndex(["price"])
    add_query(index, "q", query)
    base = {"seq": 1, "time": "2026-11-20T11:00:00Z", "type": "trade"}
    cases = [
        ({"subject": "fruit.pear", "price": "1.5"}, {"q"}),
        ({"subject": "fruit.apple.red", "price": "1.5"}, set()),  # the NOT
        ({"subject": "fruit.pear", "price": "2.5"}, set()),  # price < 2: the tree's range
        ({"subject": "fruit.pear", "price": "1.5", "type": "x"}, set()),  # the OR
        ({"subject": "fruit.pear", "price": "1.5", "type": "x", "offer": 3}, {"q"}),
    ]
    for extra, expected in cases:
        raw = {**base, **extra}
        values = event_from_dict(raw).values
        # The tree returns the candidate on price and subject alone; the residual decides.
        in_range = extra["price"] == "1.5"
        assert index.candidates(values)[0] == ({"q"} if in_range else set())
        if in_range:
            assert index.residual("q")(values) == bool(expected)  # type: ignore[misc]  # this entry has a residual (the query's NOT and OR)
        assert index.match(values) == expected, extra
        assert evaluator_matches(query, raw) == bool(expected)


def test_two_ranges_on_an_attribute_are_one_in_the_tree() -> None:
    query = parse_query(
        "SELECT * WHERE type = 'best_offer', offer >= 10, offer <= 20, value > 1.5, value <= 2"
    )
    split = split_conditions(query.conditions)
    assert split.tests == (
        ("type", Interval("best_offer", True, "best_offer", True)),
        ("offer", Interval(10, True, 20, True)),
        ("value", Interval(Decimal("1.5"), False, 2, True)),
    )
    assert split.rest == ()
    assert split.residual() is None
    index = MatchingIndex(choose_order([split.tests]))
    add_query(index, "q", query)
    base = {"seq": 1, "time": "2026-11-20T11:00:00Z", "type": "best_offer", "subject": "fruit"}
    for offer, value, expected in [
        (9, "1.6", set()),
        (10, "1.6", {"q"}),
        (20, "2", {"q"}),
        (21, "1.6", set()),
        (15, "1.5", set()),
        (15, "2.01", set()),
    ]:
        raw = {**base, "offer": offer, "value": value}
        assert index.match(event_from_dict(raw).values) == expected, raw
        assert evaluator_matches(query, raw) == bool(expected), raw


def test_a_second_range_that_cannot_be_met_with_the_first_stays_in_the_residual() -> None:
    # Empty together: the tree holds the first, the residual refuses every candidate.
    split = split_conditions(parse_query("SELECT * WHERE offer = 3, offer < 3").conditions)
    assert split.tests == (("offer", Interval(3, True, 3, True)),)
    assert len(split.rest) == 1
    # Bounds of two kinds (a string and a number) are not compared with each other.
    tests: dict[str, Any] = {"offer": Interval("a", True, None, False)}
    assert not narrow(tests, "offer", Interval(3, True, None, False))
    assert tests == {"offer": Interval("a", True, None, False)}
    assert narrow(tests, "price", Wildcard())
    assert narrow(tests, "price", Interval(1, True, None, False))
    assert tests["price"] == Interval(1, True, None, False)
