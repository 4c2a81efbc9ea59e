"""What the staff dashboard shows: the health of the matching cycle, the orders it set aside
and the open auctions."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import F
from django.utils import timezone

from exchange.models import Bid, MatchingCycle, Notification, Offer, OrderChange


@dataclass(frozen=True)
class CycleHealth:
    last: MatchingCycle | None
    cycles_last_hour: int
    mean_ms_last_hour: float | None
    max_ms_last_hour: float | None
    pending_changes: int
    oldest_pending_age_s: float | None
    outbox_backlog: int


def cycle_health() -> CycleHealth:
    now = timezone.now()
    hour = MatchingCycle.objects.filter(started_at__gte=now - dt.timedelta(hours=1))
    durations = [c.duration_ms for c in hour.only("started_at", "finished_at")[:5000]]
    oldest = (
        OrderChange.objects.filter(processed_at=None)
        .order_by("id")
        .values_list("created_at", flat=True)
        .first()
    )
    return CycleHealth(
        last=MatchingCycle.objects.order_by("-id").first(),
        cycles_last_hour=len(durations),
        mean_ms_last_hour=sum(durations) / len(durations) if durations else None,
        max_ms_last_hour=max(durations) if durations else None,
        pending_changes=OrderChange.objects.filter(processed_at=None).count(),
        oldest_pending_age_s=(now - oldest).total_seconds() if oldest else None,
        outbox_backlog=Notification.objects.filter(delivered_at=None).count(),
    )


def changes_stale(*, older_than: dt.timedelta, partitions: int = 1) -> list[int]:
    """The matching partitions (of ``partitions``, ``exchange/tasks.py``) that have a change
    waiting longer than ``older_than`` for a cycle (a lost trigger), in order."""
    stale = timezone.now() - older_than
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT DISTINCT coalesce(o.market_id, b.market_id, 0) %% %s
            FROM exchange_orderchange c
            LEFT JOIN exchange_offer o ON c.side = 'offer' AND o.id = c.order_id
            LEFT JOIN exchange_bid b ON c.side = 'bid' AND b.id = c.order_id
            WHERE c.processed_at IS NULL AND c.created_at <= %s ORDER BY 1
            """,
            [partitions, stale],
        )
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class OpenAuctions:
    offers: list[Offer]  # the first ``limit``, their markets and sellers loaded
    total: int  # every open offer


def open_auctions(*, limit: int = 200) -> OpenAuctions:
    """Open offers (every one is an auction until it closes), those with a closing time
    first and soonest first, then those staff close by hand, oldest first. At most ``limit``
    are loaded, so the page's work stays bounded; ``total`` tells how many there are."""
    offers = Offer.objects.filter(state=Offer.State.OPEN)
    return OpenAuctions(
        offers=list(
            offers.select_related("market", "seller").order_by(
                F("closes_at").asc(nulls_last=True), "pk"
            )[:limit]
        ),
        total=offers.count(),
    )


@dataclass(frozen=True)
class SetAside:
    """A live order the matching engine left out, and why."""

    side: str
    order_id: int
    market: str
    owner: str
    at: dt.datetime
    reason: str


def orders_set_aside(*, limit: int = 50) -> list[SetAside]:
    """Live offers and bids that the matching cycle set aside, most recent first."""
    offers = (
        Offer.objects.filter(state=Offer.State.OPEN, set_aside_at__isnull=False)
        .select_related("market", "seller")
        .order_by("-set_aside_at", "-pk")[:limit]
    )
    bids = (
        Bid.objects.filter(state=Bid.State.ACTIVE, set_aside_at__isnull=False)
        .select_related("market", "buyer")
        .order_by("-set_aside_at", "-pk")[:limit]
    )
    rows = [
        SetAside(
            "offer" if isinstance(order, Offer) else "bid",
            order.pk,
            order.market.subject,
            owner.get_username(),
            order.set_aside_at,
            order.set_aside_reason,
        )
        for order, owner in [*((o, o.seller) for o in offers), *((b, b.buyer) for b in bids)]
        if order.set_aside_at is not None
    ]
    rows.sort(key=lambda r: r.at, reverse=True)
    return rows[:limit]
