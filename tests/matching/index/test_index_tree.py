"""The matching tree (SPEC 8.2) against a brute-force reading of the definition: generated
subscriptions inserted and removed in random order, every event checked after every step;
and the tree's shape (collapsed don't-care edges, nodes freed on removal)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching import Interval, Wildcard
from matching.index import IndexEntryError, MatchingIndex, choose_order
from matching.index.naive import brute
from matching.subjects import compile_pattern

ATTRS = ("a", "b", "c")
INTS = st.integers(0, 4)
STRS = st.sampled_from(["x", "y", "z"])
VALUES = {"a": INTS, "b": INTS.map(Decimal), "c": STRS}
# An event's number may be an int or a decimal whatever the bounds were written as (the
# tree bisects bounds with the event's own value, so both kinds must compare alike).
EVENT_VALUES = {**VALUES, "a": st.one_of(INTS, INTS.map(Decimal))}
TOKENS = st.sampled_from(["p", "q", "r"])


@st.composite
def predicates(draw: st.DrawFn, attr: str) -> Any:
    kind = draw(st.sampled_from(["any", "eq", "lower", "upper", "both"]))
    value = VALUES[attr]
    if kind == "any":
        return Wildcard()
    if kind == "eq":
        v = draw(value)
        return Interval(v, True, v, True)
    if kind == "lower":
        return Interval(draw(value), draw(st.booleans()), None, False)
    if kind == "upper":
        return Interval(None, False, draw(value), draw(st.booleans()))
    lo, hi = sorted([draw(value), draw(value)])
    if lo == hi:
        return Interval(lo, True, hi, True)
    return Interval(lo, draw(st.booleans()), hi, draw(st.booleans()))


@st.composite
def patterns(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 4)) == 0:
        return None
    tokens = draw(st.lists(st.one_of(TOKENS, st.just("*")), min_size=1, max_size=3))
    if draw(st.booleans()) and len(tokens) < 3:
        tokens.append(">")
    return compile_pattern(".".join(tokens))


@st.composite
def subscriptions(draw: st.DrawFn) -> tuple[Any, tuple]:
    attrs = draw(st.lists(st.sampled_from(ATTRS), unique=True, max_size=3))
    return draw(patterns()), tuple((a, draw(predicates(a))) for a in attrs)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {}
    subject = draw(
        st.one_of(
            st.lists(TOKENS, min_size=1, max_size=4).map(".".join),
            st.sampled_from(["p..q", "P.q", ""]),  # malformed: no pattern matches them
            st.none(),
        )
    )
    if subject is not None:
        event["subject"] = subject
    for attr in ATTRS:
        v = draw(st.one_of(st.none(), EVENT_VALUES[attr]))
        if v is not None:
            event[attr] = v
    return event


@settings(max_examples=150, deadline=None)
@given(
    order=st.permutations(ATTRS),
    subs=st.lists(subscriptions(), min_size=1, max_size=25),
    removals=st.lists(st.integers(0, 1000), max_size=30),
    probes=st.lists(events(), min_size=1, max_size=12),
    data=st.data(),
)
def test_match_equals_brute_force_after_every_insertion_and_removal(
    order: list[str], subs: list, removals: list[int], probes: list, data: st.DataObject
) -> None:
    index = MatchingIndex(order)
    held: dict[int, tuple[Any, tuple]] = {}
    pending = list(enumerate(subs))
    steps = data.draw(st.lists(st.booleans(), min_size=len(subs) + len(removals)))
    removal = iter(removals)
    for add in steps:
        if add and pending:
            sid, (pattern, tests) = pending.pop(0)
            index.add(sid, subject=pattern, tests=tests)
            held[sid] = (pattern, tests)
        elif held:
            sid = sorted(held)[next(removal, 0) % len(held)]
            index.remove(sid)
            del held[sid]
        else:
            continue
        assert len(index) == len(held)
        for event in probes:
            assert index.match(event) == brute(held, event), (event, held)
    fresh = MatchingIndex(order)
    for sid, (pattern, tests) in held.items():
        fresh.add(sid, subject=pattern, tests=tests)
    # Removal leaves the tree that was built without the removed subscriptions.
    assert index.node_count() == fresh.node_count()
    for sid in list(held):
        index.remove(sid)
    assert index.node_count() == 1  # the empty trie root: every other node was freed
    assert all(index.match(event) == set() for event in probes)


def eq(v: Any) -> Interval:
    return Interval(v, True, v, True)


def test_dont_care_chains_are_collapsed_and_split_when_a_test_appears_between() -> None:
    index = MatchingIndex(["a", "b", "c"])
    index.add(1, tests=[("c", eq("x"))])
    # The trie root, one node testing c (the levels of a and b skipped) and a leaf; an
    # event without a subject visits the last two.
    assert index.node_count() == 3
    assert index.match_counted({"a": 1, "b": Decimal(1), "c": "x"}) == ({1}, 2)
    index.add(2, tests=[("b", eq(Decimal(1))), ("c", eq("x"))])
    # A node for b is put in front of the c node; sub 1 reaches c over b's don't-care edge.
    assert index.node_count() == 6
    assert index.match({"b": Decimal(1), "c": "x"}) == {1, 2}
    assert index.match({"b": Decimal(2), "c": "x"}) == {1}
    index.remove(2)
    assert index.node_count() == 3
    assert index.match_counted({"a": 1, "b": Decimal(1), "c": "x"}) == ({1}, 2)


def test_absent_attribute_fails_every_test_and_star_means_present() -> None:
    index = MatchingIndex(["a"])
    index.add("star", tests=[("a", Wildcard())])
    index.add("low", tests=[("a", Interval(0, True, None, False))])
    index.add("none", tests=[])
    assert index.match({}) == {"none"}
    assert index.match({"a": -1}) == {"star", "none"}
    assert index.match({"a": 0}) == {"star", "low", "none"}


@pytest.mark.parametrize("then_b", [False, True])
def test_open_and_closed_bounds_at_the_event_value_itself(then_b: bool) -> None:
    # Every kind of bound placed exactly at the event's value, open and closed, on a range
    # level whose children are leaves only (read in one call) and, with then_b, one where
    # half of them test b next (so inner nodes sit among the leaves).
    bounds = {
        "ge2": Interval(2, True, None, False),
        "gt2": Interval(2, False, None, False),
        "le2": Interval(None, False, 2, True),
        "lt2": Interval(None, False, 2, False),
        "2to3": Interval(2, True, 3, True),
        "2to3 open at 2": Interval(2, False, 3, True),
        "1to2": Interval(1, True, 2, True),
        "1to2 open at 2": Interval(1, True, 2, False),
        "1to3": Interval(1, False, 3, False),
    }
    index = MatchingIndex(["a", "b"])
    for n, (name, interval) in enumerate(bounds.items()):
        tests: list[Any] = [("a", interval)]
        if then_b and n % 2:
            tests.append(("b", Wildcard()))
        index.add(name, tests=tests)
    expected = {"ge2", "le2", "2to3", "1to2", "1to3"}
    assert index.match({"a": 2, "b": 0}) == expected
    assert index.match({"a": Decimal("2.0"), "b": 0}) == expected
    assert index.match({"a": Decimal("2.5"), "b": 0}) == {
        "ge2",
        "gt2",
        "2to3",
        "2to3 open at 2",
        "1to3",
    }
    assert index.match({"a": 3, "b": 0}) == {"ge2", "gt2", "2to3", "2to3 open at 2"}
    assert index.match({"a": 1, "b": 0}) == {"le2", "lt2", "1to2", "1to2 open at 2"}


def test_subject_wildcards_follow_spec_8_2() -> None:
    index = MatchingIndex()
    for text in ("office.>", "office.*.pencils", "*", "office"):
        index.add(text, subject=compile_pattern(text))
    assert index.match({"subject": "office.supplies.pencils"}) == {"office.>", "office.*.pencils"}
    assert index.match({"subject": "office"}) == {"*", "office"}
    assert index.match({"subject": "office.pencils"}) == {"office.>"}
    assert index.match({"subject": "office..pencils"}) == set()
    assert index.match({}) == set()


def test_residual_check_keeps_the_answer_exact() -> None:
    index = MatchingIndex(["a"])
    index.add(1, tests=[("a", Interval(0, True, None, False))], residual=lambda e: e["a"] != 3)
    index.add(2, tests=[("a", Interval(0, True, None, False))])
    assert index.match({"a": 3}) == {2}
    assert index.match({"a": 4}) == {1, 2}
    index.remove(1)
    assert index.match({"a": 4}) == {2}


def test_bad_additions_are_refused_and_change_nothing() -> None:
    index = MatchingIndex(["a"])
    index.add(1, tests=[("a", eq(1))])
    before = index.node_count()
    with pytest.raises(IndexEntryError, match="subscription 1 is already in the index"):
        index.add(1, tests=[("a", eq(2))])
    with pytest.raises(IndexEntryError, match="a is tested twice"):
        index.add(2, tests=[("a", eq(1)), ("a", eq(2))])
    with pytest.raises(IndexEntryError, match="the test on a is a str"):
        index.add(3, tests=[("a", "1")])  # type: ignore[list-item]  # a str where a test belongs: the error under test
    with pytest.raises(KeyError):
        index.remove(4)
    assert len(index) == 1 and index.node_count() == before
    assert index.match({"a": 1}) == {1} and index.match({"a": 2}) == set()


def test_choose_order_puts_equalities_first_then_ranges_by_how_often_tested() -> None:
    subs = [
        [("price", Interval(1, True, None, False)), ("type", eq("trade"))],
        [("price", Interval(None, False, 2, True)), ("type", eq("offer")), ("bid", eq(1))],
        [("type", Wildcard()), ("quantity", Interval(1, True, 3, True))],
    ]
    assert choose_order(subs) == ("type", "bid", "price", "quantity")
    index = MatchingIndex(choose_order(subs))
    for i, tests in enumerate(subs):
        index.add(i, tests=tests)
    index.rebuild(["quantity", "price", "bid", "type"])
    assert index.order == ["quantity", "price", "bid", "type"]
    assert index.match({"type": "trade", "price": 1}) == {0}
    assert index.match({"type": "x", "quantity": 3}) == {2}
