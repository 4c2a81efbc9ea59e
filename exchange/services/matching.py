"""The continuous matching transaction (SPEC 5.3, 5.4).

One cycle, in one transaction, under an advisory lock per market so that cycles of one market
never overlap (cycles of different markets run in parallel, SPEC 9 "Scale-out"):

1. take the pending ``OrderChange`` rows as one batch (at most ``BATCH_LIMIT``);
2. bring the engine's constraint store up to date (changed orders out, live ones back in);
3. match incrementally: the changed offers against all bids, the changed bids against all
   offers; replace their ``OfferBidMatch`` rows with the new pairs and values;
4. recompute the best bid of every offer that could have changed, write ``BestOffer`` and its
   history, and an outbox ``Notification`` for each change of an offer's best bid;
5. mark the batch processed and record the cycle. After commit the notifications are pushed
   over Channels.

Markets are partitioned across matching workers: a cycle of partition ``p`` of ``n`` takes the
changes of the markets whose id is ``p`` modulo ``n`` (``exchange/tasks.py`` queues it on that
partition's queue). It holds the global cycle lock in shared mode and each of its markets' locks
(``partition_lock``); closing, rebuilds and verification hold the global lock exclusively and so
see no cycle running. What readers follow by id (notifications, the best-offer history, the
event log) is written under one more lock held to commit (``tail_lock``), so parallel cycles
commit those rows in id order.

An order whose stored constraint the engine cannot use (it no longer parses, bounds no price,
or does not fit the store) never fails the batch: the work is rolled back to a savepoint, the
order is set aside (``set_aside_at`` and a reason, shown on the staff dashboard), its owner is
notified, and the same work runs again without it (``until_usable``). So is an order whose
rows the store's database refuses with a data error (``_store_add`` finds which ones).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from exchange import engine
from exchange.models import (
    BestOffer,
    Bid,
    MatchingCycle,
    Notification,
    Offer,
    OfferBidMatch,
    OrderChange,
)
from exchange.models.orders import OrderT
from exchange.services.best import NO_BEST, Best
from exchange.services.events import events_append
from exchange.services.notifications import (
    BEST_OFFER_FIELDS,
    BEST_OFFER_MARKET_FIELDS,
    best_offer_facts,
    best_offer_notifications,
    notifications_push_on_commit,
    set_aside_notifications,
)
from matching.model import Constraint
from matching.store import ConstraintStore

T = TypeVar("T")

# Key of the PostgreSQL advisory lock that cycles hold shared and closings, rebuilds and
# verification hold exclusively (``cycle_lock``).
CYCLE_LOCK = 0x1D7E45EC7
# First key of the two-key advisory lock of one market (the second is the market's id; 0
# stands for changes whose order is gone): cycles of one market serialize on it.
MARKET_LOCK = 0x1D7E
# Key of the lock a cycle takes before it writes rows that readers follow by id, held to commit.
TAIL_LOCK = 0x1D7E45EC8
# Changes one cycle takes at most; a busier moment is split over consecutive cycles.
BATCH_LIMIT = 5000
# What one owner's changes may bring into one cycle, in alternatives (the ORs of their
# orders' stored constraints, at most 64 an order): a cycle's cost grows with the
# alternatives it matches, so an owner who sends thousands of maximum-size orders at once
# has them taken this many alternatives a cycle, and everyone else's changes go in beside
# them (issue 37; each owner's first pending change is always taken; docs/reliability.md
# gives the cost measured per alternative).
OWNER_CYCLE_ALTERNATIVES = 512

# The pending changes a cycle takes: in ``id`` order, each owner's up to the point where its
# alternatives before the change reach the budget. The owner, market and size of a change are
# those of its order now (a withdrawn order still has its row); only the given markets' changes
# are taken (all with NULL).
PENDING_SQL = """
WITH pending AS (
    SELECT c.id, c.side, c.order_id, c.event::text AS event, c.event_owner_id,
           coalesce(o.seller_id, b.buyer_id) AS owner,
           greatest(1, coalesce(jsonb_array_length(
               coalesce(o.constraint_json, b.constraint_json) -> 'any_of'), 1)) AS size
    FROM exchange_orderchange c
    LEFT JOIN exchange_offer o ON c.side = 'offer' AND o.id = c.order_id
    LEFT JOIN exchange_bid b ON c.side = 'bid' AND b.id = c.order_id
    WHERE c.processed_at IS NULL
      AND (%s::int8[] IS NULL OR coalesce(o.market_id, b.market_id, 0) = ANY(%s::int8[]))
), ranked AS (
    SELECT *, sum(size) OVER (PARTITION BY owner ORDER BY id) - size AS before FROM pending
)
SELECT id, side, order_id, event, event_owner_id, (SELECT count(*) FROM pending) FROM ranked
WHERE before < %s ORDER BY id LIMIT %s
"""


def cycle_lock() -> None:
    """Take the cycle lock exclusively for the rest of the current transaction: waits for
    the running cycles of every market, and no cycle starts until the transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CYCLE_LOCK])


def cycle_lock_shared() -> None:
    """Take the cycle lock shared for the rest of the current transaction, first, as cycles
    do: waits for a running close, rebuild or verification, and none starts until the
    transaction ends. A staff cancel takes it so that it never holds its offer's row while a
    close, which takes order rows after the tail lock, holds the tail (docs/reliability.md)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [CYCLE_LOCK])


# The markets of partition %s of %s with pending changes, each locked in id order (a fixed
# order between cycles, so two that share markets never deadlock); a market whose cycle runs
# elsewhere is waited for. Its snapshot only finds the markets: the batch is read after.
PARTITION_LOCK_SQL = """
SELECT m, pg_advisory_xact_lock(%s, m::int4) FROM (
    SELECT DISTINCT coalesce(o.market_id, b.market_id, 0) AS m
    FROM exchange_orderchange c
    LEFT JOIN exchange_offer o ON c.side = 'offer' AND o.id = c.order_id
    LEFT JOIN exchange_bid b ON c.side = 'bid' AND b.id = c.order_id
    WHERE c.processed_at IS NULL AND coalesce(o.market_id, b.market_id, 0) %% %s = %s
    ORDER BY 1
) markets
"""


def partition_lock(partition: int, partitions: int) -> list[int]:
    """Take the cycle lock shared and the lock of every market of ``partition`` (of
    ``partitions``) that has pending changes, for the rest of the transaction; returns those
    markets. Two statements: the batch must be read by a statement that starts after the
    locks are held, so that it sees what the previous cycle of each market committed.

    The rest of the transaction runs prepared statements with their generic plans
    (``plan_cache_mode``, set locally with the first lock). A cycle's statements look
    orders and matches up by key, mostly ``= ANY(array)``, and for those PostgreSQL's own
    choice kept planning each run for its array (a plan for ten elements costs more than one
    for the one or two a cycle has), which was about 1.7 ms of planning a cycle on the live
    benchmark against 3 ms of execution (pg_stat_statements). Their generic plans ran within
    a few hundredths of a millisecond of the plans made for each run, but for the best-offer
    changes' read, now written so that its generic plan is good
    (``events._best_changes_after``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock_shared(%s), "
            "set_config('plan_cache_mode', 'force_generic_plan', true)",
            [CYCLE_LOCK],
        )
        cursor.execute(PARTITION_LOCK_SQL, [MARKET_LOCK, partitions, partition])
        return [row[0] for row in cursor.fetchall()]


def tail_lock() -> None:
    """Before a cycle writes rows that readers follow by id (notifications, read by a
    ``me`` stream after the last id it sent; best-offer history, which the event log's
    writer takes past its mark): cycles of other markets take their ids after this one has
    committed, so no reader sees a later id before an earlier one. The store's shared
    counters are written under it too (``apply_changes``). Held to commit; taken after a
    cycle's reads of its own markets' rows, so a cycle waiting there holds no other back."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [TAIL_LOCK])


@dataclass(frozen=True)
class CycleReport:
    changes: int
    offers_touched: int
    notifications: int
    events: int = 0
    # Changes left pending for a later cycle (owners' budgets or the batch limit).
    more: bool = False


def matching_cycle_run(
    *, limit: int = BATCH_LIMIT, partition: int = 0, partitions: int = 1
) -> CycleReport:
    """Run one cycle over (at most ``limit``) pending changes of the markets of
    ``partition`` (of ``partitions``; by default every market); safe to call at any time."""
    with transaction.atomic():
        markets = partition_lock(partition, partitions)
        if not markets:
            return CycleReport(0, 0, 0)
        report, notes = batch_apply(limit=limit, markets=markets)
        notifications_push_on_commit(notes)
    return report


def batch_apply(
    *, limit: int = BATCH_LIMIT, markets: list[int] | None = None
) -> tuple[CycleReport, list[Notification]]:
    """Take at most ``limit`` pending changes (of ``markets``, or all), apply them, mark them
    processed and record the cycle; the caller holds the cycle lock (or those markets' locks)
    and pushes the notifications after commit.

    The matching cycle and closing both take changes through here, so both respect the
    batch limit and both leave a ``MatchingCycle`` row.
    """
    started = timezone.now()
    batch, pending = _pending(limit, markets)
    if not batch:
        return CycleReport(0, 0, 0), []
    applied = apply_changes(
        offer_ids={row[2] for row in batch if row[1] == "offer"},
        bid_ids={row[2] for row in batch if row[1] == "bid"},
    )
    OrderChange.objects.filter(id__in=[row[0] for row in batch]).update(processed_at=timezone.now())
    events = events_append(changes=[(row[3], row[4]) for row in batch])
    MatchingCycle.objects.create(
        started_at=started,
        finished_at=timezone.now(),
        changes=len(batch),
        offers_touched=applied.touched,
        notifications=len(applied.notes),
        set_aside=applied.set_aside,
        strategy=engine.strategy(),
    )
    more = pending > len(batch)
    report = CycleReport(len(batch), applied.touched, len(applied.notes), events, more)
    return report, applied.notes


def _pending(
    limit: int, markets: list[int] | None = None
) -> tuple[list[tuple[int, str, int, Any, int | None]], int]:
    """The pending changes one cycle takes (``PENDING_SQL``), at most ``limit``, of
    ``markets`` (all with None), and how many changes of theirs are pending in all."""
    with connection.cursor() as cursor:
        cursor.execute(PENDING_SQL, [markets, markets, OWNER_CYCLE_ALTERNATIVES, limit])
        rows = cursor.fetchall()
    batch = [
        (pk, side, order_id, None if event is None else json.loads(event), owner)
        for pk, side, order_id, event, owner, _ in rows
    ]
    return batch, rows[0][5] if rows else 0


def pending_changes_apply() -> list[Notification]:
    """Take in every pending change, batch after batch (closing needs the book settled);
    the caller holds the cycle lock."""
    notes: list[Notification] = []
    while True:
        report, more = batch_apply(limit=BATCH_LIMIT)
        notes += more
        if not report.more:
            return notes


@dataclass(frozen=True)
class Applied:
    touched: int
    notes: list[Notification]
    set_aside: int


# How many times a run that found unusable orders which, read again under lock, were usable
# (amended meanwhile) is tried again before the error is raised.
STALLED_RETRIES = 3


def until_usable(
    work: Callable[[set[int], set[int]], T],
    changed: tuple[set[int], set[int]] | None = None,
) -> tuple[T, list[Notification], int]:
    """Run ``work`` in a savepoint; while it finds orders the engine cannot use, roll it
    back, set those orders aside and run it again. One bad order never fails the batch.

    ``work`` gets the ids of the offers and bids set aside so far (it must treat them as
    changed: out of the store, their matches gone). When it fails with a data exception
    from the store's database, the ``changed`` (offers, bids) it wrote are tried one by one
    to find those the database refuses (``_store_refusals``), which are set aside as well.
    Returns what ``work`` returned, the owners' notifications and how many orders were set
    aside.
    """
    offers: set[int] = set()
    bids: set[int] = set()
    aside_all: list[Offer | Bid] = []
    stalled = 0
    while True:
        try:
            try:
                with transaction.atomic():
                    done = work(offers, bids)
                # The owners' notes are written once the work stands, under the tail lock:
                # taken before a rerun of the work, it would be held while the rerun waits
                # for the store's rows that another cycle holds, which may wait for it.
                notes: list[Notification] = []
                if aside_all:
                    tail_lock()
                    notes = set_aside_notifications(orders=aside_all)
                return done, notes, len(aside_all)
            except ORDER_DATA_ERRORS:
                refusals = None if changed is None else _store_refusals(*changed)
                if refusals is None:
                    raise
                raise refusals from None
        except engine.UnusableOrders as exc:
            aside, ended = orders_set_aside(
                offer_ids=set(exc.offers), bid_ids=set(exc.bids), refused=exc
            )
            if not aside and not ended:
                # Read again under lock they are usable: an owner amended them meanwhile
                # (amending takes the row, not the cycle lock). Run again on the new text,
                # a few times, rather than fail the whole batch.
                stalled += 1
                if stalled > STALLED_RETRIES:
                    raise
                continue
            # Orders withdrawn or cancelled meanwhile leave matching as the set-aside ones
            # do (their own change, next, finds them gone), but nobody is told to amend them.
            offers.update(o.pk for o in [*aside, *ended] if isinstance(o, Offer))
            bids.update(o.pk for o in [*aside, *ended] if isinstance(o, Bid))
            aside_all += aside


def _candidates(
    orders: Iterable[Offer | Bid],
) -> tuple[dict[int, engine.Usable], list[tuple[int, Constraint]], dict[int, str]]:
    """The usable constraints of live orders, their candidate constraints, and the orders
    the engine cannot use (each order's schema and text read once for all three)."""
    orders = list(orders)
    usable, unusable = engine.orders_usable(orders)
    found = [(o.pk, engine.candidate_of(o, usable[o.pk])) for o in orders if o.pk in usable]
    return usable, found, unusable


def candidates_of(
    orders: Iterable[Offer | Bid],
) -> tuple[list[tuple[int, Constraint]], dict[int, str]]:
    """The candidate constraints of live orders, and the orders the engine cannot use."""
    _, found, unusable = _candidates(orders)
    return found, unusable


def _store_load(
    store: ConstraintStore, offers: list[Offer], bids: list[Bid]
) -> tuple[dict[int, engine.Usable], dict[int, engine.Usable]]:
    """Add live orders to ``store``; ``UnusableOrders`` if any of them cannot be used.
    Returns their usable constraints (offers, bids), for ``engine.pair_values``."""
    offers_usable, publications, bad_offers = _candidates(offers)
    bids_usable, subscriptions, bad_bids = _candidates(bids)
    if bad_offers or bad_bids:
        raise engine.UnusableOrders(offers=bad_offers, bids=bad_bids)
    store.add_publications(publications)
    store.add_subscriptions(subscriptions)
    return offers_usable, bids_usable


# What the store's database raises for the values of an order: SQLSTATE class 22, data
# exceptions (a value out of a column's range, an invalid representation). Every other
# error (a missing table, a lost connection, a timeout, a deadlock) says nothing of one
# order and fails the cycle as before.
ORDER_DATA_ERRORS = (psycopg.DataError,)


def _store_refusals(offer_ids: set[int], bid_ids: set[int]) -> engine.UnusableOrders | None:
    """After a cycle's work failed with a data exception: write each of these orders alone
    into the store (its old rows out first), in a savepoint rolled back whatever happens,
    and name the ones the database refuses (issue 37: one order's database error must not
    fail the cycle). None if none alone is refused, or all of several are: then the store,
    not an order, is at fault and the cycle fails as before."""
    store = engine.store()
    found: dict[str, dict[int, str]] = {"offer": {}, "bid": {}}
    texts: dict[tuple[str, int], str] = {}
    sides = (
        ("offer", Offer, offer_ids, store.delete_publications, store.add_publications),
        ("bid", Bid, bid_ids, store.delete_subscriptions, store.add_subscriptions),
    )
    tried = 0
    for kind, model, ids, delete, add in sides:
        orders = list(_live(model).filter(id__in=ids))
        _, candidates, _ = _candidates(orders)
        text = {order.pk: order.constraint_text for order in orders}
        for pk, constraint in candidates:
            tried += 1
            savepoint = transaction.savepoint()
            try:
                delete([pk])
                add([(pk, constraint)])
            except ORDER_DATA_ERRORS as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                found[kind][pk] = f"the store refused it: {first}"
                texts[(kind, pk)] = text[pk]
            finally:
                transaction.savepoint_rollback(savepoint)
    refused = len(texts)
    if not refused or (refused == tried > 1):
        return None
    return engine.UnusableOrders(offers=found["offer"], bids=found["bid"], refused=texts)


def _live(model: type[Offer] | type[Bid]) -> QuerySet:
    state = Offer.State.OPEN if model is Offer else Bid.State.ACTIVE
    live = model.objects.filter(state=state, set_aside_at=None).select_related("market")
    # Not the limit's column: the rebuild of migration 0008 runs this before 0018 adds it.
    return live.defer("largest_award") if model is Bid else live


def apply_changes(*, offer_ids: set[int], bid_ids: set[int]) -> Applied:
    """Steps 2-4 for the given changed orders; the caller holds the cycle lock.

    Orders the engine cannot use (among the changed ones, or met while matching them) are
    set aside and handled as changed too: out of the store, their matches gone.
    """
    changed_offers, changed_bids = set(offer_ids), set(bid_ids)

    def work(offers_aside: set[int], bids_aside: set[int]) -> tuple[int, list[Notification]]:
        offer_ids, bid_ids = changed_offers | offers_aside, changed_bids | bids_aside
        store = engine.store()
        # The store's shared counters are written at the end, under the tail lock: written
        # here, their rows would be held from here to commit, and the cycles of other
        # markets would wait for this one from their first store write.
        store.defer_counters()
        live_offers = engine.orders_read(Offer, offer_ids, live=True)
        live_bids = engine.orders_read(Bid, bid_ids, live=True)
        store.delete_publications(sorted(offer_ids))
        store.delete_subscriptions(sorted(bid_ids))
        offers_usable, bids_usable = _store_load(store, live_offers, live_bids)

        # Offers whose best bid may change: the changed ones and every offer a changed bid
        # matched (the offers of the matches removed, in the same statement).
        affected = set(offer_ids) | _matches_delete(offer_ids=offer_ids, bid_ids=bid_ids)

        quads = store.match_disjuncts("publications", [o.pk for o in live_offers])
        quads |= store.match_disjuncts("subscriptions", [b.pk for b in live_bids])
        matches = engine.pair_values(quads, offers=offers_usable, bids=bids_usable)
        OfferBidMatch.objects.bulk_create(matches, batch_size=2000)
        affected.update(m.offer_id for m in matches)
        return len(affected), best_offers_refresh(offer_ids=affected, tail=store.flush_counters)

    (touched, notes), aside_notes, count = until_usable(work, (changed_offers, changed_bids))
    return Applied(touched, aside_notes + notes, count)


def _matches_delete(*, offer_ids: set[int], bid_ids: set[int]) -> set[int]:
    """Delete the matches of these offers and bids; returns the offers they were on."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM exchange_offerbidmatch WHERE offer_id = ANY(%s) OR bid_id = ANY(%s)"
            " RETURNING offer_id",
            [sorted(offer_ids), sorted(bid_ids)],
        )
        return {row[0] for row in cursor.fetchall()}


def engine_rebuild_run(name: str) -> tuple[int, list[Notification]]:
    """Rebuild store ``name`` from the live orders; if it is the one in use, recompute every
    match and best offer from it. Takes the cycle lock; returns (offers recomputed, notes)."""
    with transaction.atomic():
        cycle_lock()
        if name != engine.strategy():
            store = engine.store(name)
            store.drop()
            store.create()
            return 0, []  # a store not in use stays empty until the setting points at it

        def work(_offers: set[int], _bids: set[int]) -> tuple[int, list[Notification]]:
            # Everything is rebuilt, so the orders set aside need no special care.
            store = engine.store(name)
            store.drop()
            store.create()
            offers = list(_live(Offer))
            offers_usable, bids_usable = _store_load(store, offers, list(_live(Bid)))
            store.analyze()
            OfferBidMatch.objects.all().delete()
            matches = engine.pair_values(
                store.match_disjuncts("all"), offers=offers_usable, bids=bids_usable
            )
            OfferBidMatch.objects.bulk_create(matches, batch_size=5000)
            affected = {o.pk for o in offers}
            affected.update(BestOffer.objects.values_list("offer_id", flat=True))
            return len(affected), best_offers_refresh(offer_ids=affected)

        (touched, notes), aside_notes, _ = until_usable(work)
        notes = aside_notes + notes
        notifications_push_on_commit(notes)
    return touched, notes


def orders_set_aside(
    *, offer_ids: set[int], bid_ids: set[int], refused: engine.UnusableOrders | None = None
) -> tuple[list[Offer | Bid], list[Offer | Bid]]:
    """Set aside those of the given orders that, read again under their row lock, are still
    live and the engine still cannot use; returns them, and the ones no longer live (their
    owner withdrew them or staff cancelled them meanwhile: not set aside). An order the
    store's database refused (named in ``refused.refused``) is set aside, for its reason,
    while it still has the text it was refused with. The caller holds the cycle lock, or
    its markets' locks; the rows are taken offers then bids, each in id order, before the
    tail lock (docs/reliability.md)."""
    now = timezone.now()
    offers = refused.refused_of("offer") if refused else {}
    bids = refused.refused_of("bid") if refused else {}
    offers_aside, offers_ended = _set_aside(Offer, offer_ids, now, offers)
    bids_aside, bids_ended = _set_aside(Bid, bid_ids, now, bids)
    return [*offers_aside, *bids_aside], [*offers_ended, *bids_ended]


def _set_aside(
    model: type[OrderT], ids: set[int], now: dt.datetime, refused: dict[int, tuple[str, str]]
) -> tuple[list[OrderT], list[OrderT]]:
    """``orders_set_aside`` for one kind of order; ``refused``: id to (text, reason)."""
    if not ids:
        return [], []
    live = Offer.State.OPEN if model is Offer else Bid.State.ACTIVE
    # order_by("pk") so that concurrent lockers never deadlock.
    rows = (
        model.objects.select_for_update(no_key=True, of=("self",))
        .select_related("market")
        .filter(pk__in=ids, set_aside_at=None)
        .order_by("pk")
    )
    changed, ended = [], []
    for order in rows:
        if order.state != live:
            ended.append(order)
            continue
        if order.pk in refused and refused[order.pk][0] == order.constraint_text:
            order.set_aside_at, order.set_aside_reason = now, refused[order.pk][1]
            changed.append(order)
            continue
        try:
            engine.usable_constraint(order)
        except engine.UnusableOrder as exc:
            order.set_aside_at, order.set_aside_reason = now, exc.reason
            changed.append(order)
    model.objects.bulk_update(changed, ["set_aside_at", "set_aside_reason"])
    return changed, ended


# The best bid of each offer and how many bids match it. Only the matches at the offer's
# highest value can be the best, so only those are joined to their bid for the tie-break:
# joining every match read a bid row per match (three in four of the statement's buffers
# on the cycle_cost.py book; issues 35 and 36) for an order that only ties need.
BEST_BIDS_SQL = """
SELECT DISTINCT ON (t.offer_id) t.offer_id, t.bid_id, t.value, t.n
FROM (
    SELECT m.offer_id, m.bid_id, m.value, max(m.value) OVER w AS top, count(*) OVER w AS n
    FROM exchange_offerbidmatch m
    WHERE m.offer_id = ANY(%s)
    WINDOW w AS (PARTITION BY m.offer_id)
) t JOIN exchange_bid b ON b.id = t.bid_id
WHERE t.value = t.top
ORDER BY t.offer_id, b.priority_at, b.id
"""


def best_bids(offer_ids: Iterable[int]) -> dict[int, Best]:
    """The best bid of each offer from the current matches: highest value, then the earlier
    bid (``priority_at``), then the lower bid id."""
    ids = list(offer_ids)
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(BEST_BIDS_SQL, [ids])
        found = {row[0]: Best(row[1], row[2], row[3]) for row in cursor.fetchall()}
    return {i: found.get(i, NO_BEST) for i in ids}


# Everything ``best_offers_refresh`` writes, in one statement: the best-offer rows of open
# offers inserted or updated, those of offers no longer open deleted, the history, and the
# outbox rows (their ids, in the order given, back). Set-based rather than the ORM's
# bulk_create: the two bulk_creates, mostly Django preparing each field of each object and
# psycopg quoting each element of their arrays on the client (every quote of every JSON
# payload escaped by a regular expression), were half of a cycle's CPU (issue 36). The
# notifications travel as one JSON document, which is quoted in one call. The CTEs touch
# different rows (the rows written are open offers', those deleted are not), and every
# column is written as the ORM wrote it (``tests/exchange/test_best_write.py`` compares).
BEST_WRITE_SQL = """
WITH best AS (
    INSERT INTO exchange_bestoffer (offer_id, bid_id, value, matching_bids, changed_at)
    SELECT o, b, v, n, %(now)s
    FROM unnest(%(offers)s::bigint[], %(bids)s::bigint[], %(values)s::numeric[],
                %(counts)s::integer[]) AS r(o, b, v, n)
    ON CONFLICT (offer_id) DO UPDATE SET bid_id = EXCLUDED.bid_id,
        value = EXCLUDED.value, matching_bids = EXCLUDED.matching_bids,
        changed_at = EXCLUDED.changed_at
), gone AS (
    DELETE FROM exchange_bestoffer WHERE offer_id = ANY(%(gone)s::bigint[])
), history AS (
    INSERT INTO exchange_bestofferchange (offer_id, bid_id, value, matching_bids, at)
    SELECT o, b, v, n, %(now)s
    FROM unnest(%(history_offers)s::bigint[], %(history_bids)s::bigint[],
                %(history_values)s::numeric[], %(history_counts)s::integer[])
         WITH ORDINALITY AS r(o, b, v, n, i)
    ORDER BY i
)
INSERT INTO exchange_notification
    (recipient_id, market_id, offer_id, type, data, created_at, delivered_at)
SELECT (r ->> 0)::bigint, (r ->> 1)::bigint, (r ->> 2)::bigint, r ->> 3, r -> 4, %(created)s,
       NULL
FROM jsonb_array_elements(%(notes)s::jsonb) WITH ORDINALITY AS n(r, i)
ORDER BY i
RETURNING id
"""


def _best_write(
    *,
    written: dict[int, Best],
    gone: list[int],
    history: list[tuple[int, Best]],
    notes: list[Notification],
    now: dt.datetime,
) -> None:
    """Write ``BEST_WRITE_SQL``: the best-offer rows ``written`` (offer to best bid) and
    ``gone`` (offers), the ``history`` (offer, best bid) at ``now``, and the outbox rows
    ``notes``, which come back as ``bulk_create`` leaves them (id, creation time, saved).
    The rows that exist are locked by the caller; only cycles and closing write them, under
    the cycle lock. Their ids follow the order of ``notes``: ``ORDER BY`` the position of
    each in the document, as the sequence is taken row by row in that order."""
    if not (written or gone or history or notes):
        return
    ids = sorted(written)
    created = timezone.now()  # what auto_now_add gave each row
    with connection.cursor() as cursor:
        cursor.execute(
            BEST_WRITE_SQL,
            {
                "now": now,
                "offers": ids,
                "bids": [written[i].bid_id for i in ids],
                "values": [written[i].value for i in ids],
                "counts": [written[i].matching_bids for i in ids],
                "gone": gone,
                "history_offers": [offer_id for offer_id, _ in history],
                "history_bids": [best.bid_id for _, best in history],
                "history_values": [best.value for _, best in history],
                "history_counts": [best.matching_bids for _, best in history],
                "created": created,
                # json.dumps, as the JSONField (it has no encoder of its own) dumps data.
                "notes": json.dumps(
                    [[n.recipient_id, n.market_id, n.offer_id, n.type, n.data] for n in notes]
                ),
            },
        )
        pks = [row[0] for row in cursor.fetchall()]
    for note, pk in zip(notes, pks, strict=True):  # (strict: one id for each row)
        note.pk, note.created_at = pk, created
        note._state.adding, note._state.db = False, connection.alias


# The best-offer rows (offer, best bid, value, matching bids) of the offers %s, locked in
# offer order so that concurrent lockers never deadlock. Written out rather than built and
# compiled by the ORM per cycle, as the offers beside them are (``engine.orders_read``).
BEST_LOCK_SQL = """
SELECT offer_id, bid_id, value, matching_bids FROM exchange_bestoffer
WHERE offer_id = ANY(%s) ORDER BY offer_id FOR NO KEY UPDATE
"""


def best_offers_refresh(
    *, offer_ids: set[int], tail: Callable[[], None] | None = None
) -> list[Notification]:
    """Recompute the best bid of ``offer_ids``; write rows, history and outbox notifications
    under the tail lock, taken once what they need has been read, and then run ``tail``
    (the cycle's deferred store counters) under it as well.

    An offer that is no longer open loses its row, and its last best bidder and the market
    hear that it has no best bid any more.
    """
    if not offer_ids:
        if tail is not None:
            tail_lock()
            tail()
        return []
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(BEST_LOCK_SQL, [sorted(offer_ids)])
        rows = {row[0]: Best(*row[1:]) for row in cursor.fetchall()}
    offers = {
        o.pk: o
        for o in engine.orders_read(
            Offer, offer_ids, fields=BEST_OFFER_FIELDS, market_fields=BEST_OFFER_MARKET_FIELDS
        )
    }
    open_ids = {i for i, o in offers.items() if o.state == Offer.State.OPEN}
    new = best_bids(open_ids)
    history: list[tuple[int, Best]] = []
    written: dict[int, Best] = {}
    gone: list[int] = []
    changes: list[tuple[Offer, Best, Best]] = []
    for offer_id in sorted(offer_ids):
        offer = offers.get(offer_id)
        if offer is None:
            continue
        old = rows.get(offer_id, NO_BEST)
        best = new[offer_id] if offer_id in open_ids else NO_BEST
        if offer_id in open_ids:
            if offer_id not in rows or old != best:
                written[offer_id] = best
        elif offer_id in rows:
            gone.append(offer_id)
        if old != best:
            history.append((offer_id, best))
            changes.append((offer, old, best))
    facts = best_offer_facts(changes)
    notes = [
        note
        for offer, old, best in changes
        for note in best_offer_notifications(offer=offer, old=old, new=best, facts=facts)
    ]
    if history or notes or tail is not None:
        tail_lock()
    if tail is not None:
        tail()
    _best_write(written=written, gone=gone, history=history, notes=notes, now=now)
    return notes
