"""A step longer than a lease keeps its partitions: the ``LeaseKeeper`` thread renews them
while it runs (issue 35 item 7: at 100,000 subscriptions a batch outlasted the default
5 s lease and the other engine took its partitions in turn)."""

from __future__ import annotations

import threading

import pytest

from exchange.models import SubscriptionPartition
from exchange.subscription_engine.engine import Engine
from exchange.subscription_engine.leases import LeaseKeeper
from tests.conftest import live_engines_stop

# the keeper's own connection must see the partitions' rows: committed, not a test's
# transaction
pytestmark = pytest.mark.django_db(transaction=True)

PARTITIONS = 4
LEASE = 1.0  # seconds: the keeper renews every third of it
GUARD = 60.0  # seconds a stuck test waits before it fails (not a limit on the code)


@pytest.mark.parametrize("kept", [True, False])
def test_a_step_longer_than_a_lease_keeps_its_partitions(monkeypatch, kept):
    live_engines_stop()
    a = Engine("keeper-a", partitions=PARTITIONS, lease_seconds=LEASE)
    b = Engine("keeper-b", partitions=PARTITIONS, lease_seconds=LEASE)
    a.step()  # claims every partition (the only live process)
    assert a.held == set(range(PARTITIONS))
    keeper = LeaseKeeper(a.renew, LEASE / 3)
    elapsed = threading.Event()
    taken: list[set[int]] = []
    feed = a._feed

    def long_feed(*args, **kwargs):
        # When a's step lasts longer than a lease (four renewals' intervals; without the
        # keeper, the same span measured by a timer)
        if kept:
            while keeper.renewals < 4 and not elapsed.wait(0.05):
                pass
        else:
            elapsed.wait(4 * LEASE / 3)
        # and b looks for partitions meanwhile
        b.upkeep()
        taken.append(set(b.held))
        return feed(*args, **kwargs)

    monkeypatch.setattr(a, "_feed", long_feed)
    timer = threading.Timer(GUARD, elapsed.set)  # a keeper that never renews fails, not hangs
    timer.start()
    try:
        if kept:
            with keeper, keeper.busy():
                a.step()
        else:
            a.step()
    finally:
        timer.cancel()
    owners = dict(SubscriptionPartition.objects.values_list("partition", "owner"))
    if kept:
        # Then b found none of them free: they are still a's
        assert keeper.renewals >= 4
        assert taken == [set()]
        assert owners == dict.fromkeys(range(PARTITIONS), "keeper-a")
    else:
        # Without the keeper, b takes them all once the leases expire: a's step lost them
        assert taken == [set(range(PARTITIONS))]
        assert owners == dict.fromkeys(range(PARTITIONS), "keeper-b")
    a.stop()
    b.stop()
