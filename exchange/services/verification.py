"""Recomputing the best-offer table from scratch to check it (SPEC 5.3).

A service, not a selector: it takes the cycle lock and creates a scratch store, although it
rolls everything back and changes nothing.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from exchange import engine
from exchange.models import BestOffer, Bid, Offer, OfferBidMatch, OrderChange
from exchange.services.best import NO_BEST
from exchange.services.matching import candidates_of, cycle_lock

# A book of fewer open offers and active bids than this is matched in a scratch store
# without its secondary indexes and planner statistics: the answers are the same, and for
# a few hundred rows the indexes and ANALYZE cost more than they save (the store's some
# fifty index statements were a third of a small book's verification). A larger book gets
# them, built over its rows, which is cheaper than maintaining them row by row.
SMALL_BOOK = 500

# A best-offer row as compared: (best bid id, its value, number of matching bids).
BestRow = tuple[int | None, Decimal | None, int]


@dataclass(frozen=True)
class Verification:
    pending_changes: int
    offers: int
    differences: list[Difference]
    match_differences: int

    @property
    def clean(self) -> bool:
        return not self.differences and not self.match_differences and not self.pending_changes


@dataclass(frozen=True)
class Difference:
    """An offer whose best-offer row differs from the recomputation: the row as the table
    holds it, and as recomputed."""

    offer_id: int
    table: BestRow
    recomputed: BestRow


def best_offers_verify(*, strategy: str | None = None) -> Verification:
    """Compare the best-offer table (and the matches behind it) with a recomputation.

    The recomputation loads every open offer and active bid into a fresh scratch store,
    matches all of them from scratch and ranks the bids again. It runs under the cycle lock
    in one transaction that it rolls back, so it sees a settled table and changes nothing.
    Orders set aside are left out, as the cycle leaves them out.
    """
    with transaction.atomic():
        cycle_lock()
        pending = OrderChange.objects.filter(processed_at=None).count()
        offers = list(
            Offer.objects.filter(state=Offer.State.OPEN, set_aside_at=None).select_related("market")
        )
        bids = list(
            Bid.objects.filter(state=Bid.State.ACTIVE, set_aside_at=None).select_related("market")
        )
        name = strategy or engine.strategy()
        # The scratch store is not dropped: the rollback at the end (or an exception's)
        # undoes its creation, and a DROP SCHEMA before it was a tenth of a call's time.
        scratch = engine.scratch_store(
            name, f"verify_{os.getpid()}_{uuid.uuid4().hex[:8]}", indexes=False
        )
        # An order the engine cannot use is one the next cycle sets aside: left out here too.
        scratch.add_publications(candidates_of(offers)[0])
        scratch.add_subscriptions(candidates_of(bids)[0])
        if len(offers) + len(bids) >= SMALL_BOOK:
            scratch.create_indexes()
            scratch.analyze()
        quads = scratch.match_disjuncts("all")
        matches = {(m.offer_id, m.bid_id): m.value for m in engine.pair_values(quads)}
        stored = {
            (offer_id, bid_id): value
            for offer_id, bid_id, value in OfferBidMatch.objects.values_list(
                "offer_id", "bid_id", "value"
            )
        }
        match_differences = len(set(matches.items()) ^ set(stored.items()))
        priority = {b.pk: (b.priority_at, b.pk) for b in bids}
        ranked: dict[int, list[tuple[Decimal, int]]] = {}
        for (offer_id, bid_id), value in matches.items():
            ranked.setdefault(offer_id, []).append((value, bid_id))
        table = {
            row.offer_id: (row.bid_id, row.value, row.matching_bids)
            for row in BestOffer.objects.all()
        }
        differences = []
        for offer in offers:
            candidates = ranked.get(offer.pk, [])
            want: BestRow
            if candidates:
                value, bid_id = min(candidates, key=lambda c: (-c[0], priority[c[1]]))
                want = (bid_id, value, len(candidates))
            else:
                want = (NO_BEST.bid_id, NO_BEST.value, NO_BEST.matching_bids)
            got = table.pop(offer.pk, None)
            if got != want:
                differences.append(Difference(offer.pk, got or (None, None, 0), want))
        for offer_id, row in table.items():  # rows of offers that are no longer open
            differences.append(Difference(offer_id, row, (None, None, 0)))
        transaction.set_rollback(True)
    return Verification(pending, len(offers), differences, match_differences)
