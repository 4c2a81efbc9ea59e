"""The interval index for range watches (``matching/index/intervals.py``): the overlapping
keys exactly as a brute force finds them, under insertions and removals, and how many
nodes a search visits."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching import Interval, Wildcard
from matching.index.intervals import IntervalIndex, Span, key_span
from matching.subscriptions import parse_query


def brute_overlap(a: Span, b: Span) -> bool:
    """Whether some point lies in both, from the intersection's ends (written apart from
    ``Span.overlaps``): the larger lower end against the smaller upper end."""
    lows = [(s.lo, s.lo_closed) for s in (a, b) if s.lo is not None]
    highs = [(s.hi, s.hi_closed) for s in (a, b) if s.hi is not None]
    for s in (a, b):  # each span must itself hold a point
        if (s.lo is not None and s.hi is not None) and (
            s.lo > s.hi or (s.lo == s.hi and not (s.lo_closed and s.hi_closed))
        ):
            return False
    if not lows or not highs:
        return True
    lo = max(v for v, _ in lows)
    lo_closed = all(c for v, c in lows if v == lo)
    hi = min(v for v, _ in highs)
    hi_closed = all(c for v, c in highs if v == hi)
    return lo < hi or (lo == hi and lo_closed and hi_closed)


def inside(a: Span, b: Span) -> bool:
    """Whether every point of ``a`` is in ``b`` (``a`` non-empty), end by end."""
    lower_ok = b.lo is None or (
        a.lo is not None and (a.lo > b.lo or (a.lo == b.lo and (b.lo_closed or not a.lo_closed)))
    )
    upper_ok = b.hi is None or (
        a.hi is not None and (a.hi < b.hi or (a.hi == b.hi and (b.hi_closed or not a.hi_closed)))
    )
    return lower_ok and upper_ok


def nonempty(s: Span) -> bool:
    return brute_overlap(s, Span())


ENDS = [None, Decimal("0"), Decimal("1"), Decimal("1.5"), Decimal("2"), Decimal("3"), 4, 5]


@st.composite
def spans(draw) -> Span:
    return Span(draw(st.sampled_from(ENDS)), draw(st.booleans()),
                draw(st.sampled_from(ENDS)), draw(st.booleans()))  # fmt: skip


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 30), spans()),
        st.tuples(st.just("remove"), st.integers(0, 30), st.none()),
        st.tuples(st.just("search"), st.none(), spans()),
        st.tuples(st.just("between"), spans(), spans()),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(operations, st.integers(0, 3))
def test_searches_find_exactly_the_overlapping_keys_while_keys_come_and_go(ops, seed):
    index = IntervalIndex(seed)
    held: dict[int, Span] = {}
    for op, key, span in ops:
        if op == "add":
            index.add(key, span)
            held[key] = span
        elif op == "remove":
            if key in held:
                index.remove(key)
                del held[key]
            else:
                with pytest.raises(KeyError):
                    index.remove(key)
        elif op == "search":
            found = index.overlapping(span)
            assert len(found) == len(set(found))
            assert set(found) == {k for k, s in held.items() if brute_overlap(s, span)}
            assert index.visited <= len(held)
        else:
            inner, outer = key, span
            found = index.between(inner, outer)
            assert len(found) == len(set(found))
            assert set(found) == {
                k
                for k, s in held.items()
                if nonempty(s) and nonempty(inner) and inside(inner, s) and inside(s, outer)
            }
            assert index.visited <= len(held)
        assert len(index) == len(held)
        assert set(index) == set(held)
        assert all(index.span(k) == s for k, s in held.items())


@given(spans(), spans(), spans())
def test_span_overlap_and_intersection_agree_with_the_brute_force(a, b, c):
    assert a.overlaps(b) == brute_overlap(a, b) == b.overlaps(a)
    both = a.intersection(b)
    assert both == b.intersection(a) or (both.empty and b.intersection(a).empty)
    # a span meets the intersection exactly when it meets both (for non-empty ones)
    assert both.overlaps(c) == (not both.empty and brute_overlap(c, both))
    assert both.empty != brute_overlap(a, b)


def test_the_key_span_of_a_watch():
    watch = "SELECT MIN(ask) FROM offers WHERE subject = 'a'"
    assert key_span(parse_query(watch)) is None
    q = parse_query(watch + ", quantity_max > 2000, quantity_max BETWEEN 1000 AND 5000")
    assert key_span(q) == Span(Decimal(2000), False, Decimal(5000), True)
    assert key_span(parse_query(watch + ", ask = *")) == Span()
    assert key_span(parse_query(watch + ", ask > 5, ask < 3")).empty


def test_spans_of_predicates_and_their_ends():
    assert Span.of(Interval(Decimal(2), True, Decimal(5), False)) == Span(2, True, 5, False)
    assert Span.of(Wildcard()) == Span() == Span.of(None)
    assert Span.point(3).overlaps(Span(3, True, 4, True))
    assert not Span.point(3).overlaps(Span(3, False, 4, True))
    assert not Span(1, True, 3, False).overlaps(Span(3, True, None))
    assert Span(1, False, 1, True).empty and not Span(1, True, 1, True).empty


def test_a_moved_key_and_an_empty_span():
    index = IntervalIndex()
    index.add("a", Span(1, True, 2, True))
    index.add("b", Span(5, True, 3, True))  # empty: held, never found
    assert index.overlapping(Span()) == ["a"]
    index.add("a", Span(10, True, 20, True))  # moved
    assert index.overlapping(Span(0, True, 5, True)) == []
    assert index.overlapping(Span(15, True, 15, True)) == ["a"]
    assert index.span("b") == Span(5, True, 3, True) and len(index) == 2
    index.remove("b")
    assert list(index) == ["a"]


def watches(n: int) -> IntervalIndex:
    """``n`` watches on disjoint key ranges [10i, 10i + 5], inserted in a scrambled order."""
    index = IntervalIndex(seed=7)
    for i in sorted(range(n), key=lambda i: (i * 7919) % n):
        index.add(i, Span(10 * i, True, 10 * i + 5, True))
    return index


def test_a_change_visits_a_few_nodes_not_every_watch():
    small, large = watches(1_000), watches(20_000)
    # The change's range covers three watches' ranges, in the middle of the key line.
    middle = Span(100_002, True, 100_022, True)
    assert large.overlapping(middle) == [10_000, 10_001, 10_002]
    visited_large = large.visited
    assert small.overlapping(Span(5_002, True, 5_022, True)) == [500, 501, 502]
    visited_small = small.visited
    # About the depth of a balanced tree (2 log2 n in expectation) plus the three found,
    # where a loop would look at all 1,000 or 20,000.
    assert visited_small <= 4 * math.log2(1_000) + 3
    assert visited_large <= 4 * math.log2(20_000) + 3
    # ProSem's filter for a new minimum at key 100,003 whose maximum affected range is
    # (99,999, 100,010): only the watch [100,000, 100,005] holds 100,003 and lies inside.
    inner, outer = Span.point(100_003), Span(99_999, False, 100_010, False)
    assert large.between(inner, outer) == [10_000]
    assert large.visited <= 4 * math.log2(20_000) + 3
    # A change covering everything visits every watch once, and no more.
    assert len(small.overlapping(Span())) == 1_000 and small.visited == 1_000


def test_equal_lower_bounds_are_all_found():
    # Keys with the same lower bound sit on both sides of one another in the tree.
    index = IntervalIndex(seed=1)
    for key in range(50):
        index.add(key, Span(1, True, 5 + key % 3, True))
    assert index.overlapping(Span.point(1)) == list(range(50))
    assert index.between(Span.point(2), Span(1, True, 6, True)) == [
        k for k in range(50) if k % 3 != 2
    ]
    assert index.between(Span.point(2), Span(1, False, 9, True)) == []
