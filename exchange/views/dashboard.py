"""The staff dashboard at ``/staff/``: cycle health, orders set aside, every open auction
with its winner-to-be, and SPEC 8's event log, replica, subscriptions and dissemination."""

import datetime as dt
import logging
from typing import Any

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from redis.exceptions import RedisError

from exchange.numbers import MISSING, counted, grouped_text
from exchange.selectors import log_status, subscription_lag
from exchange.selectors.dashboard import cycle_health, open_auctions, orders_set_aside
from exchange.selectors.dissemination import dissemination_recent
from exchange.selectors.ui.staff import MarketNumbers, market_numbers
from exchange.services.closing import Preview, offer_close_previews

# The most open auctions the page lists; past that it says how many more there are and
# links to the admin's list, so that one request's work stays bounded.
AUCTIONS_SHOWN = 200
# The optimizer's latest choices the page shows.
CHOICES_SHOWN = 20

log = logging.getLogger(__name__)


def _auction_row(preview: Preview, numbers: MarketNumbers) -> dict:
    bid = preview.bid
    return {
        "offer": preview.offer,
        "buyer": bid.buyer.get_username() if bid else None,
        "bid": bid,
        "value": numbers.price(preview.value),
        "price": numbers.price(preview.price),
        "quantity": numbers.quantity(preview.quantity),
        "unusable": preview.unusable,
        "over_limit": preview.over_limit,
    }


def _spec8() -> dict[str, Any]:
    """SPEC 8's panel. The choices live in Redis: without it the panel says so (``None``)
    rather than failing the page; the replica's own failures are ``replica_status``'s."""
    try:
        choices = dissemination_recent(limit=CHOICES_SHOWN)
    except RedisError:
        log.warning("the dissemination choices could not be read from Redis", exc_info=True)
        choices = None
    return {
        "head": log_status.log_head(),
        "replica": log_status.replica_status(),
        "partitions": log_status.log_partitions(),
        "by_kind": log_status.subscriptions_by_kind(),
        "states": log_status.STATES,
        "suspended": log_status.subscriptions_suspended(),
        "patterns": log_status.pattern_instances(),
        "choices": choices,
    }


def _seconds(value: float | None) -> str | None:
    """Seconds as the staff pages write them: one place, thousands grouped (``1,234.5 s``)."""
    return None if value is None else f"{grouped_text(f'{value:.1f}')} s"


def _processes(now: dt.datetime, partitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subscription engine's processes (issue 35), written for people."""
    return [
        {
            "name": p["name"],
            "live": p["live"],
            "heartbeat": _seconds(p["heartbeat_age"]),
            "partitions": (
                f"{counted(len(p['partitions']), 'partition')}: "
                + ", ".join(str(n) for n in p["partitions"])
                if p["partitions"]
                else "none"
            ),
            "subscriptions": grouped_text(p["subscriptions"]),
            "behind_events": counted(p["behind_events"], "event"),
            # None: it holds no partition, so no event of the log waits on it
            "behind_seconds": _seconds(p["behind_seconds"]) or MISSING,
            "checkpoint": (
                MISSING
                if not p["partitions"]
                else "never"
                if p["checkpoint_age"] is None
                else f"{_seconds(p['checkpoint_age'])} ago"
            ),
        }
        for p in subscription_lag.engine_processes_lag(now=now, partitions=partitions)
    ]


def _lag() -> dict[str, Any]:
    """The subscriptions lagging behind the log, and the subscription engine's processes
    and partitions with their lag (issues 39 and 35), written for people."""
    now = timezone.now()
    forms = dict(log_status.FORMS)
    lagging = subscription_lag.subscriptions_lagging(now=now)
    by_partition = subscription_lag.engine_partitions_lag(now=now)
    partitions = [
        {
            "partition": p["partition"],
            "owner": p["owner"],
            "cursor": grouped_text(p["cursor"]),
            "behind_events": counted(p["behind_events"], "event"),
            "behind_seconds": _seconds(p["behind_seconds"]),
            "checkpoint_age": _seconds(p["checkpoint_age"]),
        }
        for p in by_partition
    ]
    return {
        "seconds": grouped_text(f"{settings.SUBSCRIPTION_LAG_SECONDS:g}"),
        "total": lagging["total"],
        "total_text": counted(lagging["total"], "subscription"),
        "rows": [
            {
                "id": r["id"],
                "owner": r["owner"],
                "form": forms.get(r["kind"], r["kind"]),
                "behind_events": counted(r["behind_events"], "event"),
                "behind_seconds": _seconds(r["behind_seconds"]),
            }
            for r in lagging["rows"]
        ],
        "processes": _processes(now, by_partition),
        "partitions": partitions,
    }


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    auctions = open_auctions(limit=AUCTIONS_SHOWN)
    numbers: dict[int, MarketNumbers] = {}
    rows = []
    for preview in offer_close_previews(offers=auctions.offers):
        market = preview.offer.market
        if market.pk not in numbers:
            numbers[market.pk] = market_numbers(market=market)
        rows.append(_auction_row(preview, numbers[market.pk]))
    return render(
        request,
        "staff/dashboard.html",
        {
            "health": cycle_health(),
            "set_aside": orders_set_aside(),
            "auctions": rows,
            "more_auctions": auctions.total - len(rows),
            "spec8": _spec8(),
            "lag": _lag(),
        },
    )
