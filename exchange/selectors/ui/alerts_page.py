"""Reads for the Alerts and feeds page (SPEC 8.4): each subscription's latest notifications,
and what a backtest's chart needs (the events' times and the market's trade prices)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db.models import F, Q

from exchange.models import Event, Market, Offer, Subscription, SubscriptionNotification
from exchange.selectors.subscriptions import notification_json

# Notifications a feed shows when the page is drawn (the newest ones); older ones stay in
# the outbox (``GET /api/v1/subscriptions/<id>/notifications/``).
FEED_SHOWN = 30
# Trade prices one backtest chart draws at most (the latest ones of the range).
CHART_POINTS = 5000


def alerts_feeds(*, owner: User, shown: int | None = None) -> dict[int, list[dict[str, Any]]]:
    """The newest ``shown`` notifications of each of ``owner``'s subscriptions, newest
    first, by subscription id, in one query. Each feed is the run of ``n`` up to the
    subscription's ``last_n`` as read here, with no hole: a page drawn from it resumes the
    ``sub:<id>`` stream after its first item's ``n``. ``shown`` defaults to ``FEED_SHOWN``."""
    shown = FEED_SHOWN if shown is None else shown
    rows = (
        SubscriptionNotification.objects.filter(
            subscription__owner=owner, n__gt=F("subscription__last_n") - shown
        )
        .order_by("subscription_id", "-n")
        .values_list("subscription_id", "n", "seq", "data")
    )
    feeds: dict[int, list[dict[str, Any]]] = {}
    for subscription_id, n, seq, data in rows:
        feeds.setdefault(subscription_id, []).append(notification_json(n, seq, data))
    return feeds


def alerts_event_places(*, user: User, seqs: list[int]) -> dict[int, tuple[dt.datetime, str]]:
    """The time and subject of the events ``seqs`` that ``user`` may see (SPEC 5.6: public
    events and their own private ones), by ``seq``."""
    visible = Q(owner__isnull=True) | Q(owner=user)
    rows = Event.objects.filter(visible, seq__in=set(seqs)).values_list("seq", "time", "subject")
    return {seq: (time, subject) for seq, time, subject in rows}


def alerts_chart_subject(places: dict[int, tuple[dt.datetime, str]]) -> str | None:
    """The market a backtest is drawn on: the subject most of its notified events are
    about (ties to the first in name order), None when there are none."""
    counts = Counter(subject for _, subject in places.values())
    if not counts:
        return None
    return min(counts, key=lambda subject: (-counts[subject], subject))


def alerts_trade_prices(
    *, subject: str, since: dt.datetime, until: dt.datetime, limit: int = CHART_POINTS
) -> list[tuple[dt.datetime, Decimal]]:
    """The market's trade prices in ``[since, until)``, from its public ``trade`` events (the
    ones a subscription reads), oldest first; the latest ``limit`` of them."""
    rows = list(
        Event.objects.filter(
            type="trade", subject=subject, owner__isnull=True, time__gte=since, time__lt=until
        )
        .order_by("-seq")
        .values_list("time", "data")[:limit]
    )
    rows.reverse()
    return [(time, Decimal(data["price"])) for time, data in rows if "price" in data]


def alerts_open_offer(*, owner: User) -> Offer | None:
    """``owner``'s newest open offer, for the gallery's "best bid of my offer" example."""
    return (
        Offer.objects.filter(seller=owner, state=Offer.State.OPEN)
        .select_related("market")
        .order_by("-id")
        .first()
    )


def alerts_markets(*, subjects: set[str]) -> dict[str, Market]:
    """The markets of ``subjects`` by subject (a feed row's units); unknown ones left out."""
    return {market.subject: market for market in Market.objects.filter(subject__in=subjects)}


def alerts_notes(
    *, owner: User, subscription_id: int, after: int, limit: int
) -> list[dict[str, Any]] | None:
    """``owner``'s subscription's notifications after ``n`` = ``after``, in ``n`` order (at
    most ``limit``); None if it is not theirs."""
    if not Subscription.objects.filter(owner=owner, id=subscription_id).exists():
        return None
    rows = (
        SubscriptionNotification.objects.filter(subscription_id=subscription_id, n__gt=after)
        .order_by("n")
        .values_list("n", "seq", "data")[:limit]
    )
    return [notification_json(n, seq, data) for n, seq, data in rows]


def alerts_recent(*, owner: User, limit: int) -> list[tuple[Subscription, dict[str, Any]]]:
    """The newest ``limit`` notifications of all ``owner``'s subscriptions, newest first,
    each with its subscription (the account page's list)."""
    rows = (
        SubscriptionNotification.objects.filter(subscription__owner=owner)
        .select_related("subscription")
        .order_by("-id")[:limit]
    )
    return [(row.subscription, notification_json(row.n, row.seq, row.data)) for row in rows]


def alerts_followed(*, owner: User) -> list[dict[str, Any]]:
    """``owner``'s active and paused subscriptions as every page follows them (the header's
    toast and badge): id, name and the last ``n`` now, oldest first."""
    live = (Subscription.State.ACTIVE, Subscription.State.PAUSED)
    rows = (
        Subscription.objects.filter(owner=owner, state__in=live)
        .order_by("id")
        .values_list("id", "name", "last_n")
    )
    return [{"id": pk, "name": name, "after": last_n} for pk, name, last_n in rows]
