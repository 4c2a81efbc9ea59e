"""The subscription engine as processes (issue 35): two ``manage.py subscription_engine``
processes share the partitions while the log grows and subscriptions register; one is
killed with SIGKILL in the middle; the other takes its partitions over when their leases
expire. Every outbox must then be exactly what ``run_offline`` gives over its owner's
log: nothing lost, nothing written twice."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest
from django.db import connection

from exchange.models import SubscriptionPartition
from exchange.selectors.events import events_log_end
from exchange.subscription_engine.priority import AUTOGROUP, autogroup_nice
from matching.subscriptions import parse_query, run_offline
from tests.conftest import ARTIFACTS, live_engines_stop
from tests.factories import StaffFactory, UserFactory
from tests.livestack import LiveStack
from tests.subscriptions.log import Log, outbox, owner_log, register

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]

PARTITIONS = 8
# Generous: the machine is shared; the asserts are on state, not time.
DEADLINE = 180


@pytest.fixture
def engines(settings):
    settings.SUBSCRIPTION_ENGINE_PARTITIONS = PARTITIONS
    live_engines_stop()  # the session stack's, if it runs: these two are the only ones
    stack = LiveStack(
        database_name=connection.settings_dict["NAME"],
        log_dir=ARTIFACTS / "logs" / f"engine-{os.getpid()}",
    )
    stack.env.update(
        SUBSCRIPTION_ENGINE_PARTITIONS=str(PARTITIONS),
        SUBSCRIPTION_ENGINE_LEASE_SECONDS="2",
        SUBSCRIPTION_ENGINE_CHECKPOINT_EVENTS="25",
        SUBSCRIPTION_ENGINE_NICE="19",  # (not the default: the setting reaches the processes)
    )
    try:
        yield stack
    finally:
        stack.stop()


def wait_for(condition, what: str, stack: LiveStack) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    logs = "\n".join(p.tail() for p in stack.processes.values())
    rows = list(
        SubscriptionPartition.objects.order_by("partition").values_list(
            "partition", "owner", "cursor"
        )
    )
    raise AssertionError(f"{what} did not happen (partitions {rows}):\n{logs}")


def thread_nices(pid: int) -> list[int]:
    """The nice of each thread of process ``pid`` (``/proc/<pid>/task/<tid>/stat``'s 19th field)."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            out.append(int(f.read().rsplit(")", 1)[1].split()[16]))
    return out


def partitions():
    """The rows of the partitions these engines share. Rows of more partitions may be left
    by the session stack's engines (16 partitions) between the last test's flush and their
    stop; engines sharing fewer ignore them (``leases``: ``partition < count``)."""
    return SubscriptionPartition.objects.filter(partition__lt=PARTITIONS)


def test_two_engines_and_a_kill_leave_every_outbox_equal_to_run_offline(engines):
    rng = random.Random(35)
    users = [UserFactory(username=f"trader{i}") for i in range(3)] + [StaffFactory()]
    log = Log(users, rng)
    log.add(30)
    subs = register(users, rng, 60)
    first, second = engines.start_subscription_engines(2)
    held = lambda: partitions().exclude(owner="").count()  # noqa: E731 - read again at each wait, named for the asserts
    wait_for(lambda: held() == PARTITIONS, "the partitions being claimed", engines)
    # At the nice asked for, threads and autogroup alike, once each has started its runner:
    # the partitions' rows may still be held by the session stack's engines, whose owners
    # bear the same names, while these are importing Django at the nice they started with.
    wait_for(
        lambda: all(set(thread_nices(e.pid)) == {19} for e in (first, second)),
        "both engines at nice 19",
        engines,
    )
    for engine in (first, second):
        assert autogroup_nice(engine.pid) == (19 if os.path.exists(AUTOGROUP) else None)
    for _ in range(4):
        log.add(10)
        subs += register(users, rng, 10)
        time.sleep(0.3)
    # Kill one process without warning, mid-stream
    os.killpg(first.pid, signal.SIGKILL)
    for _ in range(4):
        log.add(10)
        subs += register(users, rng, 5)
        time.sleep(0.3)
    end = events_log_end()
    wait_for(
        lambda: (
            partitions().filter(cursor__gte=end).count() == PARTITIONS
            and set(partitions().values_list("owner", flat=True)) == {f"engine1-{os.getpid()}"}
        ),
        "the survivor taking every partition and reaching the log's end",
        engines,
    )
    logs = {user.pk: owner_log(user) for user in users}

    def expected(sub):
        return list(run_offline(parse_query(sub.query), logs[sub.owner_id], now=sub.now))

    wait_for(lambda: all(outbox(sub) == expected(sub) for sub in subs), "every outbox", engines)
    assert second.alive()
    assert sum(len(outbox(sub)) for sub in subs) > 300
