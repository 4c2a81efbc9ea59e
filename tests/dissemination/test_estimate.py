"""The optimizer's count of the watches a change reaches (``WatchSet.estimate``): exact when
the sample finds few (the few-affected workload), scaled from the sample when it finds many."""

from __future__ import annotations

import random
from decimal import Decimal

from matching.dissemination import Entry, FamilyName, Producer, WatchSet
from matching.dissemination.offers import Family
from matching.dissemination.watchset import RECOUNT, _reach
from matching.index.intervals import Span
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.watches import Answer

NAME = FamilyName("MIN", "ask", "office.supplies.pencils", "quantity_max")


def entry(offer: int, key: int, ask: str) -> Entry:
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


def test_a_change_reaching_a_handful_is_counted_exactly_not_in_sixteens():
    ws = watches(20)
    # Offer 7 (lot 7,000) drops to 0.90: the watches holding 7,000, i = 1396 .. 1400
    delta = book().put(7, entry(7, 7000, "0.90"))
    assert delta is not None
    assert sorted(ws.affected(delta)) == [1396, 1397, 1398, 1399, 1400]
    assert ws.estimate(delta) == 5.0


def test_a_change_reaching_many_is_scaled_from_the_sample():
    ws = watches(60_000)
    delta = book().put(50, entry(50, 50_000, "0.90"))
    assert delta is not None
    members = ws._families[NAME]
    sampled = _reach(members.sample, delta)
    assert sampled >= RECOUNT
    assert ws.estimate(delta) == sampled * len(members.index) / len(members.sample)
    # and the scaled figure is near the truth
    exact = len(ws.affected(delta))
    assert abs(ws.estimate(delta) - exact) < exact / 4


def test_a_watch_both_parts_reach_counts_once():
    ws = watches(20)
    # Offer 7 gets dearer in place: its loss and its gain both reach the same five watches
    delta = book().put(7, entry(7, 7000, "1.10"))
    assert delta is not None and delta.loss is not None and delta.gain is not None
    assert sorted(ws.affected(delta)) == [1396, 1397, 1398, 1399, 1400]
    assert ws.estimate(delta) == 5.0


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
