"""Live form 4 watches delivered by dissemination in the subscription engine (issue 35 item
5, ``matching/dissemination/hosted.py``, ``exchange/subscription_engine/watches.py``): on
order flows through the log's writer every watch's outbox is what the offline contract
gives (``subscription_run``), the open offers are held once by the engine's ``WatchHub``
(not by each watch), each change that reaches a watch is logged with the optimizer's
estimates and measured time for the staff dashboard, and a restart from a checkpoint (the
watches' snapshots without offers, the book stored once with the partitions) sends
nothing twice and loses nothing, a missing book rebuilding the watches by replay."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from exchange.dissemination.choices import choices_key
from exchange.models import Subscription, SubscriptionPartition
from exchange.redis_clients import redis_client
from exchange.selectors.dissemination import dissemination_choices
from exchange.selectors.events import events_log_end
from exchange.services.subscriptions import (
    subscription_create,
    subscription_delete,
    subscription_pause,
    subscription_resume,
)
from exchange.subscription_engine import engine as engine_module
from matching.dissemination import STRATEGIES
from matching.subscriptions.run.snapshot import SnapshotStale, book_load, snapshot_load
from matching.subscriptions.watches.watch import WatchEngine
from tests.factories import UserFactory
from tests.subscriptions.log import (
    DAY,
    PENCILS,
    append,
    append_at,
    offline,
    outbox,
    rebuilds_counted,
)
from tests.subscriptions.test_engine import drain, expire, make, no_wake_ups  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

PENS = "office.supplies.pens"
WATCHES = {
    "lot": f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}' "
    "AND quantity_max BETWEEN 2000 AND 5000",
    "cheapest": f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}'",
    "dearest": "SELECT MAX(ask) FROM offers WHERE subject MATCHES 'office.>' "
    "NOTIFY WHEN CHANGED BY 5%",
    "best": f"SELECT MIN(best_value) FROM offers WHERE subject = '{PENCILS}'",
    "one": "SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 3%",
}


def posted(
    offer: int, ask: str, quantity_max: int, *, subject: str = PENCILS, kind: str = "offer_posted"
):
    return (
        kind,
        subject,
        None,
        {"offer": offer, "version": 1, "ask": ask, "quantity_max": quantity_max,
         "constraint": f"price >= {ask}"},
    )  # fmt: skip


def best(offer: int, value: str, *, subject: str = PENCILS):
    return ("best_offer", subject, None, {"offer": offer, "value": value, "matching_bids": 1})


def ended(offer: int, kind: str = "offer_withdrawn", *, subject: str = PENCILS):
    data: dict[str, Any] = {"offer": offer}
    if kind == "offer_closed":
        data["outcome"] = "sold"
    return (kind, subject, None, data)


# Each change is one commit of the log, as matching cycles append them.
FLOW = [
    [posted(4, "1.00", 2500)],  # lot and cheapest: offer 4
    [posted(2, "0.95", 8000, kind="offer_amended")],  # cheapest: offer 2
    [best(1, "1.15"), best(2, "1.00")],  # best: offer 2 at 1.00 (after 1 at 1.15)
    [ended(4)],  # lot: back to offer 1
    [("trade", PENCILS, None, {"offer": 2, "trade": 1, "price": "1.00", "quantity": 8000})],
    [ended(2, "offer_closed")],  # cheapest: offer 4 is gone too, so offer 1; best: offer 1
    [posted(5, "1.30", 100, subject=PENS)],  # dearest: 1.20 -> 1.30, more than 5%
    [posted(5, "1.33", 100, subject=PENS, kind="offer_amended")],  # dearest: within 5%
    [best(1, "1.10")],  # one: 1.15 -> 1.10 is more than 3%; best: 1.10
]
# More of the same market, for the tests that go on after a restart.
MORE = [
    [posted(6, "0.80", 3000)],
    [best(6, "0.70"), posted(7, "1.50", 200, subject=PENS)],
    [posted(6, "0.90", 4000, kind="offer_amended")],
    [ended(6, "offer_cancelled"), best(1, "1.00")],
]


@pytest.fixture(autouse=True)
def clean():
    redis_client().delete(choices_key())
    yield
    redis_client().delete(choices_key())


def _register() -> dict[str, Subscription]:
    append([posted(1, "1.20", 3000), posted(2, "1.10", 8000), posted(3, "0.50", 100, subject=PENS)])
    ann = UserFactory(username="ann")
    return {name: subscription_create(owner=ann, query=text) for name, text in WATCHES.items()}


def _same(subs: dict[str, Subscription]) -> None:
    for sub in subs.values():
        assert outbox(sub) == offline(sub), sub.query


def test_the_engine_delivers_watches_by_dissemination_as_the_offline_contract_gives():
    subs = _register()
    running = make("a")
    drain(running)
    # The live watches are the hub's, not the set's, and hold no open offers of their own
    ids = {s.pk for s in subs.values()}
    assert set(running.watches.subs) == ids and not ids & set(running.followed) - ids
    assert all(sub_id not in running.subs for sub_id in ids)
    for sub in running.watches.subs.values():
        assert isinstance(sub.engine, WatchEngine) and sub.engine.offers.offers == {}
    assert sorted(running.watches.offers.offers) == [1, 2, 3]
    for commit in FLOW:
        append(commit)
    drain(running)
    _same(subs)
    # and the flow moved every watch (not an empty comparison)
    assert {name: len(outbox(s)) - 1 for name, s in subs.items()} == {
        "lot": 2, "cheapest": 3, "dearest": 1, "best": 4, "one": 2,
    }  # fmt: skip


def test_each_change_that_reaches_a_watch_is_logged_with_estimates_and_measured_time():
    _register()
    running = make("a")
    drain(running)
    first = events_log_end()
    for commit in FLOW:
        append(commit)
    drain(running)
    got = dissemination_choices(limit=100)
    # Newest first; the trade reaches no watch and is not logged, nor the registrations
    trade_seq = first + 6
    assert sorted(c["seq"] for c in got) == [
        s for s in range(first + 1, events_log_end() + 1) if s != trade_seq
    ]
    assert [c["seq"] for c in got] == sorted((c["seq"] for c in got), reverse=True)
    for c in got:
        assert c["choice"] in STRATEGIES
        assert set(c["estimates"]) == set(STRATEGIES)
        assert c["measured_seconds"] >= 0
        chosen = c["estimates"][c["choice"]]["seconds"]
        assert chosen == min(e["seconds"] for e in c["estimates"].values())


def test_registered_mid_flow_paused_resumed_and_deleted_watches_keep_the_contract():
    subs = _register()
    running = make("a")
    drain(running)
    for commit in FLOW[:3]:
        append(commit)
    drain(running)
    # A watch registered mid-flow (its history up to the seam), one paused, one deleted
    later = subscription_create(owner=subs["lot"].owner, query=WATCHES["cheapest"])
    subscription_pause(owner=subs["dearest"].owner, subscription_id=subs["dearest"].pk)
    subscription_delete(owner=subs["best"].owner, subscription_id=subs["best"].pk)
    running.changed = True  # what the process is told through Redis
    before = outbox(subs["best"])
    for commit in FLOW[3:7]:
        append(commit)
    drain(running)
    assert subs["dearest"].pk not in running.watches
    assert subs["best"].pk not in running.watches and outbox(subs["best"]) == before
    subscription_resume(owner=subs["dearest"].owner, subscription_id=subs["dearest"].pk)
    running.changed = True
    for commit in FLOW[7:]:
        append(commit)
    drain(running)
    assert {subs["dearest"].pk, later.pk} <= set(running.watches.subs)
    del subs["best"]
    _same({**subs, "later": later})
    assert len(outbox(later)) > 1 and len(outbox(subs["dearest"])) == 2


def _checkpointed() -> dict[str, Subscription]:
    """Watches followed through FLOW by a process that checkpoints at every batch, which
    then dies; the rows hold snapshots without offers and the partitions the book."""
    subs = _register()
    first = make("a")
    first.checkpoint_events = 0  # a checkpoint at every batch
    drain(first)
    for commit in FLOW:
        append(commit)
    drain(first)
    for sub in subs.values():
        sub.refresh_from_db()
        with pytest.raises(SnapshotStale):
            snapshot_load(sub.evaluator)  # its offers are the book's
    books = SubscriptionPartition.objects.exclude(book=None).values_list(
        "checkpoint_cursor", "book"
    )
    assert {cursor for cursor, _ in books} == {events_log_end()}
    cursor, offers = book_load(books[0][1])
    assert cursor == events_log_end() and sorted(offers.offers) == [1, 3, 5]
    expire("a")
    return subs


def test_a_process_restores_the_watches_from_the_book_and_sends_nothing_twice(monkeypatch):
    subs = _checkpointed()
    rebuilt: list[int] = []
    monkeypatch.setattr(
        engine_module,
        "subscription_rebuilt",
        lambda **kw: rebuilt.append(kw["seam"]) or pytest.fail("rebuilt"),
    )
    second = make("b")
    for commit in MORE:
        append(commit)
    drain(second)
    _same(subs)
    assert rebuilt == []
    assert sum(len(outbox(s)) for s in subs.values()) > 17


def test_watches_whose_book_is_gone_are_rebuilt_by_replay(monkeypatch):
    subs = _checkpointed()
    SubscriptionPartition.objects.update(book=None)
    rebuilt = rebuilds_counted(monkeypatch)
    second = make("b")
    for commit in MORE:
        append(commit)
    drain(second)
    assert len(rebuilt) == len(subs)
    _same(subs)


SPADES = "garden.tools.spades"


def _watch_query(rng: random.Random) -> str:
    notify = rng.choice(["", "", " NOTIFY WHEN CHANGED BY 5%", " NOTIFY WHEN CHANGED BY 0.05"])
    subject = rng.choice([PENCILS, PENS, SPADES])
    lo = rng.choice([0, 1000, 2000])
    return (
        rng.choice(
            [
                f"SELECT MIN(ask) FROM offers WHERE subject = '{subject}'",
                "SELECT MAX(ask) FROM offers WHERE subject MATCHES 'office.>'",
                f"SELECT MIN(ask) FROM offers WHERE subject = '{subject}' "
                f"AND quantity_max BETWEEN {lo} AND {lo + 3000}",
                f"SELECT MAX(best_value) FROM offers WHERE subject MATCHES '*.*.{subject[-6:]}' "
                "AND quantity_max >= 1000",
                f"SELECT best_value FROM offers WHERE offer = {rng.randint(1, 8)}",
                f"SELECT ask FROM offers WHERE offer = {rng.randint(1, 8)}",
            ]
        )
        + notify
    )


class Offers:
    """A generated order flow, appended a minute apart: posts, amendments, best values
    moving, withdrawals, cancellations, closes and trades over eight offers."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.minute = 0
        self.subject: dict[int, str] = {}

    def add(self, count: int) -> None:
        rng = self.rng
        for _ in range(count):
            offer = rng.randint(1, 8)
            subject = self.subject.setdefault(offer, rng.choice([PENCILS, PENS, SPADES]))
            ask = f"{rng.randint(80, 130) / 100:.2f}"
            kind = rng.random()
            if kind < 0.3:
                row = posted(offer, ask, rng.choice([100, 1500, 2500, 4000]), subject=subject)
            elif kind < 0.45:
                row = posted(offer, ask, rng.choice([100, 1500, 2500, 4000]), subject=subject,
                             kind="offer_amended")  # fmt: skip
            elif kind < 0.75:
                row = best(offer, f"{rng.randint(70, 140) / 100:.2f}", subject=subject)
            elif kind < 0.9:
                how = rng.choice(["offer_withdrawn", "offer_cancelled", "offer_closed"])
                row = ended(offer, how, subject=subject)
            else:
                row = ("trade", subject, None, {"offer": offer, "trade": self.minute, "price": ask})
            self.minute += 1
            append_at([row], DAY + dt.timedelta(minutes=self.minute))


@pytest.mark.parametrize("seed", [51, 52, 53])
def test_generated_flows_through_two_processes_that_checkpoint_die_and_are_replaced(
    seed, monkeypatch
):
    rng = random.Random(seed)
    users = [UserFactory(), UserFactory()]
    flow = Offers(rng)
    rebuilt = rebuilds_counted(monkeypatch)

    def register(count: int) -> list[Subscription]:
        return [
            subscription_create(owner=rng.choice(users), query=_watch_query(rng))
            for _ in range(count)
        ]

    # Given watches registered on a log, followed by two processes that checkpoint often
    flow.add(20)
    subs = register(15)
    a = make("a", batch=4, chunk=7, checkpoint_events=6)
    b = make("b", batch=5, chunk=9, checkpoint_events=9)
    for e in (a, b, a, b):
        e.upkeep()
    assert a.held and b.held
    flow.add(15)
    drain(a, b)
    # more registered mid-log, some paused, some deleted, while the log grows
    subs += register(15)
    paused = rng.sample(subs, 4)
    for sub in paused[:3]:
        subscription_pause(owner=sub.owner, subscription_id=sub.pk)
    subscription_delete(owner=paused[3].owner, subscription_id=paused[3].pk)
    for _ in range(5):
        flow.add(3)
        for e in (a, b):
            e.changed = True
            e.step()
    # When a dies after a batch that did not checkpoint, and c takes its partitions over
    flow.add(2)
    a.checkpoint_events = 10**9
    a.step()
    shared = 0
    for row in Subscription.objects.filter(state="active"):
        try:
            snapshot_load(row.evaluator)
        except SnapshotStale:
            shared += 1  # a watch that left its offers to its process's book
    assert shared > 5
    expire("a")
    for sub in paused[:3]:
        subscription_resume(owner=sub.owner, subscription_id=sub.pk)
    c = make("c", batch=6, chunk=5, checkpoint_events=7)
    flow.add(15)
    for e in (b, c, b, c):
        e.changed = True
        e.upkeep()
    drain(b, c)
    # Then every outbox is the offline contract's, each line once, and no watch needed a
    # rebuild: each found its partition's book at its cursor
    deleted = paused[3]
    for sub in subs:
        if sub is not deleted:
            assert outbox(sub) == offline(sub), sub.query
    told = outbox(deleted)  # what it was told before its deletion
    assert told == offline(deleted)[: len(told)]
    assert rebuilt == []
    assert sum(len(outbox(s)) for s in subs) > 3 * len(subs)
