"""The optimizer prices the three strategies from its statistics and picks the cheapest
(SPEC 8.3, issue 21 item 3): exact estimates on constructed plans, then a producer whose
changes reach one watch or a thousand."""

from __future__ import annotations

import pytest

from matching.dissemination import Costs, Estimate, Optimizer, Producer
from matching.dissemination.optimizer import Plan
from matching.subscriptions.events import event_from_dict
from tests.matching.subscriptions.form4_cases import Flow

UNITS = Costs(message=100, byte=0, lookup=10, watch=1, encode=1, entry=5)


def plan(affected: float, *, delta_bytes: int = 50) -> Plan:
    """Four consumers, one delta each, ``affected`` watches spread evenly, every relax
    replica one change behind."""
    share = affected / 4
    return Plan(
        affected={c: share for c in range(4)},
        lookups={c: 1 for c in range(4)},
        delta_bytes={c: delta_bytes for c in range(4)},
        relax_entries={c: 1 for c in range(4)},
        entry_bytes=20,
        answer_bytes=10,
    )


def test_one_affected_watch_is_enumerated():
    optimizer = Optimizer(Costs(**vars(UNITS)))
    few = plan(0)
    few.affected[0] = 1  # one watch, on consumer 0
    assert optimizer.estimate(few) == {
        # one search at the producer, one watch encoded and updated, one message
        "enumerate": Estimate(messages=1, bytes=24 + 10, seconds=10 + 2 + 100),
        # four messages, four searches, the watch
        "relax": Estimate(messages=4, bytes=4 * 24 + 4 * 20, seconds=400 + 20 + 40 + 1),
        "reformulate": Estimate(messages=4, bytes=4 * 24 + 4 * 50, seconds=400 + 40 + 1),
    }
    assert optimizer.choose(7, few) == "enumerate"
    [entry] = optimizer.choices()
    assert entry["seq"] == 7 and entry["choice"] == "enumerate"
    assert entry["estimates"]["enumerate"] == {"messages": 1, "bytes": 34, "seconds": 112}


def test_a_thousand_affected_watches_are_reformulated():
    optimizer = Optimizer(Costs(**vars(UNITS)))
    estimates = optimizer.estimate(plan(1000))
    assert estimates["enumerate"] == Estimate(4, 4 * 24 + 10_000, 10 + 2000 + 400)
    assert estimates["reformulate"] == Estimate(4, 4 * 24 + 200, 400 + 40 + 1000)
    assert estimates["relax"] == Estimate(4, 4 * 24 + 80, 400 + 20 + 40 + 1000)
    assert optimizer.choose(8, plan(1000)) == "reformulate"


def test_long_staircases_on_a_dear_wire_are_relaxed():
    optimizer = Optimizer(Costs(**{**vars(UNITS), "byte": 1}))
    costly = plan(1000, delta_bytes=1000)
    estimates = optimizer.estimate(costly)
    assert estimates["relax"].seconds == 400 + (96 + 80) + 20 + 40 + 1000
    assert estimates["reformulate"].seconds == 400 + (96 + 4000) + 40 + 1000
    assert estimates["enumerate"].seconds == 10 + 2000 + 400 + (96 + 10_000)
    assert optimizer.choose(9, costly) == "relax"


def test_the_log_is_bounded_newest_first_and_told_to_the_sink():
    told = []
    optimizer = Optimizer(Costs(**vars(UNITS)), log_size=2, sink=told.append)
    for seq in (1, 2, 3):
        optimizer.choose(seq, plan(1000))
    assert [e["seq"] for e in optimizer.choices()] == [3, 2]
    assert [e["seq"] for e in optimizer.choices(limit=1)] == [3]
    assert [e["seq"] for e in told] == [1, 2, 3]


def test_measurements_move_a_cost_by_a_moving_average():
    optimizer = Optimizer(Costs(**vars(UNITS)), smoothing=0.5)
    optimizer.observe("watch", seconds=30, units=10)  # 3 a watch
    assert optimizer.costs.watch == 2  # halfway from 1
    optimizer.observe("watch", seconds=0, units=0)  # nothing measured: no change
    assert optimizer.costs.watch == 2
    with pytest.raises(ValueError, match="unknown cost 'watches'"):
        optimizer.observe("watches", seconds=1, units=1)
    assert vars(optimizer.costs) == {**vars(UNITS), "watch": 2}


def test_the_producer_enumerates_a_narrow_change_and_reformulates_a_wide_one():
    # Given 1,000 watches over 4 consumers on the cheapest pencils offer, watch i on the
    # largest lots from i to 10,000 + i, and an offer at 0.50 with 5,000 that all of them see
    producer = Producer("auto")
    f = Flow()
    f.post(1, "0.50", quantity_max=5000)
    producer.change(event_from_dict(f.events[-1]))
    for i in range(1000):
        text = (
            "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils' "
            f"AND quantity_max BETWEEN {i} AND {10_000 + i}"
        )
        producer.register(i, text, i % 4)
    # When an offer at 0.40 with a largest lot of 0 is posted, only watch 0 sees it
    f.post(2, "0.40", quantity_max=0)
    sent = producer.change(event_from_dict(f.events[-1]))
    # Then it is enumerated: one message, to consumer 0, for watch 0
    assert producer.last_choice == "enumerate"
    assert sent == [(0, {"seq": 2, "answers": [[0, [2, "0.40", "0.40"]]]})]
    # When an offer at 0.30 with 5,000 is posted, every watch moves to it
    f.post(3, "0.30", quantity_max=5000)
    sent = producer.change(event_from_dict(f.events[-1]))
    # Then it is reformulated: one message to each consumer, the same delta
    assert producer.last_choice == "reformulate"
    family = "MIN|ask|office.supplies.pencils|quantity_max"
    delta = [family, 3, None, [["5000", 3, "0.30", "0.30"], None, None]]
    assert sent == [(c, {"seq": 3, "deltas": [delta]}) for c in range(4)]
    assert [e["choice"] for e in producer.optimizer.choices()] == ["reformulate", "enumerate"]


def test_the_many_workload_is_reformulated_and_relax_differs_only_by_its_replicas():
    # Given the many-affected benchmark's statistics: 100,000 watches reached over 4
    # consumers, one delta each, the relax replicas 41 changes behind (the reformulate run's
    # 40 and this one)
    optimizer = Optimizer(Costs(**vars(UNITS)))
    wide = Plan(
        affected={c: 25_000 for c in range(4)},
        lookups={c: 1 for c in range(4)},
        delta_bytes={c: 140 for c in range(4)},
        relax_entries={c: 41 for c in range(4)},
        entry_bytes=20,
        answer_bytes=10,
    )
    estimates = optimizer.estimate(wide)
    # Then relax and reformulate price the same messages, searches and watch updates, and
    # relax adds the replicas' catch-up (UNITS price no bytes)
    assert estimates["reformulate"].seconds == 400 + 40 + 100_000
    assert estimates["relax"].seconds == 400 + 40 + 100_000 + 4 * 41 * 5
    assert estimates["enumerate"].seconds == 10 + 100_000 * 2 + 400
    assert optimizer.choose(1, wide) == "reformulate"
