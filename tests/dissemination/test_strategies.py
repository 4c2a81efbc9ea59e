"""The three strategies give the one evaluator's notifications (SPEC 8.3, issue 21 item 2).

Random order flows from form 4's property test run through a producer and in-process
consumers under each fixed strategy and the optimizer; every watch's notifications must
equal the evaluator's, which its own property test holds to a brute-force recomputation
over the open offers, and the last notified answer of every watch without a threshold
must equal that brute force here too.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching.dissemination import Optimizer, Producer
from matching.dissemination.offers import FamilyName
from matching.dissemination.optimizer import Plan
from matching.dissemination.strategies import Consumer
from matching.subscriptions.events import event_from_dict
from tests.dissemination.harness import disseminate, evaluate
from tests.matching.subscriptions.form4_cases import RANGE_MIN_QUERY, Flow, range_min_flow
from tests.matching.subscriptions.test_form4_properties import (
    flows,
    number,
    open_offers_after,
    recompute,
    watches,
)

FIXED = ["enumerate", "relax", "reformulate"]
range_watches = watches().filter(lambda w: "offer" not in w)


class Rotating(Optimizer):
    """Picks the strategies in turn, so that relax replicas fall behind and catch up."""

    def choose(self, seq: int | None, plan: Plan) -> str:
        choice = FIXED[len(self.log) % 3]
        self.log.append({"seq": seq, "choice": choice})
        return choice


@pytest.mark.parametrize("strategy", [*FIXED, "auto"])
def test_the_worked_range_min_example_through_each_strategy(strategy):
    # Given SPEC 8.3's range-min example: offers 1 (1.00, 5,000), 2 (0.95, 20,000), 3 (0.90,
    # 1,000); offer 4 posted at 0.97 with 8,000 (seq 4) and withdrawn (seq 5)
    events = range_min_flow().events
    # When the watch is registered after the first three and held by consumer 0 of 2
    got = disseminate(events, [RANGE_MIN_QUERY], registered=3, consumers=2,
                      producer=Producer(strategy))  # fmt: skip
    # Then it is told offer 1, then offer 4, then offer 1 again
    assert got == {
        0: [
            (None, {"offer": 1, "value": "1.00"}),
            (4, {"offer": 4, "value": "0.97"}),
            (5, {"offer": 1, "value": "1.00"}),
        ]
    }


@settings(max_examples=150, deadline=None)
@given(flows(), st.lists(range_watches, min_size=1, max_size=6), st.integers(1, 4), st.data())
def test_every_strategy_notifies_as_the_evaluator_does(flow, ws, consumers, draw):
    events = flow.events
    registered = draw.draw(st.integers(0, len(events)))
    texts = [w["text"] for w in ws]
    expected = evaluate(events, texts, registered=registered)
    for strategy in [*FIXED, "auto", "rotating"]:
        producer = Producer("auto", Rotating()) if strategy == "rotating" else Producer(strategy)
        got = disseminate(events, texts, registered=registered, consumers=consumers,
                          producer=producer)  # fmt: skip
        assert got == expected, strategy
    final = open_offers_after(events)
    for i, w in enumerate(ws):
        if w["threshold"] is None:
            # The last answer sent is the recomputation over the final book: the same offer
            # and the same number ("1.0" and "1.00" are one value, and an amendment from one
            # to the other is no change, so the text sent first stays).
            last = expected[i][-1][1]
            answer = recompute(w, final)
            if answer is None:
                assert last == {"offer": None}, w["text"]
            else:
                assert last["offer"] == answer[0], w["text"]
                assert number(last["value"]) == number(answer[1]), w["text"]


def test_a_strategy_must_be_known():
    with pytest.raises(
        ValueError,
        match="strategy must be one of enumerate, relax, reformulate or auto, not 'broadcast'",
    ):
        Producer("broadcast")


def test_a_single_offer_watch_is_refused_and_nothing_is_registered():
    producer = Producer("enumerate")
    with pytest.raises(ValueError, match="only MIN/MAX watches over a key range"):
        producer.register(1, "SELECT best_value FROM offers WHERE offer = 1", 0)
    assert len(producer.watches) == 0 and producer.home == {}


def pencils_book() -> tuple[Flow, Producer, Consumer]:
    """Offers by (ask, largest lot): 1 (0.90, 1,000), 2 (1.00, 3,000), 3 (0.95, 6,000), 4
    (1.10, 9,000), and a watch of the cheapest with a largest lot of 2,000 to 5,000."""
    f = Flow()
    for offer, ask, lot in [
        (1, "0.90", 1000),
        (2, "1.00", 3000),
        (3, "0.95", 6000),
        (4, "1.10", 9000),
    ]:
        f.post(offer, ask, quantity_max=lot)
    producer, consumer = Producer("reformulate"), Consumer()
    for raw in f.events:
        assert producer.change(event_from_dict(raw)) == []  # no watch yet: nothing to send
    consumer.handle(producer.register("w", RANGE_MIN_QUERY.replace("10000", "5000"), 0))
    return f, producer, consumer


def test_a_decrease_of_the_minimum_is_prosems_message():
    f, producer, consumer = pencils_book()
    # When offer 5 is posted at 0.92 with a largest lot of 4,000
    seq = f.post(5, "0.92", quantity_max=4000)
    sent = producer.change(event_from_dict(f.events[-1]))
    # Then the one consumer gets NEW_MIN 0.92 (offer 5) at 4,000, OUTER_L 1,000 (offer 1 is
    # cheaper) and no OUTER_R (nothing to the right is cheaper), and the watch moves to it
    family = "MIN|ask|office.supplies.pencils|quantity_max"
    assert sent == [
        (
            0,
            {
                "seq": seq,
                "deltas": [[family, 5, None, [["4000", 5, "0.92", "0.92"], "1000", None]]],
            },
        )
    ]
    assert [(n.watch, n.seq, n.data) for n in consumer.handle(sent[0][1])] == [
        ("w", seq, {"offer": 5, "value": "0.92"})
    ]


def test_a_removal_carries_the_staircases_of_what_remains():
    f, producer, consumer = pencils_book()
    f.post(5, "0.92", quantity_max=4000)
    consumer.handle(producer.change(event_from_dict(f.events[-1]))[0][1])
    # When offer 5 is withdrawn
    seq = f.end(5)
    sent = producer.change(event_from_dict(f.events[-1]))
    # Then the loss at 4,000 reaches from 1,000 (offer 1, cheaper than 0.92) to no end; what
    # remains steps down to offer 2 (1.00) on the left and to offer 3 (0.95) on the right
    family = "MIN|ask|office.supplies.pencils|quantity_max"
    loss = ["4000", "1000", None, [["3000", 2, "1.00", "1.00"]],
            [["6000", 3, "0.95", "0.95"]]]  # fmt: skip
    assert sent == [(0, {"seq": seq, "deltas": [[family, 5, loss, None]]})]
    # and the watch (2,000 to 5,000) takes the left step: offer 3 lies outside its range
    assert [(n.watch, n.seq, n.data) for n in consumer.handle(sent[0][1])] == [
        ("w", seq, {"offer": 2, "value": "1.00"})
    ]


def test_a_relax_replica_that_missed_changes_is_sent_them_first():
    f, _, _ = pencils_book()
    producer = Producer("auto", Rotating())  # enumerate, relax, reformulate, enumerate, ...
    consumer = Consumer()
    for raw in f.events:
        producer.change(event_from_dict(raw))
    consumer.handle(producer.register("w", RANGE_MIN_QUERY, 0))
    f.post(5, "0.92", quantity_max=4000)  # enumerate
    consumer.handle(producer.change(event_from_dict(f.events[-1]))[0][1])
    seq = f.end(1)  # relax: the replica starts from the family's first change
    [(_, message)] = producer.change(event_from_dict(f.events[-1]))
    family = "MIN|ask|office.supplies.pencils|quantity_max"
    assert message == {"seq": seq, "relax": [[family, 0, [
        [1, ["1000", 1, "0.90", "0.90"]], [2, ["3000", 2, "1.00", "1.00"]],
        [3, ["6000", 3, "0.95", "0.95"]], [4, ["9000", 4, "1.10", "1.10"]],
        [5, ["4000", 5, "0.92", "0.92"]], [1, None]]]]}  # fmt: skip
    assert consumer.handle(message) == []  # offer 1 (1,000) was outside the watch
    assert consumer.work["entries"] == 6
    seq = f.end(5)  # reformulate
    producer.change(event_from_dict(f.events[-1]))
    seq = f.amend(3, "0.80", quantity_max=6000)  # enumerate
    producer.change(event_from_dict(f.events[-1]))
    seq = f.amend(2, "0.70", quantity_max=3000)  # relax: only the two missed changes and this
    [(_, message)] = producer.change(event_from_dict(f.events[-1]))
    assert message == {"seq": seq, "relax": [[family, 6, [
        [5, None], [3, ["6000", 3, "0.80", "0.80"]], [2, ["3000", 2, "0.70", "0.70"]]]]]}  # fmt: skip


def test_a_mismatched_replica_is_refused_and_left_as_it_was():
    consumer = Consumer()
    consumer.handle(Producer("relax").register("w", RANGE_MIN_QUERY, 0))
    family = "MIN|ask|office.supplies.pencils|quantity_max"
    with pytest.raises(ValueError, match="replica of .* is at change 0, message starts at 3"):
        consumer.handle({"seq": 9, "relax": [[family, 3, [[1, None]]]]})
    assert consumer.replicas[FamilyName.parse(family)].log == []


def test_a_watch_registered_again_is_refused_and_nothing_changes():
    # Given a watch held by consumer 0
    producer = Producer("relax")
    producer.register("w", RANGE_MIN_QUERY, 0)
    family = FamilyName.parse("MIN|ask|office.supplies.pencils|quantity_max")
    span = producer.watches.spans["w"]
    # When it is registered again, with another range for another consumer
    with pytest.raises(ValueError, match="watch 'w' is registered already"):
        producer.register("w", RANGE_MIN_QUERY.replace("10000", "5000"), 1)
    # Then it is as it was: a second count in its family's holders would keep the family
    # after its last watch left
    assert producer.home == {"w": 0}
    assert producer.holders == {family: {0: 1}}
    assert producer.watches.spans == {"w": span}
    assert list(producer.book.families) == [family]


def test_a_family_whose_last_watch_left_is_built_again_from_nothing():
    # Given the pencils book under relax, a watch of it and a change its replica got
    f, _, _ = pencils_book()
    producer, consumer = Producer("relax"), Consumer()
    for raw in f.events:
        producer.change(event_from_dict(raw))
    consumer.handle(producer.register("w", RANGE_MIN_QUERY, 0))
    f.post(5, "0.92", quantity_max=4000)
    consumer.handle(producer.change(event_from_dict(f.events[-1]))[0][1])
    family = FamilyName.parse("MIN|ask|office.supplies.pencils|quantity_max")
    assert producer.cursor == {(0, family): 5} and len(consumer.replicas[family].log) == 5
    # When its one watch leaves
    assert producer.unregister("w") == 0
    consumer.handle({"unregister": ["w"]})
    # Then the family is gone from the producer's book with its ways in, its holders and the
    # consumer's place in it, and the consumer's replica with it
    book = producer.book
    assert (book.families, book._literal, book._patterns, book._member) == ({}, {}, [], {})
    assert (producer.holders, producer.cursor, consumer.replicas) == ({}, {}, {})
    # and a change of its offers is sent to no one
    f.end(1)
    assert producer.change(event_from_dict(f.events[-1])) == []
    # When a new watch of the family comes, it is told the cheapest of the offers open now
    registered = consumer.handle(producer.register("v", RANGE_MIN_QUERY, 0))
    assert [(n.watch, n.data) for n in registered] == [("v", {"offer": 5, "value": "0.92"})]
    # and the next relax message starts from nothing: the offers open when the family was
    # built again, as changes from none, then the change
    seq = f.amend(2, "0.91", quantity_max=3000)
    [(_, message)] = producer.change(event_from_dict(f.events[-1]))
    assert message == {"seq": seq, "relax": [[str(family), 0, [
        [2, ["3000", 2, "1.00", "1.00"]], [3, ["6000", 3, "0.95", "0.95"]],
        [4, ["9000", 4, "1.10", "1.10"]], [5, ["4000", 5, "0.92", "0.92"]],
        [2, ["3000", 2, "0.91", "0.91"]]]]]}  # fmt: skip
    # which the consumer's new replica takes from its start
    assert [(n.watch, n.seq, n.data) for n in consumer.handle(message)] == [
        ("v", seq, {"offer": 2, "value": "0.91"})
    ]
    assert producer.cursor == {(0, family): 5} and len(consumer.replicas[family].log) == 5
