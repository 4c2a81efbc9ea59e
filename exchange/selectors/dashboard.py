"""What the staff dashboard shows: the health of the matching cycle and the auctions about to close."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone

from exchange.models import MatchingCycle, Notification, Offer, OrderChange


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


def offers_closing_soon(*, limit: int = 20) -> list[Offer]:
    """Open offers with a closing time, soonest first."""
    return list(
        Offer.objects.filter(state=Offer.State.OPEN, closes_at__isnull=False)
        .select_related("market")
        .order_by("closes_at", "pk")[:limit]
    )
