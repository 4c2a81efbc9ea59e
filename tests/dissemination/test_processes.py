"""The strategies through the real channel layer (channels-redis on the test Redis) to two
consumer processes (issue 21 item 2): every strategy's notifications equal the one
evaluator's, on a short random flow."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest
from django.conf import settings

from exchange.dissemination.processes import Cluster, run_flow
from matching.dissemination import Producer
from matching.subscriptions.events import event_from_dict
from tests.dissemination.harness import evaluate
from tests.matching.subscriptions.form4_cases import PENCILS, Flow

PENS = "office.supplies.pens"


def random_flow(seed: int, length: int) -> Flow:
    rng = random.Random(seed)
    f = Flow()
    for _ in range(length):
        offer = rng.randint(1, 8)
        subject = rng.choice([PENCILS, PENCILS, PENS])
        action = rng.choice(["post", "post", "amend", "end", "best"])
        ask = rng.choice(["0.80", "0.90", "0.95", "1.00", "1.10"])
        lot = rng.choice([500, 1000, 2000, 3000, 5000, 8000])
        if action == "post":
            f.post(offer, ask, subject, quantity_max=lot)
        elif action == "amend":
            f.amend(offer, ask, subject, quantity_max=lot)
        elif action == "end":
            f.end(offer, "offer_withdrawn", subject)
        else:
            f.best(offer, rng.choice([None, "0.90", "1.00"]), rng.randint(0, 3), subject)
    return f


def watch_texts() -> list[str]:
    texts = []
    for func in ("MIN", "MAX"):
        for lo, hi in [(0, 10000), (1000, 3000), (2000, 2000), (2500, 9000)]:
            texts.append(
                f"SELECT {func}(ask) FROM offers WHERE subject = '{PENCILS}' "
                f"AND quantity_max BETWEEN {lo} AND {hi}"
            )
    texts.append("SELECT MIN(best_value) FROM offers WHERE subject MATCHES 'office.>'")
    texts.append(
        f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}' NOTIFY WHEN CHANGED BY 5%"
    )
    return texts


@pytest.mark.parametrize("strategy", ["enumerate", "relax", "reformulate", "auto"])
def test_two_consumer_processes_notify_as_the_evaluator_does(strategy):
    # Given a random flow of 60 events, the first 10 before the watches are registered
    raw = random_flow(seed=21, length=60).events
    texts = watch_texts()
    expected = evaluate(raw, texts, registered=10)
    events = [event_from_dict(e) for e in raw]
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    cluster = Cluster(2, [settings.REDIS_URL], prefix, f"dissem-{uuid.uuid4().hex[:8]}")
    cluster.start()
    # When they run through the producer to two consumer processes over Redis
    watches = [(i, text, i % 2) for i, text in enumerate(texts)]
    got = asyncio.run(run_flow(cluster, Producer(strategy), events[:10], watches, events[10:]))
    # Then every watch was told what the evaluator tells it, and both processes ended
    assert got == expected
    assert [p.exitcode for p in cluster.processes] == [0, 0]
    assert sum(len(v) for v in expected.values()) > len(texts)  # the flow moved answers
