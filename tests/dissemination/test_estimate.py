"""The optimizer's count of the watches a change reaches (``WatchSet.reach``): counted from
the delta's ranges without visiting a watch, and equal to what ``affected`` returns."""

from __future__ import annotations

import random
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from matching.dissemination import Entry, FamilyName, Producer, WatchSet
from matching.dissemination.offers import Family
from matching.index.intervals import IntervalIndex, Span
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.watches.watch import Answer
from tests.matching.subscriptions.test_form4_intervals import spans

NAME = FamilyName("MIN", "ask", "office.supplies.pencils", "quantity_max")


def entry(offer: int, key: int | Decimal, ask: str) -> Entry:
    return Entry(Decimal(key), (Decimal(ask), offer), Answer(offer, Decimal(ask), ask))


def book() -> Family:
    """100 offers at 1.00, offer i with a largest lot of 1,000 i."""
    family = Family(NAME)
    for offer in range(1, 101):
        family.put(offer, entry(offer, offer * 1000, "1.00"))
    return family


def watches(width: int) -> WatchSet:
    """20,000 watches, watch i on the largest lots from 5 i to 5 i + width."""
    ws = WatchSet()
    for i in range(20_000):
        ws.add_span(i, NAME, Span(Decimal(5 * i), True, Decimal(5 * i + width), True))
    return ws


def test_a_change_reaching_a_handful_is_counted_exactly():
    ws = watches(20)
    # Offer 7 (lot 7,000) drops to 0.90: the watches holding 7,000, i = 1396 .. 1400
    delta = book().put(7, entry(7, 7000, "0.90"))
    assert delta is not None
    assert sorted(ws.affected(delta)) == [1396, 1397, 1398, 1399, 1400]
    assert ws.reach(delta) == 5


def test_a_change_reaching_many_is_counted_exactly():
    # Offer 50 (lot 50,000) drops to 0.90 below every other: with ranges 60,000 wide, the
    # watches from i = 0 (0 .. 60,000) to i = 10,000 (50,000 .. 110,000) hold it
    ws = watches(60_000)
    delta = book().put(50, entry(50, 50_000, "0.90"))
    assert delta is not None
    assert len(ws.affected(delta)) == 10_001
    assert ws.reach(delta) == 10_001


def test_a_watch_both_parts_reach_counts_once():
    ws = watches(20)
    # Offer 7 gets dearer in place: its loss and its gain both reach the same five watches
    delta = book().put(7, entry(7, 7000, "1.10"))
    assert delta is not None and delta.loss is not None and delta.gain is not None
    assert sorted(ws.affected(delta)) == [1396, 1397, 1398, 1399, 1400]
    assert ws.reach(delta) == 5


def test_a_family_without_watches_reaches_none():
    delta = book().put(7, entry(7, 7000, "0.90"))
    assert delta is not None
    assert WatchSet().reach(delta) == 0


KEYS = [0, 1, 2, 3, 4, 5, Decimal("1.5")]
ASKS = ["1.00", "1.10", "0.90", "2.00"]

changes = st.lists(
    st.tuples(
        st.integers(1, 8),  # the offer
        st.one_of(st.none(), st.tuples(st.sampled_from(KEYS), st.sampled_from(ASKS))),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(spans(), max_size=40), changes)
def test_the_count_equals_the_watches_affected_for_every_change(ranges, moves):
    # Given watches on generated key ranges (open, closed, unbounded, empty)
    ws = WatchSet()
    for i, span in enumerate(ranges):
        ws.add_span(i, NAME, span)
    family = Family(NAME)
    # When offers are posted, moved, repriced and withdrawn one by one
    for offer, terms in moves:
        new = None if terms is None else entry(offer, *terms)
        delta = family.put(offer, new)
        # Then the count of every change is exactly the watches it reaches
        if delta is not None:
            assert ws.reach(delta) == len(ws.affected(delta))


def test_the_few_workload_of_the_recorded_benchmark_run_is_enumerated_throughout():
    # The few-affected workload as docs/benchmarks.md's run drew it (20,000 narrow watches,
    # 500 offers, 20 local changes and their inverses, its seed). That run's optimizer sent 4
    # of the 40 changes by reformulate: each reached one sampled watch with its loss and one
    # with its gain, which read as 31.8 watches against 4 to 8 really reached.
    from ops.benchmarks.dissemination import Book, ranges, watch, watch_template

    rng = random.Random(20261124)
    flow = Book(rng, 500)
    initial = list(flow.events)
    changes = flow.changes(20, 0.0)
    producer = Producer("auto")
    for raw in initial:
        producer.change(event_from_dict(raw))
    template = watch_template()
    for i, (lo, hi) in enumerate(ranges(rng, 20_000, 0.0)):
        producer.register(i, watch(template, lo, hi), i % 4)
    picks = []
    for raw in changes:
        producer.change(event_from_dict(raw))
        picks.append(producer.last_choice)
    assert picks == ["enumerate"] * 40


def test_planning_a_wide_change_searches_no_watch(monkeypatch):
    # Given 2,000 watches on lots 0 .. 100,000 over 4 consumers and the book of ``book()``
    producer = Producer("auto")
    producer.book.families[NAME] = family = book()
    for i in range(2000):
        producer.watches.add_span(i, NAME, Span(Decimal(0), True, Decimal(100_000), True))
        producer.home[i] = i % 4
        producer.holders[NAME][i % 4] += 1
    # When offer 50 becomes the cheapest, reaching all of them, and the change is planned
    delta = family.put(50, entry(50, 50_000, "0.90"))
    assert delta is not None

    def refuse(*args, **kwargs):
        raise AssertionError("the plan searched the watches")

    monkeypatch.setattr(IntervalIndex, "between", refuse)
    plan = producer.plan([delta])
    # Then every consumer is expected to update its 500, counted without a search
    assert plan.affected == {0: 500.0, 1: 500.0, 2: 500.0, 3: 500.0}
    assert plan.lookups == {0: 1, 1: 1, 2: 1, 3: 1}
