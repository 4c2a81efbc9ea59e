"""The subscription engine (``exchange/subscription_engine``, issue 35): every outbox is what
the offline contract gives on its owner's log, for hundreds of subscriptions of every form
followed by two processes that share the partitions, lose one to the other, crash in the
middle of a batch and are replaced; the leases share, fence and move the partitions;
pause, resume, delete, ``state_limit`` and a failing evaluator suspend one subscription
alone; one owner's costly subscriptions fall behind alone (its lane's budget)."""

from __future__ import annotations

import datetime as dt
import json
import random
import time

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from exchange.errors import InvalidInput
from exchange.models import Subscription, SubscriptionEngineProcess, SubscriptionPartition
from exchange.redis_clients import redis_client
from exchange.selectors.events import events_log_end
from exchange.selectors.subscription_lag import engine_processes_lag
from exchange.services import events as event_service
from exchange.services import subscriptions as service
from exchange.services.subscriptions import (
    subscription_create,
    subscription_delete,
    subscription_pause,
    subscription_resume,
)
from exchange.subscription_engine import engine as engine_module
from exchange.subscription_engine.engine import OWNER_BUDGET, Engine
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions import parse_query, run_offline
from matching.subscriptions.run.limits import WORK_LIMIT
from tests.conftest import live_engines_stop
from tests.factories import StaffFactory, UserFactory
from tests.subscriptions.log import (
    DAY,
    PENCILS,
    TEMPLATES,
    Log,
    append_at,
    outbox,
    owner_log,
    rebuilds_counted,
    register,
    trade,
)

pytestmark = pytest.mark.django_db

PARTITIONS = 8


@pytest.fixture(autouse=True)
def no_wake_ups(monkeypatch):
    """The tests run the engine's steps themselves (no wake-up reaches a process of a live
    stack, whose engine processes are stopped: ``make``)."""
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(service, "subscriptions_changed_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)


def make(name: str, **kwargs) -> Engine:
    """An engine whose clock stands still and whose leases last ten minutes: they move only
    when the test says so (``upkeep``, ``expire``). Its rounds store a whole slice a batch
    (``checkpoint_spread`` 0): a round cannot be paced by a clock that stands still."""
    live_engines_stop()
    kwargs.setdefault("lease_seconds", 600)
    kwargs.setdefault("checkpoint_events", 10**9)
    kwargs.setdefault("checkpoint_seconds", 10**9)
    kwargs.setdefault("checkpoint_spread", 0)
    return Engine(name, partitions=PARTITIONS, clock=lambda: 0.0, **kwargs)


def clocked(now: list[float], **kwargs) -> Engine:
    """An engine "a" whose clock reads ``now[0]`` (the test moves it), its leases ten
    minutes long and no checkpoint due unless the test says."""
    live_engines_stop()
    kwargs.setdefault("checkpoint_events", 10**9)
    kwargs.setdefault("checkpoint_seconds", 10**9)
    return Engine("a", partitions=PARTITIONS, lease_seconds=600, clock=lambda: now[0], **kwargs)


def drain(*engines: Engine) -> None:
    while any([e.step() for e in engines]):
        pass


def expire(name: str) -> None:
    """The process ``name`` died: its leases and heartbeat run out."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE exchange_subscriptionpartition SET expires_at = now() - interval '1 minute' "
            "WHERE owner = %s",
            [name],
        )
        cursor.execute(
            "UPDATE exchange_subscriptionengineprocess "
            "SET heartbeat_at = now() - interval '1 hour' WHERE name = %s",
            [name],
        )


def owners() -> dict[int, str]:
    return dict(SubscriptionPartition.objects.values_list("partition", "owner"))


def test_a_second_process_takes_half_and_a_dead_ones_partitions_are_taken_over():
    a, b = make("a"), make("b")
    a.upkeep()
    assert a.held == set(range(PARTITIONS))
    b.upkeep()  # a still holds everything: nothing is free yet
    assert b.held == set()
    a.upkeep()  # two live processes: a gives back what is over its half
    b.upkeep()
    assert (len(a.held), len(b.held)) == (4, 4) and not a.held & b.held
    assert owners() == {p: ("a" if p in a.held else "b") for p in range(PARTITIONS)}
    # When a dies (its leases expire), b takes every partition
    expire("a")
    b.upkeep()
    assert b.held == set(range(PARTITIONS))
    # and a's renewal finds none of them its own any more
    a.upkeep()
    assert a.held == set()


def test_a_commit_after_the_lease_was_taken_writes_nothing():
    owner = UserFactory()
    subs = [subscription_create(owner=owner, query="SELECT price") for _ in range(PARTITIONS)]
    a, b = make("a"), make("b")
    drain(a)
    # Given a's batch read an event while b took its partitions over (a's leases expired)
    append_at([trade("1.10")], DAY)
    expire("a")
    b.upkeep()
    # When a commits that batch, it writes nothing and forgets the partitions
    a.step()
    assert [outbox(s) for s in subs] == [[]] * PARTITIONS
    assert a.held == set() and a.followed == {}
    # and b writes each notification once
    drain(b)
    assert [[x["seq"] for x in outbox(s)] for s in subs] == [[1]] * PARTITIONS


def test_hundreds_of_subscriptions_on_two_processes_get_what_the_offline_contract_gives(
    monkeypatch,
):
    rng = random.Random(35)
    users = [UserFactory(username=f"trader{i}") for i in range(3)] + [StaffFactory()]
    log = Log(users, rng)
    # Given a log, subscriptions registered on it, and two processes sharing the partitions
    log.add(40)
    subs = register(users, rng, 150)
    # (b's checkpoint rounds take many batches: a slice of 7 subscriptions each)
    a = make("a", batch=7, chunk=11, checkpoint_events=20)
    b = make("b", batch=5, chunk=9, checkpoint_events=30, checkpoint_slice=7)
    for e in (a, b, a, b):
        e.upkeep()
    assert a.held and b.held
    log.add(15)
    drain(a, b)
    # more subscriptions while the log grows, batches leaving them at different places
    subs += register(users, rng, 150)
    for size in (5, 9, 13):
        log.add(size)
        a.step()
        b.step()
    # When a crashes in the middle of a batch (its commit never happens) and dies
    log.add(6)
    subs += register(users, rng, 20)

    def crash(self, upto):
        raise ConnectionError("killed")

    monkeypatch.setattr(Engine, "_commit", crash)
    with pytest.raises(ConnectionError):
        a.step()
    monkeypatch.undo()
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(service, "subscriptions_changed_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)
    expire("a")
    # and a replacement process starts beside b, which took a's partitions meanwhile
    b.upkeep()
    assert b.held == set(range(PARTITIONS))
    c = make("c", batch=4, chunk=6)
    log.add(10)
    drain(b)
    c.upkeep()
    b.upkeep()
    c.upkeep()
    assert len(c.held) == len(b.held) == PARTITIONS // 2
    log.add(25)
    drain(b, c)
    for e in (b, c):  # what each follows, by partition as by id
        assert {f.sub_id: f for f in e._in(e.held)} == e.followed
        assert {f.partition for f in e.followed.values()} <= e.held

    # Then every outbox is what the offline contract gives on its owner's log
    logs = {user.pk: owner_log(user) for user in users}
    states: dict[str, int] = {}
    for sub in subs:
        expected = list(run_offline(parse_query(sub.query), logs[sub.owner_id], now=sub.now))
        assert outbox(sub) == expected, sub.query
        states[sub.state] = states.get(sub.state, 0) + 1
    assert states["active"] and states["done"]
    assert sum(len(outbox(sub)) for sub in subs) > 1000
    # and the checkpoints stored on the way hold as many notifications as they say
    for sub in Subscription.objects.filter(state="active"):
        assert 0 <= sub.checkpoint_n <= sub.last_n


def test_a_checkpoint_round_stores_a_slice_a_batch_and_a_successor_restores_every_one(
    monkeypatch,
):
    rng = random.Random(45)
    users = [UserFactory(username=f"trader{i}") for i in range(3)]
    log = Log(users, rng)
    log.add(30)
    subs = register(users, rng, 150)
    subs += [  # watches of every partition, delivered by the hub once live
        subscription_create(owner=users[i % 3], query=TEMPLATES[-1]) for i in range(16)
    ]
    stored: list[list[int]] = []  # the snapshots of live rows each batch wrote
    write = engine_module._write

    def counted(notes, rows):
        stored.append([r.sub_id for r in rows if r.evaluator is not None and r.state == "active"])
        return write(notes, rows)

    monkeypatch.setattr(engine_module, "_write", counted)
    first = make("a", batch=3, chunk=50, checkpoint_events=6, checkpoint_slice=10)
    drain(first)
    watches = {s.pk for s in subs if s.pk in first.watches}
    assert len(watches) >= 16 and len(first.followed) > 100
    # Given the log goes on for rounds of checkpoints over more than a hundred subscriptions
    stored.clear()
    log.add(120)
    drain(first)
    # Then each batch stored a slice (of at most ten besides the live watches of the
    # partitions whose book it stored, all of them with it) and no batch all of them
    for batch in stored:
        assert len(set(batch) - watches) <= 10
        parts = {sub_id % PARTITIONS for sub_id in set(batch) & watches}
        assert {w for w in watches if w % PARTITIONS in parts} <= set(batch)
    assert max(len(batch) for batch in stored) < len(first.followed) // 4
    assert set(first.followed) <= {sub_id for batch in stored for sub_id in batch}
    # When the process dies and a successor restores the checkpoints
    expire("a")
    rebuilt = rebuilds_counted(monkeypatch)
    second = make("b", batch=4)
    log.add(10)
    drain(second)
    # Then none had to be rebuilt by replay (a live watch's book at its cursor included)
    assert rebuilt == []
    # and every outbox is what the offline contract gives, each notification once
    logs = {user.pk: owner_log(user) for user in users}
    for sub in subs:
        expected = list(run_offline(parse_query(sub.query), logs[sub.owner_id], now=sub.now))
        assert outbox(sub) == expected, sub.query


def test_a_round_is_paced_over_its_spread_a_part_of_a_slice_a_batch(monkeypatch):
    owners = [UserFactory(), UserFactory()]  # (at most 100 each)
    subs = [subscription_create(owner=owners[i % 2], query="SELECT price") for i in range(160)]
    now = [0.0]
    # a round spreads over 10 s (ROUND_SPREAD, a half)
    running = clocked(now, checkpoint_seconds=20, checkpoint_slice=30)
    drain(running)
    assert set(running.followed) == {s.pk for s in subs}
    stored: list[list[int]] = []
    write = engine_module._write

    def counted(notes, rows):
        stored.append([r.sub_id for r in rows if r.evaluator is not None])
        return write(notes, rows)

    monkeypatch.setattr(engine_module, "_write", counted)
    # Given a round due, and then an event a second
    now[0] = 20.0
    for second in range(11):
        append_at([trade("1.00")], timezone.now())
        drain(running)
        now[0] += 1.0 if second < 8 else 6.0
    # Then its first batch stored one, the next ones 160 / 10 s a second (16), the one 6 s
    # after its last at most the slice (30), the last what was left; each subscription once
    sizes = [len(batch) for batch in stored if batch]
    assert sizes == [1, 16, 16, 16, 16, 16, 16, 16, 16, 30, 1]
    assert sorted(i for batch in stored for i in batch) == sorted(s.pk for s in subs)
    assert running._round is None


def test_without_a_wake_up_the_partitions_rows_are_read_one_a_step_in_turn(monkeypatch):
    owner = UserFactory()
    query = "SELECT price WHERE type = 'trade'"
    subs = [subscription_create(owner=owner, query=query) for _ in range(PARTITIONS)]
    now = [0.0]
    running = clocked(now)
    drain(running)
    assert set(running.followed) == {s.pk for s in subs}
    read: list[set[int] | None] = []
    rescan = running._rescan
    monkeypatch.setattr(running, "_rescan", lambda parts=None: read.append(parts) or rescan(parts))
    # Given a subscription paused with no wake-up reaching the engine
    paused = subs[3]
    subscription_pause(owner=owner, subscription_id=paused.pk)
    # When steps go by, each after an eighth of RESCAN_SECONDS
    seen = []
    for _ in range(PARTITIONS):
        now[0] += engine_module.RESCAN_SECONDS / PARTITIONS
        running.step()
        seen.append(paused.pk in running.followed)
    # Then each step read one partition's rows, in turn, and the pause was found at its turn
    assert read == [{p} for p in range(PARTITIONS)]
    turn = paused.pk % PARTITIONS
    assert seen == [True] * turn + [False] * (PARTITIONS - turn)
    assert set(running.followed) == {s.pk for s in subs} - {paused.pk}


def test_pause_resume_and_delete():
    owner = UserFactory()
    paused = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    deleted = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    engine = make("a")
    append_at([trade("1.00")], DAY)
    drain(engine)
    # When one is paused and the other deleted, and the log grows
    subscription_pause(owner=owner, subscription_id=paused.pk)
    subscription_delete(owner=owner, subscription_id=deleted.pk)
    engine.changed = True  # what the wake-up says
    append_at([trade("1.10")], DAY + dt.timedelta(minutes=1))
    drain(engine)
    # Then neither is sent the new event; the paused one is checkpointed where it stopped
    # (the engine read the pause before the batch)
    assert [x["seq"] for x in outbox(paused)] == [1]
    assert [x["seq"] for x in outbox(deleted)] == [1]
    paused.refresh_from_db()
    assert (paused.state, paused.cursor, paused.last_n, paused.checkpoint_n) == (
        "paused",
        1,
        1,
        1,
    )
    assert paused.pk not in engine.followed and deleted.pk not in engine.followed
    assert engine.dropped == 2  # each counted once (``collector.EngineHeap``)
    # When it is resumed, the events appended while it was paused come, each once
    append_at([trade("1.20")], DAY + dt.timedelta(minutes=2))
    drain(engine)
    subscription_resume(owner=owner, subscription_id=paused.pk)
    engine.changed = True
    drain(engine)
    append_at([trade("1.30")], DAY + dt.timedelta(minutes=3))
    drain(engine)
    assert [x["seq"] for x in outbox(paused)] == [1, 2, 3, 4]
    assert [x["seq"] for x in outbox(deleted)] == [1]


def test_a_subscription_deleted_after_its_batch_was_read_gets_nothing_more(monkeypatch):
    owner = UserFactory()
    sub = subscription_create(owner=owner, query="SELECT price")
    engine = make("a")
    drain(engine)
    append_at([trade("1.00")], DAY)
    commit = Engine._commit

    def deleted_first(self, upto):
        subscription_delete(owner=owner, subscription_id=sub.pk)  # lands before the commit
        commit(self, upto)

    monkeypatch.setattr(Engine, "_commit", deleted_first)
    engine.step()
    sub.refresh_from_db()
    assert (sub.state, sub.reason, sub.last_n, outbox(sub)) == ("done", "deleted", 0, [])
    assert sub.pk not in engine.followed


def fails_at(monkeypatch, query: str, seq: int):
    """Every evaluator of ``query`` raises ``ZeroDivisionError`` on the event ``seq``; the
    parsed query."""
    original = Evaluator.push
    broken = parse_query(query)

    def push(self, event, *, live, **kwargs):
        if event.seq == seq and self.query == broken:
            raise ZeroDivisionError("division by zero")
        return original(self, event, live=live, **kwargs)

    monkeypatch.setattr(Evaluator, "push", push)
    return broken


def test_failures_and_state_limit_suspend_one_subscription_only(monkeypatch):
    owner = UserFactory()
    healthy = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    unreadable = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    failing = subscription_create(owner=owner, query="SELECT price WHERE price > 1.05")
    Subscription.objects.filter(pk=unreadable.pk).update(evaluator=b"not a pickle")
    fails_at(monkeypatch, failing.query, 2)
    engine = make("a")
    drain(engine)
    for minute, price in enumerate(("1.10", "1.20", "1.30")):
        append_at([trade(price)], DAY + dt.timedelta(minutes=minute))
    drain(engine)

    failing.refresh_from_db()
    unreadable.refresh_from_db()
    assert (failing.state, failing.reason, failing.evaluator) == ("suspended", "error", None)
    assert outbox(failing) == [
        {"n": 1, "seq": 1, "data": {"price": "1.10"}},
        {
            "n": 2,
            "seq": 2,
            "data": {
                "error": "runtime_error",
                "message": "the subscription failed while evaluating: ZeroDivisionError: "
                "division by zero",
            },
        },
    ]
    assert (unreadable.state, unreadable.reason, unreadable.evaluator) == (
        "suspended",
        "error",
        None,
    )
    [line] = outbox(unreadable)
    assert line["data"]["message"].startswith(
        "the subscription failed while evaluating: SnapshotError: not a subscription snapshot"
    )
    assert [line["seq"] for line in outbox(healthy)] == [1, 2, 3]


def test_rows_written_either_way_get_what_the_offline_contract_gives_and_push_it(monkeypatch):
    """Issue 35 item 7: a commit writes most notified rows without a ``Row`` (notifications
    only: ``_commit``'s common case) and the others through ``_row`` (a checkpoint of a
    round's slice, a failure, a ``state_limit``). In batches that mix them, every outbox is
    what the offline contract gives (the failing one's up to its failure) and the
    ``sub:<id>`` pushes carry exactly each outbox, in order, numbered as it is."""
    owner = UserFactory()
    rng = random.Random(35)
    queries = [
        "SELECT price WHERE type = 'trade'",
        "SELECT price WHERE price > 1.05",
        "SELECT COUNT(price, 2) WHERE type = 'trade'",
    ]
    subs = [subscription_create(owner=owner, query=rng.choice(queries)) for _ in range(30)]
    failing = subscription_create(owner=owner, query="SELECT price WHERE price < 1.50")
    state_limit = service.STATE_LIMIT
    monkeypatch.setattr(service, "STATE_LIMIT", 2)  # (its registration's alone)
    limited = subscription_create(owner=owner, query="SELECT COUNT(price, 5) WHERE type = 'trade'")
    monkeypatch.setattr(service, "STATE_LIMIT", state_limit)
    broken = fails_at(monkeypatch, failing.query, 6)
    pushed: list[dict] = []
    monkeypatch.setattr(
        engine_module,
        "group_send_made",
        lambda makers: pushed.extend(m for make in makers.values() for m in make()),
    )
    # a round every two events, five snapshots a batch: some rows of most batches
    # checkpointed beside the others
    engine = make("a", checkpoint_events=2, checkpoint_slice=5)
    drain(engine)
    for minute in range(12):
        price = rng.choice(["1.00", "1.10", "1.20"])
        append_at([trade(price)], DAY + dt.timedelta(minutes=minute))
        drain(engine)

    log = owner_log(owner)
    for sub in subs:
        assert outbox(sub) == list(run_offline(parse_query(sub.query), log, now=sub.now))
    failing.refresh_from_db()
    assert (failing.state, failing.reason) == ("suspended", "error")
    offline = list(run_offline(broken, log[:5], now=failing.now))
    assert outbox(failing)[:-1] == offline and outbox(failing)[-1]["seq"] == 6
    limited.refresh_from_db()
    assert (limited.state, limited.reason) == ("suspended", "state_limit")
    assert outbox(limited) == list(
        run_offline(parse_query(limited.query), log, now=limited.now, state_limit=2)
    )
    streams: dict[str, list[dict]] = {}
    for message in pushed:
        streams.setdefault(message["stream"], []).extend(message["notifications"])
    for sub in [*subs, failing, limited]:
        assert streams.get(f"sub:{sub.pk}", []) == outbox(sub)


def test_a_batch_that_fails_after_its_events_were_fed_notifies_each_once(monkeypatch):
    """A failure after the set took the batch's events (a lane's read of its past, with the
    database gone) leaves the cursor where it was: the next step reads the batch again, and
    each notification is written once."""
    owner = UserFactory()
    sub = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    engine = make("a")
    drain(engine)
    original = Engine._lanes_feed
    failed: list[int] = []

    def lanes_feed(self, events, start, upto):
        if events and not failed:
            failed.append(upto)
            raise ConnectionError("the database went away while a lane read its past")
        return original(self, events, start, upto)

    monkeypatch.setattr(Engine, "_lanes_feed", lanes_feed)
    for minute, price in enumerate(("1.10", "1.20")):
        append_at([trade(price)], DAY + dt.timedelta(minutes=minute))
    with pytest.raises(ConnectionError):
        engine.step()
    drain(engine)
    assert failed == [2]
    assert outbox(sub) == [
        {"n": 1, "seq": 1, "data": {"price": "1.10"}},
        {"n": 2, "seq": 2, "data": {"price": "1.20"}},
    ]


def test_state_limit_suspends_the_subscription(monkeypatch):
    monkeypatch.setattr(service, "STATE_LIMIT", 2)
    owner = UserFactory()
    heavy = subscription_create(
        owner=owner,
        query="SELECT a.price, b.price FROM FILTER{type = 'trade'}(EVENTS) AS a "
        "NEXT{b.price > 2 * a.price} FILTER{type = 'trade'}(EVENTS) AS b",
    )
    light = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    engine = make("a")
    drain(engine)
    for minute in range(4):
        append_at([trade("1.00")], DAY + dt.timedelta(minutes=minute))
    drain(engine)
    heavy.refresh_from_db()
    assert (heavy.state, heavy.reason, heavy.evaluator) == ("suspended", "state_limit", None)
    assert outbox(heavy) == list(
        run_offline(parse_query(heavy.query), owner_log(owner), now=heavy.now, state_limit=2)
    )
    assert [line["seq"] for line in outbox(light)] == [1, 2, 3, 4]


def test_a_restarted_process_writes_nothing_twice_and_reads_only_its_checkpoints(monkeypatch):
    owner = UserFactory()
    subs = [
        subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
        for _ in range(3)
    ]
    first = make("a", checkpoint_events=2)
    for minute in range(5):
        append_at([trade(f"1.{minute}0")], DAY + dt.timedelta(minutes=minute))
        drain(first)
    # Given a process that checkpointed (every 2 events) and then died after more
    expire("a")
    # When a new one restores the checkpoints and goes on
    loads: list[int] = []
    load = engine_module._state_load
    monkeypatch.setattr(
        engine_module, "_state_load", lambda raw, **kw: loads.append(1) or load(raw, **kw)
    )
    second = make("b")
    append_at([trade("2.00")], DAY + dt.timedelta(minutes=5))
    drain(second)
    # Then each outbox holds every event once
    assert [[x["seq"] for x in outbox(s)] for s in subs] == [[1, 2, 3, 4, 5, 6]] * 3
    assert len(loads) == 3
    # and later batches load nothing
    append_at([trade("2.10")], DAY + dt.timedelta(minutes=6))
    drain(second)
    assert len(loads) == 3
    assert [[x["seq"] for x in outbox(s)][-1] for s in subs] == [7] * 3


def test_healthz_reports_the_engine_processes_to_staff(client, settings):
    settings.SUBSCRIPTION_ENGINE_PARTITIONS = PARTITIONS
    settings.SUBSCRIPTION_ENGINE_LEASE_SECONDS = 600  # as the engine's (``make``)
    # A key of this test's own, so that no live engine beats into it
    settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY += f":{time.monotonic_ns()}"
    client.force_login(StaffFactory())
    try:
        engine = make("a")
        engine.upkeep()
        append_at([trade("1.00")], DAY)
        engine.upkeep()  # a beat: its cursor stands at the log's end it first saw
        component = client.get("/healthz").json()["components"]["subscription_engine"]
        assert component == {
            "ok": True,
            "beating": ["a"],
            "processes": [
                {"name": "a", "partitions": PARTITIONS, "cursor": 0, "lag": 0, "subscriptions": 0}
            ],
            "unheld": 0,
        }
        # When its leases and beats run out, the partitions are unheld and the engine down
        expire("a")
        stale = time.time() - settings.WORKER_HEARTBEAT_STALE_SECONDS - 1
        redis_client().zadd(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY, {"a": stale})
        response = client.get("/healthz")
        assert response.status_code == 503
        assert response.json()["components"]["subscription_engine"] == {
            "ok": False,
            "beating": [],
            "processes": [],
            "unheld": PARTITIONS,
        }
    finally:
        redis_client().delete(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY)


def test_a_clean_stop_checkpoints_every_evaluator_and_gives_the_partitions_back():
    owner = UserFactory()
    sub = subscription_create(owner=owner, query="SELECT COUNT(price, 2) WHERE type = 'trade'")
    first = make("a")
    for minute in range(3):
        append_at([trade("1.00")], DAY + dt.timedelta(minutes=minute))
        drain(first)
    first.stop()
    sub.refresh_from_db()
    assert sub.cursor == 3 and sub.checkpoint_n == sub.last_n > 0
    assert set(owners().values()) == {""}
    # The next process goes on from there, with the window's state the first one held
    second = make("b")
    append_at([trade("1.00")], DAY + dt.timedelta(minutes=3))
    drain(second)
    assert outbox(sub) == list(run_offline(parse_query(sub.query), owner_log(owner), now=sub.now))


def test_a_killed_processs_heartbeat_row_goes_after_the_retention_a_stopped_one_stays(settings):
    """A killed process never deletes its row (a clean stop does): a live process's upkeep
    deletes those that stopped beating over ``SUBSCRIPTION_ENGINE_PROCESS_RETENTION_SECONDS``
    ago, and keeps the recently stopped ones for the staff dashboard."""
    settings.SUBSCRIPTION_ENGINE_PROCESS_RETENTION_SECONDS = 3600
    names = ["live", "killed-long-ago", "killed-lately"]
    engines = [make(name) for name in names]
    for e in engines:
        e.upkeep()
    with connection.cursor() as cursor:
        for name, ago in (("killed-long-ago", 3601), ("killed-lately", 3500)):
            cursor.execute(
                "UPDATE exchange_subscriptionengineprocess "
                "SET heartbeat_at = clock_timestamp() - make_interval(secs => %s) WHERE name = %s",
                [ago, name],
            )
    engines[0].upkeep()
    rows = SubscriptionEngineProcess.objects.order_by("name").values_list("name", flat=True)
    assert list(rows) == ["killed-lately", "live"]
    # The dashboard lists the one that stopped lately as stopped, with its age
    processes = engine_processes_lag(now=timezone.now(), partitions=[])
    assert [(p["name"], p["live"]) for p in processes] == [
        ("live", True),
        ("killed-lately", False),
    ]
    assert 3500 <= processes[1]["heartbeat_age"] < 3600


def test_a_lease_that_ran_out_unclaimed_is_still_the_processs_own():
    """A batch longer than a lease (thousands of evaluators read) loses nothing while no
    other process has claimed the partitions."""
    sub = subscription_create(owner=UserFactory(), query="SELECT price")
    a = make("a")
    drain(a)
    append_at([trade("1.10")], DAY)
    expire("a")
    a.step()
    assert [x["seq"] for x in outbox(sub)] == [1]
    assert a.held == set(range(PARTITIONS))
    a.upkeep()  # renewed
    assert set(owners().values()) == {"a"}
    assert SubscriptionPartition.objects.filter(expires_at__gt=dt.datetime.now(dt.UTC)).count() == (
        PARTITIONS
    )


def test_a_partition_taken_by_another_and_claimed_back_is_read_again_from_its_rows():
    """A process that stalled past its lease while another took its partitions, wrote
    their outboxes and died, must not go on from what it remembers: claimed back, each
    subscription is read again from its row, and nothing is written twice."""
    sub = subscription_create(owner=UserFactory(), query="SELECT price WHERE type = 'trade'")
    a = make("a")
    drain(a)
    append_at([trade("1.10")], DAY)
    drain(a)
    # a stalls; its leases run out and b takes every partition and follows the log
    expire("a")
    b = make("b")
    b.upkeep()
    assert set(owners().values()) == {"b"}
    append_at([trade("1.20")], DAY + dt.timedelta(minutes=1))
    drain(b)
    assert [x["seq"] for x in outbox(sub)] == [1, 2]
    # b dies; a wakes up, claims the partitions back and goes on
    expire("b")
    a.upkeep()
    assert set(owners().values()) == {"a"}
    append_at([trade("1.30")], DAY + dt.timedelta(minutes=2))
    drain(a)
    assert [x["seq"] for x in outbox(sub)] == [1, 2, 3]
    assert [x["n"] for x in outbox(sub)] == [1, 2, 3]


def test_partitions_claimed_while_the_log_is_quiet_have_their_cursor_written():
    """A process that takes a dead one's partitions writes their cursors at its next step
    though it has no notification to write: they do not read as behind a quiet log."""
    a = make("a")
    drain(a)
    append_at([trade("1.10"), trade("1.20")], DAY)  # a dies before it reads them
    expire("a")
    b = make("b")
    drain(b)
    end = events_log_end()
    assert set(owners().values()) == {"b"}
    assert sorted(SubscriptionPartition.objects.values_list("cursor", flat=True)) == [end] * (
        PARTITIONS
    )


T = "FILTER{type = 'trade'}(EVENTS)"
# An offender's costly forms (issue 37's probes): a join with no equality that outputs
# nothing, a pattern over a long window, a watch over every offer.
HEAVY = [
    "SELECT * FROM a AND b AND c WHERE a.price <= b.price, b.price <= c.price, "
    "c.price < a.price, a.type = 'trade', b.type = 'trade', c.type = 'trade'",
    f"SELECT a.price, b.price FROM {T} AS a NEXT{{b.price > a.price}} {T} AS b WHERE DUR <= 7d",
    "SELECT MIN(ask) FROM offers WHERE subject MATCHES 'office.>'",
]


def test_one_owners_heavy_subscriptions_do_not_delay_anothers_alerts():
    # Given an offender's 100 costly subscriptions and a victim's one alert, all live
    offender, victim = UserFactory(), UserFactory()
    rng = random.Random(37)
    log = Log([offender, victim], rng)
    log.add(5)
    heavy = [subscription_create(owner=offender, query=HEAVY[i % 3]) for i in range(100)]
    alert = subscription_create(owner=victim, query="SELECT price WHERE type = 'trade'")
    engine = make("a")
    drain(engine)
    assert engine.lanes == {}  # within the budget: everyone in the shared set
    # When 60 events come
    log.add(60)
    end = events_log_end()
    # Then the first batch commits every one of the victim's notifications
    assert engine.step() is True
    assert engine.cursor == end
    assert outbox(alert) == list(
        run_offline(parse_query(alert.query), owner_log(victim), now=alert.now)
    )
    assert len(outbox(alert)) > 20
    # while the offender did its budget's work, past it by one event's at most (100
    # members, each bounded by the work limits), and its subscriptions stand behind
    work = engine._work[offender.pk]
    assert OWNER_BUDGET <= work < OWNER_BUDGET + 100 * (1 + WORK_LIMIT)
    lane = engine.lanes[offender.pk]
    # (its 33 watches are delivered by the process's WatchHub, by dissemination, in no lane)
    assert 5 < lane.cursor < end and len(lane.subs) == 67
    # When the log is quiet, the following batches bring the lane up to the log's end,
    # and its subscriptions go back into the shared set
    batches = 1
    while engine.step():
        batches += 1
    assert batches > 1 and engine.lanes == {}
    assert all(f.live and f.lane is None for f in engine.followed.values() if not f.ended)
    # and the offender's outboxes are exactly the offline contract's
    for sub in heavy:
        expected = list(run_offline(parse_query(sub.query), owner_log(offender), now=sub.now))
        assert outbox(sub) == expected, sub.query
    assert sum(len(outbox(sub)) for sub in heavy) > 100


def test_an_owner_past_its_budget_does_no_more_work_in_that_batch(monkeypatch):
    """The bound is the budget plus the one event during which the owner passed it: its
    lane, made at that event, is not fed again in the same batch (it was, one more event
    of all its members, up to twice the overshoot), and is fed from the next batch on."""
    offender, victim = UserFactory(), UserFactory()
    log = Log([offender, victim], random.Random(37))
    log.add(5)
    heavy = [subscription_create(owner=offender, query=HEAVY[i % 3]) for i in range(100)]
    alert = subscription_create(owner=victim, query="SELECT price WHERE type = 'trade'")
    engine = make("a")
    drain(engine)
    deferred: dict[int, tuple[int, int]] = {}
    defer = engine._defer

    def deferring(owner: int, at: int) -> None:
        deferred[owner] = (at, engine._work[owner])
        defer(owner, at)

    monkeypatch.setattr(engine, "_defer", deferring)
    log.add(60)
    end = events_log_end()
    assert engine.step() is True
    assert engine.cursor == end and len(outbox(alert)) > 20
    # The offender passed the budget at event ``at``: after that event its subscriptions
    # did nothing more in this batch, and its lane stands at that event
    at, work = deferred[offender.pk]
    assert OWNER_BUDGET <= work == engine._work[offender.pk]
    assert engine.lanes[offender.pk].cursor == at < end
    # The next batches feed the lane (an event at least each) up to the log's end
    while engine.step():
        pass
    assert engine.lanes == {}
    for sub in heavy:
        expected = list(run_offline(parse_query(sub.query), owner_log(offender), now=sub.now))
        assert outbox(sub) == expected, sub.query


def test_a_lane_behind_holds_a_new_subscription_of_its_owner_until_it_catches_up():
    owner, other = UserFactory(), UserFactory()
    first = subscription_create(owner=owner, query=HEAVY[1])
    light = subscription_create(owner=other, query="SELECT price WHERE type = 'trade'")
    engine = make("a", owner_budget=3)
    drain(engine)
    for minute in range(6):
        append_at([trade(f"1.{minute}0")], DAY + dt.timedelta(minutes=minute))
    assert engine.step() is True  # past 3 units: the owner's pattern is deferred
    lane = engine.lanes[owner.pk]
    assert lane.cursor < events_log_end()
    assert [x["seq"] for x in outbox(light)] == [1, 2, 3, 4, 5, 6]  # not held back
    # A subscription registered meanwhile waits beside the lane (a joiner) until the lane
    # stands where it does; then both go back into the shared set, to be deferred again
    # whenever a batch costs them more than the budget
    second = subscription_create(owner=owner, query=HEAVY[1])
    engine.changed = True
    assert engine.step() is True
    assert second.pk in engine._joiners
    drain(engine)
    append_at([trade("2.00")], DAY + dt.timedelta(minutes=7))
    drain(engine)
    for sub in (first, second, light):
        assert outbox(sub) == list(
            run_offline(parse_query(sub.query), owner_log(sub.owner), now=sub.now)
        )
    assert sum(len(outbox(sub)) for sub in (first, second)) > 5


def test_a_lane_behind_is_checkpointed_at_its_own_cursor_and_taken_over_exactly():
    owner = UserFactory()
    subs = [subscription_create(owner=owner, query=HEAVY[1]) for _ in range(3)]
    first = make("a", owner_budget=3)
    drain(first)
    for minute in range(8):
        append_at([trade(f"1.{minute}0")], DAY + dt.timedelta(minutes=minute))
    assert first.step() is True
    # Given a lane behind the log when the process checkpoints
    first.checkpoint_events = 0
    assert first.step() is True
    lane = first.lanes[owner.pk]
    cursors = {s.pk: Subscription.objects.get(pk=s.pk).cursor for s in subs}
    assert set(cursors.values()) == {lane.cursor} and lane.cursor < events_log_end()
    # When the process dies and another takes its partitions from the checkpoints
    expire("a")
    second = make("b")
    drain(second)
    # Then each outbox is the offline contract's: nothing lost, nothing twice
    for sub in subs:
        assert outbox(sub) == list(
            run_offline(parse_query(sub.query), owner_log(owner), now=sub.now)
        )
    assert sum(len(outbox(sub)) for sub in subs) > 5


def test_a_watch_registered_on_an_empty_log_sends_its_answer_at_registration():
    # Given an empty log
    assert events_log_end() == 0
    owner = UserFactory()
    # When a form 4 watch is registered
    sub = subscription_create(
        owner=owner, query="SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils'"
    )
    # Then its first notification, at registration, holds no offer and no seq (SPEC 8.3)
    expected = [{"n": 1, "seq": None, "data": {"offer": None}}]
    assert outbox(sub) == expected
    assert list(run_offline(parse_query(sub.query), [], now=sub.now)) == expected
    # and as the log grows, the outbox stays what the offline contract gives
    running = make("a")
    log = Log([owner], random.Random(11))
    for _ in range(4):
        log.add(6)
        drain(running)
        assert outbox(sub) == list(
            run_offline(parse_query(sub.query), owner_log(owner), now=sub.now)
        )
    assert len(outbox(sub)) > 2


def test_a_hundred_composites_that_keep_every_event_write_their_state_only_at_checkpoints(
    monkeypatch,
):
    """Issue 37's probe: 100 copies of a join whose ``b`` never matches, so ``a`` keeps
    every event, had their state pickled and written on every pass. The engine holds it in
    memory and writes it only at a checkpoint, each subscription's once."""
    owner = UserFactory()
    query = "SELECT * FROM a AND b WHERE a.start_time = NOW - 7d, b.seq = 0"
    subs = [subscription_create(owner=owner, query=query) for _ in range(100)]
    ids = sorted(s.pk for s in subs)
    written: list[int] = []
    write = engine_module._write

    def counted(notes, rows):
        written.extend(r.sub_id for r in rows if r.evaluator is not None)
        return write(notes, rows)

    monkeypatch.setattr(engine_module, "_write", counted)

    def stored() -> list[tuple[int, bytes]]:
        return [
            (cursor, bytes(evaluator))
            for cursor, evaluator in Subscription.objects.order_by("pk").values_list(
                "cursor", "evaluator"
            )
        ]

    running = make("a", checkpoint_events=10)
    before = stored()
    for batch in range(6):
        # Given four more events each batch (a checkpoint is due every 10: after the 12th)
        written.clear()
        for i in range(4):
            minute = batch * 4 + i
            append_at([trade("1.00", trade_id=minute + 1)], DAY + dt.timedelta(minutes=minute))
        drain(running)
        after = stored()
        if batch % 3 == 2:
            # Then at a checkpoint each evaluator is written once, where the log ends
            assert sorted(written) == ids
            assert [cursor for cursor, _ in after] == [events_log_end()] * 100
            assert all(new != old for (_, new), (_, old) in zip(after, before, strict=True))
        else:
            # and between two checkpoints none is written
            assert written == []
            assert after == before
        before = after
    assert set(Subscription.objects.filter(pk__in=ids).values_list("state", "last_n")) == {
        ("active", 0)
    }


def test_subscriptions_registered_in_bulk_are_those_registered_one_by_one(monkeypatch):
    rng = random.Random(7)
    users = [UserFactory(username=f"bulk{i}") for i in range(2)] + [StaffFactory()]
    log = Log(users, rng)
    # Given a log with history, and the same queries of every form registered one by one
    # and in bulk (each user's in one call), at one instant each
    log.add(30)
    queries = {
        user.pk: [
            rng.choice(TEMPLATES).format(
                p=f"{rng.randint(85, 125) / 100:.2f}",
                k=rng.randint(1, 4),
                m=rng.choice((5, 20, 90)),
                f=rng.choice(("1.01", "1.05", "1.10")),
                T=T,
            )
            for _ in range(30)
        ]
        for user in users
    }
    queries[users[0].pk] += queries[users[0].pk][:5]  # the same text twice in one call
    single = [
        subscription_create(owner=user, query=text) for user in users for text in queries[user.pk]
    ]
    bulk = [
        sub
        for user in users
        for sub in service.subscriptions_create_many(owner=user, queries=queries[user.pk])
    ]
    # Then each bulk row is what one-by-one registration writes at its seam and NOW
    fields = ("owner_id", "kind", "query", "state", "reason", "last_n", "checkpoint_n")
    for one, many in zip(single, bulk, strict=True):
        many.refresh_from_db()
        assert [getattr(many, f) for f in fields] == [getattr(one, f) for f in fields]
        assert (many.seam, many.cursor) == (one.seam, one.cursor)  # no append in between
    # and once the engine has followed the log (reading the rows 13 a step), every outbox
    # is the offline contract's
    monkeypatch.setattr(engine_module, "JOIN_SLICE", 13)
    a = make("a", batch=9, chunk=7)
    a.upkeep()
    assert a.step()  # more rows to read
    assert len(a.followed) == 13
    drain(a)
    assert len(a.followed) == Subscription.objects.filter(state="active").count()
    log.add(40)
    drain(a)
    logs = {user.pk: owner_log(user) for user in users}
    for sub in single + bulk:
        sub.refresh_from_db()
        expected = list(run_offline(parse_query(sub.query), logs[sub.owner_id], now=sub.now))
        assert outbox(sub) == expected, sub.query
    assert sum(len(outbox(sub)) for sub in bulk) > 100


def test_a_bulk_registration_with_a_bad_query_or_past_the_limit_stores_nothing():
    user = UserFactory()
    good = "SELECT price WHERE type = 'trade'"
    with pytest.raises(InvalidInput) as bad:
        service.subscriptions_create_many(owner=user, queries=[good, "SELECT nonsense"])
    assert bad.value.field == "queries[1]"
    subscription_create(owner=user, query=good)
    with pytest.raises(InvalidInput) as full:
        service.subscriptions_create_many(owner=user, queries=[good] * service.MAX_ACTIVE)
    assert full.value.code == "too_many_subscriptions"
    assert Subscription.objects.filter(owner=user).count() == 1
    assert len(service.subscriptions_create_many(owner=user, queries=[good] * 99)) == 99


def test_a_checkpoint_of_many_snapshots_is_written_in_parts_and_restores_exactly(monkeypatch):
    """The checkpointed rows of one commit go in UPDATEs of at most ``ROWS_BYTES`` of
    snapshots (PostgreSQL refuses a message past 1 GB); here a bound of one byte makes every
    snapshot a part of its own, and the next process restores each as if written at once."""
    owner = UserFactory()
    queries = [f"SELECT COUNT(price, {n}) WHERE type = 'trade'" for n in (2, 3, 4)]
    subs = [subscription_create(owner=owner, query=q) for q in queries]
    statements: list[int] = []
    write = engine_module._write

    def counted(notes, rows):
        statements.append(len(engine_module.row_parts(rows)))
        return write(notes, rows)

    monkeypatch.setattr(engine_module, "ROWS_BYTES", 1)
    monkeypatch.setattr(engine_module, "_write", counted)
    first = make("a")
    for minute in range(3):
        append_at([trade("1.00")], DAY + dt.timedelta(minutes=minute))
        drain(first)
    first.stop()
    assert max(statements) == 3  # the stop's checkpoint: one UPDATE per snapshot
    for sub in subs:
        sub.refresh_from_db()
        assert sub.cursor == 3 and sub.checkpoint_n == sub.last_n
    assert [sub.last_n > 0 for sub in subs] == [True, True, False]  # a window of 4: not yet
    second = make("b")
    append_at([trade("1.00")], DAY + dt.timedelta(minutes=3))
    drain(second)
    for sub in subs:
        assert outbox(sub) == list(
            run_offline(parse_query(sub.query), owner_log(owner), now=sub.now)
        )


def test_rows_are_cut_by_their_snapshots_bytes_in_order():
    Row = engine_module.Row
    rows = [Row(1, 1, evaluator=b"x" * 40), Row(2, 1, evaluator=b"x" * 70), Row(3, 1)]
    rows += [Row(4, 1, state="done", evaluator=b"x" * 500), Row(5, 1, evaluator=b"x" * 30)]
    parts = engine_module.row_parts(rows, limit=100)
    # 40 + 70 passes 100: a new part; a done row keeps no snapshot (0 bytes)
    assert [[r.sub_id for r in part] for part in parts] == [[1], [2, 3, 4, 5]]
    assert engine_module.row_parts([Row(1, 1, evaluator=b"x" * 500)], limit=100) == [
        [Row(1, 1, evaluator=b"x" * 500)]
    ]
    assert engine_module.row_parts([]) == []


def test_notes_go_as_one_json_array_cut_by_their_bytes_in_order():
    notes = engine_module.Notes()
    notes.add(7, 1, [(10, {"price": "1.10"}), (None, {"error": "x" * 30})])
    notes.add(9, 4, [(12, [1, 2])])
    # Within the limit: one part, the data one array, the other columns array literals
    [whole] = engine_module.note_parts(notes)
    assert whole[:3] == ["{7,7,9}", "{1,2,4}", "{10,NULL,12}"]
    assert json.loads(whole[3]) == [{"price": "1.10"}, {"error": "x" * 30}, [1, 2]]
    # Past it, cut where the next note's data would pass it (17 + 44 > 50), in order
    parts = engine_module.note_parts(notes, limit=50)
    assert [part[:3] for part in parts] == [["{7}", "{1}", "{10}"], ["{7,9}", "{2,4}", "{NULL,12}"]]
    assert [json.loads(part[3]) for part in parts] == [
        [{"price": "1.10"}],
        [{"error": "x" * 30}, [1, 2]],
    ]
    assert engine_module.note_parts(engine_module.Notes()) == []


def test_int_arrays_are_read_by_postgresql_as_the_lists_they_come_from():
    """``int_array``'s literals, bound on the server and cast as the statements bind and
    cast them (a psycopg cursor, as ``_write``'s), are the lists again: what psycopg's
    binary dump of the lists gave the statements before."""
    values = [[], [1], [0, -5, 2**63 - 1, -(2**63)], [None], [3, None, 4]]
    connection.ensure_connection()
    cursor = psycopg.Cursor(connection.connection)
    for some in values:
        cursor.execute("SELECT %s::bigint[], %b::bigint[]", [engine_module.int_array(some), some])
        assert cursor.fetchone() == (some, some)
    ints = [2**31 - 1, -(2**31), 0]
    cursor.execute("SELECT %s::int[]", [engine_module.int_array(ints)])
    assert cursor.fetchone() == (ints,)


def test_watches_catching_up_together_hold_one_book_and_checkpoint_no_copy_of_it(monkeypatch):
    """Issue 35: each form 4 joiner replayed the log's offers into a book of its own (1,000
    watches over 10,000 offers: gigabytes per process) and its checkpoints stored that copy
    (past PostgreSQL's 1 GB message). Joiners that catch up together follow one book, and a
    joiner's row keeps its checkpoint rather than a copy of the book."""
    owner = UserFactory()
    posted = [
        ("offer_posted", PENCILS, None,
         {"offer": i, "version": 1, "ask": f"{0.80 + (i * 7 % 50) / 100:.2f}",
          "quantity_max": str(i * 10), "constraint": "lot = 1"})
        for i in range(1, 301)
    ]  # fmt: skip
    append_at(posted, DAY)
    queries = [
        f"SELECT {f}(ask) FROM offers WHERE subject = '{PENCILS}' AND quantity_max "
        f"BETWEEN {lo * 100} AND {lo * 100 + 900}"
        for lo in range(20)
        for f in ("MIN", "MAX")
    ] + [f"SELECT ask FROM offers WHERE offer = {i}" for i in (1, 150, 300)]
    subs = service.subscriptions_create_many(owner=owner, queries=queries)
    snapshots: list[int] = []
    write = engine_module._write

    def counted(notes, rows):
        snapshots.extend(len(r.evaluator) for r in rows if r.evaluator is not None)
        return write(notes, rows)

    monkeypatch.setattr(engine_module, "_write", counted)
    running = make("a", batch=100, chunk=100, checkpoint_events=1)
    # When the engine has fed them the first 100 events of their history (a checkpoint due)
    assert running.step()
    joiners = list(running._joiners.values())
    assert len(joiners) == len(queries) and {f.member.cursor for f in joiners} == {100}
    # Then they hold one book of open offers between them, not one each
    books = {id(f.member.sub.engine.offers) for f in joiners}
    assert len(books) == 1
    assert len(joiners[0].member.sub.engine.offers.offers) == 100
    # and the checkpoint wrote no copy of it (each would hold 100 offers)
    assert snapshots == []
    # and once live (in the hub, whose book is stored once), each snapshot is small
    drain(running)
    assert len(running.watches) == len(queries) and not running._joiners
    flow = [("best_offer", PENCILS, None, {"offer": i, "value": "1.10", "matching_bids": 1})
            for i in range(3, 300, 7)]  # fmt: skip
    flow += [("offer_withdrawn", PENCILS, None, {"offer": i}) for i in range(5, 300, 11)]
    flow += [("offer_amended", PENCILS, None,
              {"offer": i, "version": 2, "ask": "0.10", "quantity_max": str(i * 10),
               "constraint": "lot = 1"})
             for i in range(10, 300, 20)]  # fmt: skip
    append_at(flow, DAY + dt.timedelta(minutes=1))
    drain(running)
    assert snapshots and max(snapshots) < 1000
    # and every outbox is the offline contract's
    log = owner_log(owner)
    for sub in subs:
        assert outbox(sub) == list(run_offline(parse_query(sub.query), log, now=sub.now))
    assert sum(len(outbox(sub)) for sub in subs) > len(queries) + 15  # changes after registration


def test_watches_restored_in_their_history_with_offers_of_their_own_hold_one_book():
    """A checkpoint of before the joiners' one book holds its own copy of the open offers:
    the watches restored at one cursor hold one of them between them, and go on exactly."""
    owner = UserFactory()
    append_at(
        [("offer_posted", PENCILS, None,
          {"offer": i, "version": 1, "ask": f"1.{i:02d}", "constraint": "lot = 1"})
         for i in range(1, 41)],
        DAY,
    )  # fmt: skip
    queries = [
        f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}' AND offer BETWEEN {i} AND 40"
        for i in range(1, 6)
    ]
    subs = service.subscriptions_create_many(owner=owner, queries=queries)
    events = owner_log(owner)
    for sub in subs:  # each checkpointed alone at 30, as a joiner was before
        evaluator = Evaluator(parse_query(sub.query), now=sub.now)
        for raw in events[:30]:
            evaluator.push(raw, live=False)
        engine = evaluator.engine
        assert len(engine.offers.offers) == 30 and not engine.registered
        Subscription.objects.filter(pk=sub.pk).update(
            cursor=30, evaluator=service.evaluator_dump(evaluator), checkpoint_n=0
        )
    running = make("a")
    running.upkeep()
    running._rescan()
    joiners = list(running._joiners.values())
    assert len(joiners) == len(subs) and {f.member.cursor for f in joiners} == {30}
    assert len({id(f.member.sub.engine.offers) for f in joiners}) == 1
    drain(running)
    append_at([("offer_withdrawn", PENCILS, None, {"offer": 3})], DAY + dt.timedelta(minutes=1))
    drain(running)
    log = owner_log(owner)
    for sub in subs:
        assert outbox(sub) == list(run_offline(parse_query(sub.query), log, now=sub.now))
    assert [len(outbox(sub)) for sub in subs] == [1, 1, 2, 1, 1]  # offer 3 was the third's
