"""The continuous matching transaction (SPEC 5.3, 5.4).

One cycle, in one transaction, under an advisory lock so that cycles never overlap:

1. take every pending ``OrderChange`` as one batch;
2. bring the engine's constraint store up to date (changed orders out, live ones back in);
3. match incrementally: the changed offers against all bids, the changed bids against all
   offers; replace their ``OfferBidMatch`` rows with the new pairs and values;
4. recompute the best bid of every offer that could have changed, write ``BestOffer`` and its
   history, and an outbox ``Notification`` for each change of an offer's best bid;
5. mark the batch processed. After commit the notifications are pushed over Channels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from exchange import engine
from exchange.models import (
    BestOffer,
    BestOfferChange,
    Bid,
    MatchingCycle,
    Notification,
    Offer,
    OfferBidMatch,
    OrderChange,
)
from exchange.services.notifications import best_offer_notifications, notifications_push_on_commit

# Key of the PostgreSQL advisory lock that serializes matching cycles and closings.
CYCLE_LOCK = 0x1D7E45EC7
# Changes one cycle takes at most; a busier moment is split over consecutive cycles.
BATCH_LIMIT = 5000


def cycle_lock() -> None:
    """Take the cycle lock for the rest of the current transaction (waits for a running cycle)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CYCLE_LOCK])


@dataclass(frozen=True)
class CycleReport:
    changes: int
    offers_touched: int
    notifications: int


@dataclass(frozen=True)
class Best:
    bid_id: int | None
    value: Decimal | None
    matching_bids: int


NO_BEST = Best(None, None, 0)


def matching_cycle_run(*, limit: int = BATCH_LIMIT) -> CycleReport:
    """Run one cycle over (at most ``limit``) pending changes; safe to call at any time."""
    started = timezone.now()
    with transaction.atomic():
        cycle_lock()
        batch = list(
            OrderChange.objects.filter(processed_at=None)
            .order_by("id")
            .values_list("id", "side", "order_id")[:limit]
        )
        if not batch:
            return CycleReport(0, 0, 0)
        offer_ids = {order_id for _, side, order_id in batch if side == "offer"}
        bid_ids = {order_id for _, side, order_id in batch if side == "bid"}
        touched, notes = apply_changes(offer_ids=offer_ids, bid_ids=bid_ids)
        OrderChange.objects.filter(id__in=[row[0] for row in batch]).update(
            processed_at=timezone.now()
        )
        MatchingCycle.objects.create(
            started_at=started,
            finished_at=timezone.now(),
            changes=len(batch),
            offers_touched=touched,
            notifications=len(notes),
            strategy=engine.strategy(),
        )
        notifications_push_on_commit(notes)
    return CycleReport(len(batch), touched, len(notes))


def apply_changes(*, offer_ids: set[int], bid_ids: set[int]) -> tuple[int, list[Notification]]:
    """Steps 2-4 for the given changed orders; the caller holds the cycle lock."""
    store = engine.store()
    live_offers = list(
        Offer.objects.filter(id__in=offer_ids, state=Offer.State.OPEN).select_related("market")
    )
    live_bids = list(
        Bid.objects.filter(id__in=bid_ids, state=Bid.State.ACTIVE).select_related("market")
    )
    store.delete_publications(sorted(offer_ids))
    store.delete_subscriptions(sorted(bid_ids))
    store.add_publications([(o.pk, engine.candidate_constraint(o)) for o in live_offers])
    store.add_subscriptions([(b.pk, engine.candidate_constraint(b)) for b in live_bids])

    # Offers whose best bid may change: the changed ones and every offer a changed bid matched.
    affected = set(offer_ids)
    affected.update(
        OfferBidMatch.objects.filter(bid_id__in=bid_ids).values_list("offer_id", flat=True)
    )
    OfferBidMatch.objects.filter(Q(offer_id__in=offer_ids) | Q(bid_id__in=bid_ids)).delete()

    quads = store.match_publications([o.pk for o in live_offers], disjuncts=True)
    quads |= store.match_subscriptions([b.pk for b in live_bids], disjuncts=True)
    matches = pair_values(quads)
    OfferBidMatch.objects.bulk_create(matches, batch_size=2000)
    affected.update(m.offer_id for m in matches)

    return len(affected), best_offers_refresh(offer_ids=affected)


def engine_rebuild_run(name: str) -> tuple[int, list[Notification]]:
    """Rebuild store ``name`` from the live orders; if it is the one in use, recompute every
    match and best offer from it. Takes the cycle lock; returns (offers recomputed, notes)."""
    with transaction.atomic():
        cycle_lock()
        store = engine.store(name)
        store.drop()
        store.create()
        if name != engine.strategy():
            return 0, []  # a store not in use stays empty until the setting points at it
        offers = list(Offer.objects.filter(state=Offer.State.OPEN).select_related("market"))
        bids = list(Bid.objects.filter(state=Bid.State.ACTIVE).select_related("market"))
        store.add_publications([(o.pk, engine.candidate_constraint(o)) for o in offers])
        store.add_subscriptions([(b.pk, engine.candidate_constraint(b)) for b in bids])
        store.analyze()
        OfferBidMatch.objects.all().delete()
        OfferBidMatch.objects.bulk_create(
            pair_values(store.match_all(disjuncts=True)), batch_size=5000
        )
        affected = {o.pk for o in offers}
        affected.update(BestOffer.objects.values_list("offer_id", flat=True))
        notes = best_offers_refresh(offer_ids=affected)
        notifications_push_on_commit(notes)
    return len(affected), notes


def pair_values(quads: Iterable[tuple[int, int, int, int]]) -> list[OfferBidMatch]:
    """One ``OfferBidMatch`` per (offer, bid): the best value over its matching disjunct pairs.

    ``quads`` are the store's candidate disjunct pairs; the ones that do not match on the
    full constraints (see ``engine.candidate_constraint``) are dropped here.

    The value of a disjunct pair is the highest price both accept: the smaller of the two
    upper bounds of the price (an offer's reserve has none; a bid always has one).
    """
    quads = list(quads)
    if not quads:
        return []
    offers = engine.constraints(Offer, {q[0] for q in quads})
    bids = engine.constraints(Bid, {q[2] for q in quads})
    by_pair: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for p, pd, s, sd in engine.candidate_pairs(quads, offers, bids):
        by_pair[(p, s)].append((pd, sd))
    out = []
    for (offer_id, bid_id), disjunct_pairs in by_pair.items():
        offer, price = offers[offer_id]
        bid, _ = bids[bid_id]
        best: tuple[Decimal, int, int] | None = None
        for pd, sd in sorted(disjunct_pairs):
            value = engine.pair_value(offer.disjuncts[pd], bid.disjuncts[sd], price)
            if best is None or value > best[0]:
                best = (value, pd, sd)
        assert best is not None
        out.append(
            OfferBidMatch(
                offer_id=offer_id,
                bid_id=bid_id,
                value=best[0],
                pub_disjunct=best[1],
                sub_disjunct=best[2],
            )
        )
    return out


def best_bids(offer_ids: Iterable[int]) -> dict[int, Best]:
    """The best bid of each offer from the current matches: highest value, then the earlier
    bid (``priority_at``), then the lower bid id."""
    ids = list(offer_ids)
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT DISTINCT ON (m.offer_id) m.offer_id, m.bid_id, m.value,
                   count(*) OVER (PARTITION BY m.offer_id)
            FROM exchange_offerbidmatch m JOIN exchange_bid b ON b.id = m.bid_id
            WHERE m.offer_id = ANY(%s)
            ORDER BY m.offer_id, m.value DESC, b.priority_at, b.id
            """,
            [ids],
        )
        found = {row[0]: Best(row[1], row[2], row[3]) for row in cursor.fetchall()}
    return {i: found.get(i, NO_BEST) for i in ids}


def best_offers_refresh(*, offer_ids: set[int]) -> list[Notification]:
    """Recompute the best bid of ``offer_ids``; write rows, history and outbox notifications.

    An offer that is no longer open loses its row, and its last best bidder and the market
    hear that it has no best bid any more.
    """
    if not offer_ids:
        return []
    now = timezone.now()
    rows = {
        row.offer_id: row
        for row in BestOffer.objects.select_for_update(no_key=True)
        .filter(offer_id__in=offer_ids)
        .order_by("pk")
    }
    offers = {o.pk: o for o in Offer.objects.filter(id__in=offer_ids).select_related("market")}
    open_ids = {i for i, o in offers.items() if o.state == Offer.State.OPEN}
    new = best_bids(open_ids)
    notes: list[Notification] = []
    history: list[BestOfferChange] = []
    created: list[BestOffer] = []
    updated: list[BestOffer] = []
    gone: list[int] = []
    for offer_id in sorted(offer_ids):
        offer = offers.get(offer_id)
        if offer is None:
            continue
        row = rows.get(offer_id)
        old = Best(row.bid_id, row.value, row.matching_bids) if row else NO_BEST
        best = new[offer_id] if offer_id in open_ids else NO_BEST
        if offer_id in open_ids:
            if row is None or old != best:
                row = row or BestOffer(offer=offer)
                (created if row.pk is None else updated).append(row)
                row.bid_id, row.value, row.matching_bids = (
                    best.bid_id,
                    best.value,
                    best.matching_bids,
                )
                row.changed_at = now
        elif row is not None:
            gone.append(row.pk)
        if old != best:
            history.append(
                BestOfferChange(
                    offer=offer,
                    bid_id=best.bid_id,
                    value=best.value,
                    matching_bids=best.matching_bids,
                    at=now,
                )
            )
            notes.extend(best_offer_notifications(offer=offer, old=old, new=best))
    BestOffer.objects.bulk_create(created, batch_size=5000)
    BestOffer.objects.bulk_update(
        updated, ["bid", "value", "matching_bids", "changed_at"], batch_size=2000
    )
    if gone:
        BestOffer.objects.filter(pk__in=gone).delete()
    BestOfferChange.objects.bulk_create(history, batch_size=5000)
    return Notification.objects.bulk_create(notes, batch_size=5000)
