"""Markets partitioned across matching workers on the real stack (SPEC 9, "Scale-out").

The same history of orders over four markets (two in each of the test settings' two
partitions) runs once on the stack's one matching worker (both partitions) and once on two
workers (one partition each), the second time with each worker killed with SIGKILL in the
middle of a cycle and started again. Both give the same best-offer table and the same
notifications, in the same order for each recipient and market; each notification reaches its
recipient's socket once, in order; the book verifies clean; and while one partition's worker
is stuck or dead, the other partition's markets go on matching.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal

import psycopg
import pytest
from django.conf import settings

from exchange.models import BestOffer, Bid, Notification, Offer, OrderChange
from exchange.services.matching import CYCLE_LOCK
from exchange.services.orders import bid_place, bid_withdraw, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import UserFactory, pencils_market
from tests.livestack import LiveStack
from tests.stack.test_faults import beat, dsn, resume_all, token  # noqa: F401 - beat: a fixture
from tests.stack.test_matching_worker import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

MARKETS = 4
ROUNDS = 5
BUYERS = 3


class History:
    """One run of the history: its markets, orders and people, and how to name them so that
    two runs compare (``bid`` ids differ between runs, their place in the history not)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.markets = [pencils_market(subject=f"office.{tag}.m{i}") for i in range(MARKETS)]
        # Consecutive ids: the markets alternate between the two partitions.
        assert [m.pk % 2 for m in self.markets] == [
            self.markets[0].pk % 2,
            1 - self.markets[0].pk % 2,
        ] * 2
        self.seller = UserFactory(username=f"{tag}-seller")
        self.buyers = [UserFactory(username=f"{tag}-b{j}") for j in range(BUYERS)]
        self.names: dict[int, str] = {self.seller.pk: "seller"}
        self.names.update({b.pk: f"b{j}" for j, b in enumerate(self.buyers)})
        self.offers: dict[int, tuple[int, int]] = {}  # offer id: (market, offer) in the history
        self.bids: dict[int, tuple[int, int]] = {}  # bid id: (market, round) in the history
        self.placed: dict[tuple[int, int], Bid] = {}

    def open(self) -> None:
        for i, market in enumerate(self.markets):
            for k, lots in enumerate(("1 AND 50", "51 AND 100")):
                offer = offer_publish(
                    seller=self.seller,
                    market=market,
                    constraint=f"lot BETWEEN {lots} AND price >= 1.00",
                )
                self.offers[offer.pk] = (i, k)

    def change(self, round_: int, i: int) -> None:
        """Round ``round_``'s change of market ``i``: a bid, and in round 3 the withdrawal
        of the market's bid of round 1 instead."""
        market = self.markets[i]
        if round_ == 3:
            bid = self.placed[(i, 1)]
            bid_withdraw(buyer=bid.buyer, bid_id=bid.pk)
            return
        buyer = self.buyers[(round_ + i) % BUYERS]
        lot = 10 + (round_ * 17 + i * 5) % 80
        price = Decimal("1.00") + Decimal((round_ * 37 + i * 11) % 9 + 1) * Decimal("0.05")
        bid = bid_place(buyer=buyer, market=market, constraint=f"lot = {lot} AND price <= {price}")
        self.bids[bid.pk] = (i, round_)
        self.placed[(i, round_)] = bid

    def table(self) -> dict[tuple[int, int], tuple]:
        rows = BestOffer.objects.filter(offer__market__in=self.markets)
        return {
            self.offers[r.offer_id]: (self.bids.get(r.bid_id), r.value, r.matching_bids)
            for r in rows
        }

    def notifications(self) -> dict[tuple[str, int], list[tuple]]:
        """Each (recipient, market)'s notifications in id order, named by the history."""
        found: dict[tuple[str, int], list[tuple]] = {}
        rows = Notification.objects.filter(market__in=self.markets).order_by("id")
        index = {m.pk: i for i, m in enumerate(self.markets)}
        for n in rows:
            who = "market" if n.recipient_id is None else self.names[n.recipient_id]
            data = n.data
            found.setdefault((who, index[n.market_id]), []).append(
                (
                    n.type,
                    self.offers.get(n.offer_id),
                    self.bids.get(data.get("bid")),
                    data.get("best_value"),
                    data.get("previous_value"),
                    data.get("status"),
                )
            )
        return found

    def pending(self, markets: list[int]) -> int:
        changed = OrderChange.objects.filter(processed_at=None)
        ids = {self.markets[i].pk for i in markets}
        offers = set(Offer.objects.filter(market__in=ids).values_list("id", flat=True))
        bids = set(Bid.objects.filter(market__in=ids).values_list("id", flat=True))
        return sum(
            1
            for side, order in changed.values_list("side", "order_id")
            if order in (offers if side == "offer" else bids)
        )


def settled() -> bool:
    return not OrderChange.objects.filter(processed_at=None).exists()


@contextmanager
def cycles_held() -> Iterator[None]:
    """No cycle starts inside the block (the cycle lock held exclusively from outside), so
    each market's changes of a round go into one batch, however many workers there are."""
    with psycopg.connect(dsn(), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [CYCLE_LOCK])
        try:
            yield
        finally:
            holder.execute("SELECT pg_advisory_unlock(%s)", [CYCLE_LOCK])


def cycle_waiting() -> bool:
    """A cycle waits for a best-offer row (from a connection of its own: inside a
    transaction pg_stat_activity is a snapshot)."""
    with psycopg.connect(dsn(), autocommit=True) as watcher:
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query ILIKE '%%exchange_bestoffer%%'"
        ).fetchone()
    assert row is not None
    return row[0] > 0


def hold_market(history: History, market: int) -> psycopg.Connection:
    """A connection holding the best-offer rows of ``market``'s offers: the next cycle of
    its partition stops there, in the middle of its transaction (after its store writes and
    matches)."""
    blocker = psycopg.connect(dsn())
    offers = sorted(pk for pk, (i, _) in history.offers.items() if i == market)
    blocker.execute(
        "SELECT 1 FROM exchange_bestoffer WHERE offer_id = ANY(%s) ORDER BY 1 FOR UPDATE",
        [offers],
    )
    return blocker


def run(stack: LiveStack, history: History, kills: dict[int, int], workers: dict[int, str]) -> None:
    """The history, round after round, each round's changes in one batch per market; a
    round is done when every change is processed. In round ``r`` of ``kills`` the cycle of
    market ``kills[r]``'s partition is stopped mid-transaction; the other partition's
    markets must be processed meanwhile; then that partition's worker is killed with
    SIGKILL, the rows released and the worker started again (its partition's changes are
    taken again from the start, by the redelivered task or the sweep)."""
    with cycles_held():
        history.open()
    wait_for(settled, "the offers' cycles")
    for round_ in range(ROUNDS):
        blocker = None
        with cycles_held():
            for i in range(MARKETS):
                history.change(round_, i)
            if round_ in kills:
                blocker = hold_market(history, kills[round_])
        if blocker is not None:
            partition = history.markets[kills[round_]].pk % 2
            mine = [i for i in range(MARKETS) if history.markets[i].pk % 2 == partition]
            others = [i for i in range(MARKETS) if i not in mine]
            try:
                wait_for(cycle_waiting, "the cycle to block on the best-offer rows")
                wait_for(lambda o=others: history.pending(o) == 0, "the other partition's cycles")
                assert history.pending(mine) == len(mine)  # stuck, not lost
                stack.processes[workers[partition]].kill()
            finally:
                blocker.rollback()
                blocker.close()
            assert history.pending(mine) == len(mine)  # the killed cycle rolled back
            stack.start_worker(
                role="matching", concurrency=1, partitions=str(partition), name=workers[partition]
            )
        wait_for(settled, f"round {round_}'s cycles", timeout=90)


def test_two_matching_workers_give_what_one_gives_and_survive_kill_9_of_either(live_stack, beat):  # noqa: F811
    assert settings.MATCHING_PARTITIONS == 2
    # One worker on both partitions (the stack's own, as ops/run starts it)
    one = History("one")
    run(live_stack, one, {}, {})

    # Two workers, one partition each; in round 1 the first market's partition's worker is
    # killed mid-cycle, in round 4 the other one's
    live_stack.processes.pop("matching").stop()
    workers = {0: "matching_p0", 1: "matching_p1"}
    # The two workers start side by side, and stop so: a worker's start (seconds of imports,
    # then until it answers a ping) and its stop are mostly waiting.
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            for started in [
                pool.submit(
                    live_stack.start_worker,
                    role="matching",
                    concurrency=1,
                    partitions=str(partition),
                    name=name,
                )
                for partition, name in workers.items()
            ]:
                started.result()
            two = History("two")
            run(live_stack, two, {1: 0, 4: 1}, workers)
        finally:
            stopping = [
                pool.submit(live_stack.processes.pop(name).stop)
                for name in workers.values()
                if name in live_stack.processes
            ]
            for stopped in stopping:
                stopped.result()
            live_stack.start_worker(role="matching", concurrency=1)

    assert len(one.table()) == MARKETS * 2
    assert any(bid is not None for bid, _, _ in one.table().values())
    assert two.table() == one.table()
    assert sum(len(v) for v in one.notifications().values()) > MARKETS * ROUNDS
    assert two.notifications() == one.notifications()
    wait_for(lambda: not Notification.objects.filter(delivered_at=None).exists(), "delivery")
    assert best_offers_verify().clean

    # Each buyer's socket gets each of its notifications once, in id order.
    for buyer in two.buyers:
        stored = list(
            Notification.objects.filter(recipient=buyer).order_by("id").values_list("id", flat=True)
        )
        frames = asyncio.run(resume_all(live_stack.ws_url, token(buyer), len(stored)))
        assert [f["seq"] for f in frames] == stored
