"""Reading live subscriptions (SPEC 8.3): a user's own rows, their outbox, and the log as a
subscription's owner sees it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from exchange.models import Event, Subscription, SubscriptionNotification
from exchange.selectors.events import EVENT_COLUMNS, event_row_json, events_visible


def subscription_list(*, owner: User) -> QuerySet[Subscription]:
    """``owner``'s subscriptions, newest first."""
    return Subscription.objects.filter(owner=owner).order_by("-id")


def subscription_get(*, owner: User, subscription_id: int) -> Subscription | None:
    """``owner``'s subscription ``subscription_id``; None for anyone else's (no one learns
    that another user's exists)."""
    return Subscription.objects.filter(owner=owner, id=subscription_id).first()


def subscription_active_count(*, owner: User) -> int:
    return Subscription.objects.filter(owner=owner, state=Subscription.State.ACTIVE).count()


def notification_json(n: int, seq: int, data: Any) -> dict[str, Any]:
    """A notification as the REST outbox and the ``sub:<id>`` stream carry it."""
    return {"n": n, "seq": seq, "data": data}


def subscription_notifications(
    *, subscription_id: int, after: int, upto: int | None = None, limit: int
) -> list[dict[str, Any]]:
    """At most ``limit`` notifications of the subscription with ``after < n`` (``<= upto``),
    in ``n`` order, each as ``notification_json`` writes it."""
    rows = SubscriptionNotification.objects.filter(subscription_id=subscription_id, n__gt=after)
    if upto is not None:
        rows = rows.filter(n__lte=upto)
    return [
        notification_json(*row)
        for row in rows.order_by("n").values_list("n", "seq", "data")[:limit]
    ]


def subscription_position(*, subscription_id: int) -> tuple[int, str] | None:
    """The subscription's last ``n`` and its state, read together; None if it is gone."""
    return Subscription.objects.filter(id=subscription_id).values_list("last_n", "state").first()


def subscription_owner_id(*, subscription_id: int) -> int | None:
    return (
        Subscription.objects.filter(id=subscription_id).values_list("owner_id", flat=True).first()
    )


def subscription_log_read(*, owner: User, after: int, upto: int) -> list[dict[str, Any]]:
    """The events ``owner`` may see (SPEC 5.6) with ``after < seq <= upto``, in ``seq``
    order, as ``event_row_json`` writes them: the one place a subscription reads the log,
    history and live alike (so that a faster or replicated historic read replaces it alone).
    The caller bounds ``upto - after``."""
    rows = events_visible(user=owner, after=after).filter(seq__lte=upto)
    return [event_row_json(*row) for row in rows.values_list(*EVENT_COLUMNS)]


def subscriptions_behind(*, log_end: int, limit: int) -> list[int]:
    """Up to ``limit`` active subscriptions that have not been fed the log up to
    ``log_end``, by id."""
    return list(
        Subscription.objects.filter(state=Subscription.State.ACTIVE, cursor__lt=log_end)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )


def log_seq_before(*, time: Any) -> int | None:
    """The ``seq`` just before the log's first event at or after ``time`` (None if no
    event is that late): where a history starting at ``time`` begins. ``time`` never
    decreases along ``seq`` (the writer's rule), so the time index answers it."""
    first = (
        Event.objects.filter(time__gte=time).order_by("time", "seq").values_list("seq", flat=True)
    ).first()
    return None if first is None else first - 1
