"""Checkpoints the engine cannot load as they stand (issue 35): a snapshot of another
version, or a pickle of the releases before snapshots, is rebuilt by replaying the log
from the subscription's start, and every outbox still holds what the offline contract
gives, each notification once."""

from __future__ import annotations

import functools
import pickle
import random

import pytest

from exchange.models import Subscription
from exchange.subscription_engine.watches import Books
from matching.subscriptions.run.snapshot import MAGIC, VERSION, snapshot_load
from tests.factories import StaffFactory, UserFactory
from tests.subscriptions.log import Log, offline, outbox, rebuilds_counted, register
from tests.subscriptions.test_engine import PARTITIONS, drain, expire, make, no_wake_ups  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


def test_checkpoints_of_another_version_or_pickled_are_rebuilt_by_replay(monkeypatch):
    rng = random.Random(350)
    users = [UserFactory(username=f"trader{i}") for i in range(3)] + [StaffFactory()]
    log = Log(users, rng)
    log.add(30)
    subs = register(users, rng, 60)  # every form, with history and without
    first = make("a", batch=6, chunk=9, checkpoint_events=10)
    log.add(12)
    drain(first)
    first.checkpoint_events = 10**9
    log.add(5)
    first.step()  # a batch without a checkpoint: some outboxes are ahead of theirs
    # Given the active rows' checkpoints as an older release, or a newer one, left them
    active = list(Subscription.objects.filter(state="active").order_by("id"))
    stale: dict[int, bytes] = {}
    for i, row in enumerate(active):
        assert row.evaluator is not None
        body = bytes(row.evaluator)[len(MAGIC) + 2 :]
        if i % 3 == 0:
            stale[row.pk] = MAGIC + (0).to_bytes(2, "big") + body  # no upgrade from 0
        elif i % 3 == 1:
            stale[row.pk] = MAGIC + (VERSION + 1).to_bytes(2, "big") + body
        else:  # what pickle left (a pattern's closures needed cloudpickle: no longer read)
            stale[row.pk] = pickle.dumps({"query": row.query, "cursor": row.cursor})
    for sub_id, raw in stale.items():
        Subscription.objects.filter(pk=sub_id).update(evaluator=raw)
    assert sum(r.last_n > r.checkpoint_n for r in active) > 0
    assert sum(r.last_n > 0 for r in active) > 10
    # When the process dies and another restores them while the log grows
    expire("a")
    rebuilt = rebuilds_counted(monkeypatch)
    second = make("b", batch=5, chunk=7, checkpoint_events=3)
    log.add(10)
    drain(second)
    log.add(10)
    drain(second)
    # Then each was rebuilt once, and every outbox is the offline contract's, each line once
    assert len(rebuilt) == len(stale)
    for sub in subs:
        assert outbox(sub) == offline(sub), sub.query
    # and the checkpoints written since are snapshots of this version
    # (a watch's without its offers: the book stored with its partition at its cursor)
    second.stop()
    books = Books(set(range(PARTITIONS)), PARTITIONS)
    for row in Subscription.objects.filter(pk__in=stale, state="active"):
        assert bytes(row.evaluator)[: len(MAGIC) + 2] == MAGIC + VERSION.to_bytes(2, "big")
        snapshot_load(row.evaluator, offers=functools.partial(books.at, row.pk, row.cursor))
        assert row.checkpoint_n == row.last_n
