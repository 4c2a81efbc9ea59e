"""Rectangle counts over watches' spans (``matching/dissemination/counts.py``): exactly the
number of spans ``IntervalIndex.between`` would find, by a brute force over every held span,
while spans come and go and blocks split and join."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching.dissemination.counts import SpanCounts, overlap, rectangle
from matching.index.intervals import Span
from tests.matching.subscriptions.test_form4_intervals import inside, nonempty, spans


def brute_between(held: dict[int, Span], inner: Span, outer: Span) -> set[int]:
    return {
        k
        for k, s in held.items()
        if nonempty(s) and nonempty(inner) and inside(inner, s) and inside(s, outer)
    }


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 40), spans()),
        st.tuples(st.just("discard"), st.integers(0, 40), st.none()),
        st.tuples(st.just("count"), spans(), spans()),
        st.tuples(st.just("both"), st.tuples(spans(), spans()), st.tuples(spans(), spans())),
    ),
    max_size=150,
)


@settings(max_examples=300, deadline=None)
@given(operations, st.integers(1, 4))
def test_counts_equal_the_brute_force_while_spans_come_and_go(ops, load):
    counts = SpanCounts(load)
    held: dict[int, Span] = {}
    for op, a, b in ops:
        if op == "add":
            counts.add(a, b)
            held[a] = b
        elif op == "discard":
            counts.discard(a)
            held.pop(a, None)
        elif op == "count":
            assert counts.count(rectangle(a, b)) == len(brute_between(held, a, b))
        else:
            # two filters' rectangles meet in a rectangle: the spans both reach
            first, second = rectangle(*a), rectangle(*b)
            both = brute_between(held, *a) & brute_between(held, *b)
            assert counts.count(overlap(first, second)) == len(both)
        assert len(counts) == sum(1 for s in held.values() if nonempty(s))


def test_blocks_split_past_twice_the_load_and_join_below_a_quarter_of_it():
    # Given 40 spans [i, 100] with a load of 8
    counts = SpanCounts(8)
    for i in range(40):
        counts.add(i, Span(Decimal(i), True, Decimal(100), True))
    sizes = [len(b.points) for b in counts._blocks]
    assert sum(sizes) == 40 and max(sizes) <= 16
    assert counts.count(rectangle(Span.point(50), Span())) == 40
    # When all but spans 0 and 39 leave
    for i in range(1, 39):
        counts.discard(i)
    # Then the small blocks have joined and the count is right
    assert [len(b.points) for b in counts._blocks] == [2]
    assert counts.count(rectangle(Span.point(50), Span())) == 2
    assert counts.count(rectangle(Span.point(50), Span(Decimal(0), False, None, False))) == 1


def test_an_empty_span_is_not_held_and_a_moved_key_counts_once():
    counts = SpanCounts()
    counts.add("a", Span(Decimal(5), True, Decimal(3), True))
    assert len(counts) == 0
    counts.add("b", Span(Decimal(1), True, Decimal(2), True))
    counts.add("b", Span(Decimal(1), True, Decimal(9), True))
    assert len(counts) == 1
    assert counts.count(rectangle(Span.point(Decimal(5)), Span())) == 1
    assert counts.count(rectangle(Span.point(Decimal(9)), Span(None, False, 9, False))) == 0


def test_a_load_below_one_is_refused():
    with pytest.raises(ValueError, match="load must be at least 1, not 0"):
        SpanCounts(0)
