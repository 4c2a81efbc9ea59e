"""Many live subscriptions advanced in one pass over the log (``services/subscription_pass``):
every outbox is exactly what the offline contract (``subscription_run``'s evaluator) gives
on the log as its owner sees it, for hundreds of subscriptions of every form, owners and
staff, history and live parts, registered at different moments and advanced in stretches
of different sizes; a failure suspends one subscription only; a row another worker holds is
left to it."""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict

import psycopg
import pytest
from django.db import connection

from exchange.models import Subscription
from exchange.services import events as event_service
from exchange.services import subscription_pass
from exchange.services import subscriptions as service
from exchange.services.subscription_pass import subscriptions_advance_together
from exchange.services.subscriptions import subscription_create
from exchange.subscription_tasks import subscriptions_advance_task
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions import parse_query, run_offline
from tests.factories import StaffFactory, UserFactory
from tests.subscriptions.log import DAY, Log, append_at, outbox, owner_log, register, trade

pytestmark = pytest.mark.django_db


def drain(chunk: int) -> None:
    while subscriptions_advance_together(chunk=chunk):
        pass


@pytest.fixture(autouse=True)
def loaded(monkeypatch):
    """Each test starts as a fresh worker (nothing kept); the stored states it loads."""
    monkeypatch.setattr(subscription_pass, "_kept", {})
    loads: list[int] = []
    load = subscription_pass._state_load

    def counted(raw):
        loads.append(1)
        return load(raw)

    monkeypatch.setattr(subscription_pass, "_state_load", counted)
    return loads


@pytest.fixture(autouse=True)
def no_advance_requests(monkeypatch):
    """The tests run the passes themselves: no request reaches a worker of a live stack."""
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)


@pytest.mark.django_db(transaction=True)  # the passes commit: their evaluators are kept
def test_hundreds_of_subscriptions_of_every_form_get_what_the_offline_contract_gives(loaded):
    rng = random.Random(19)
    users = [UserFactory(username=f"trader{i}") for i in range(3)] + [StaffFactory()]
    log = Log(users, rng)
    # Given a log, subscriptions registered on it, passes in small stretches between
    log.add(40)
    subs = register(users, rng, 150)
    log.add(15)
    drain(chunk=7)
    # more subscriptions while the log grows, some passes leaving them at different places
    subs += register(users, rng, 150)
    for size in (5, 9, 13):
        log.add(size)
        subscriptions_advance_together(chunk=size + 3)
    subs += register(users, rng, 20)
    log.add(25)
    drain(chunk=11)

    # Then every outbox is what the offline contract gives on its owner's log
    logs = {user.pk: owner_log(user) for user in users}
    kinds: dict[str, int] = defaultdict(int)
    states: dict[str, int] = defaultdict(int)
    for sub in subs:
        expected = list(run_offline(parse_query(sub.query), logs[sub.owner_id], now=sub.now))
        assert outbox(sub) == expected, sub.query
        sub.refresh_from_db()
        kinds[sub.kind] += 1
        states[sub.state] += 1
        if sub.state == "active":
            assert sub.cursor == log.minute  # fed the whole log (one event a minute)
    # and the mix held every form and both ends of a subscription's life
    assert set(kinds) == {"events", "composite", "pattern", "state"}
    assert states["active"] and states["done"]
    notified = sum(len(outbox(sub)) for sub in subs)
    assert notified > 1000
    # and each stored state was loaded once at most (its first pass): the passes after it
    # fed the evaluator kept in memory
    assert 0 < len(loaded) <= len(subs)


def test_a_failing_subscription_is_suspended_and_the_others_in_the_pass_go_on():
    owner = UserFactory()
    healthy = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    broken = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    Subscription.objects.filter(pk=broken.pk).update(evaluator=b"not a pickle")
    append_at([trade("1.10")], DAY)
    append_at([trade("1.20")], DAY + dt.timedelta(minutes=1))

    assert subscriptions_advance_together() is False

    broken.refresh_from_db()
    assert (broken.state, broken.reason, broken.evaluator, broken.cursor) == (
        "suspended",
        "error",
        None,
        2,
    )
    [line] = outbox(broken)
    assert line["n"] == 1 and line["seq"] == 0
    assert line["data"]["error"] == "runtime_error"
    assert line["data"]["message"].startswith(
        "the subscription failed while evaluating: SnapshotError: not a subscription snapshot"
    )
    assert [line["seq"] for line in outbox(healthy)] == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_a_row_another_worker_holds_is_left_to_it_and_taken_once_free():
    held = subscription_create(owner=UserFactory(), query="SELECT price")
    free = subscription_create(owner=UserFactory(), query="SELECT price")
    append_at([trade("1.00")], DAY)
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    other = psycopg.connect(**params)
    try:
        other.execute("SELECT id FROM exchange_subscription WHERE id = %s FOR UPDATE", [held.pk])
        assert subscriptions_advance_together() is False
        assert outbox(held) == [] and [x["seq"] for x in outbox(free)] == [1]
        held.refresh_from_db()
        assert (held.cursor, held.last_n) == (0, 0)
        other.rollback()
        assert subscriptions_advance_task() is False  # the task runs the pass
        assert [x["seq"] for x in outbox(held)] == [1]
    finally:
        other.close()


def test_a_subscription_that_raises_on_a_live_event_is_suspended_there_alone(monkeypatch):
    # Given two live subscriptions, one of which raises on the event with seq 2
    owner = UserFactory()
    failing = subscription_create(owner=owner, query="SELECT price WHERE price > 1.05")
    healthy = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    original = Evaluator.push
    broken = parse_query(failing.query)

    def push(self, event, *, live):
        if event.seq == 2 and self.query == broken:
            raise ZeroDivisionError("division by zero")
        return original(self, event, live=live)

    monkeypatch.setattr(Evaluator, "push", push)
    for minute, price in enumerate(("1.10", "1.20", "1.30")):
        append_at([trade(price)], DAY + dt.timedelta(minutes=minute))

    # When one pass runs
    assert subscriptions_advance_together() is False

    # Then the failing one sent what it had, then the error, and is suspended
    failing.refresh_from_db()
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
    # and the other received every event
    assert [line["seq"] for line in outbox(healthy)] == [1, 2, 3]


@pytest.mark.django_db(transaction=True)
def test_a_second_process_taking_over_mid_way_leaves_each_notification_once_in_order(
    monkeypatch, loaded
):
    """Two workers' memories (``_kept``) take turns on the same subscriptions: each pass
    finds the other's writes newer than what it kept, reads the stored state, and the
    outboxes stay exactly the offline contract's."""
    rng = random.Random(21)
    users = [UserFactory(username=f"trader{i}") for i in range(2)] + [StaffFactory()]
    log = Log(users, rng)
    log.add(20)
    subs = register(users, rng, 60)
    first, second = {}, {}
    # Given worker one's passes, which keep the evaluators it fed
    monkeypatch.setattr(subscription_pass, "_kept", first)
    log.add(6)
    drain(chunk=4)
    kept = dict(first)
    assert kept
    # when worker two takes over mid-way (worker one's memory is now stale)
    monkeypatch.setattr(subscription_pass, "_kept", second)
    log.add(7)
    drain(chunk=5)
    # and worker one comes back with what it kept
    monkeypatch.setattr(subscription_pass, "_kept", first)
    loaded.clear()
    log.add(9)
    drain(chunk=3)

    # Then worker one read every one it had kept from the stored state (none was current)
    active = Subscription.objects.filter(state="active", pk__in=kept)
    assert len(loaded) >= active.count() > 0
    # and each worker's own next pass uses its memory: nothing more is loaded
    loaded.clear()
    log.add(4)
    drain(chunk=50)
    assert loaded == []
    logs = {user.pk: owner_log(user) for user in users}
    for sub in subs:
        expected = list(run_offline(parse_query(sub.query), logs[sub.owner_id], now=sub.now))
        assert outbox(sub) == expected, sub.query
