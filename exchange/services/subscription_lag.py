"""Telling a lagging subscription's followers so (issue 39): a subscription that falls more
than ``SUBSCRIPTION_LAG_SECONDS`` behind the log (``selectors.subscription_lag``) gets a
``{"type": "lagging", "stream": "sub:<id>", "behind_events", "behind_seconds"}`` frame on
its ``sub:<id>`` stream each round while it lasts, and ``{"type": "caught_up", "stream"}``
in the first round it no longer lags (unless it has stopped being active meanwhile: a
paused or ended one is not catching up, and its stream says so itself).

A round is beat's (``exchange.subscriptions_lag``, every ``SUBSCRIPTION_LAG_SECONDS``), on
the default queue: one statement compares every active subscription's cursor with the
log's end, nothing on the consumers' or the advance's path. The set of the subscriptions
told "lagging" lives in Redis between rounds.
"""

from __future__ import annotations

import datetime as dt
from typing import cast

from django.conf import settings

from exchange.models import Subscription
from exchange.realtime.streams import group_for, group_send_all
from exchange.redis_clients import redis_client
from exchange.selectors.subscription_lag import subscriptions_lagging
from exchange.services.subscriptions import stream_name

LAG_TASK = "exchange.subscriptions_lag"


def lagging_key() -> str:
    """Under the channel layer's prefix, which test runs make unique."""
    return f"{settings.CHANNEL_LAYERS['default']['CONFIG']['prefix']}:subscriptions:lagging"


def lagging_frame(*, subscription_id: int, behind_events: int, behind_seconds: float) -> dict:
    return {
        "type": "lagging",
        "stream": stream_name(subscription_id),
        "behind_events": behind_events,
        "behind_seconds": round(behind_seconds, 1),
    }


def caught_up_frame(*, subscription_id: int) -> dict:
    return {"type": "caught_up", "stream": stream_name(subscription_id)}


def subscriptions_lag_round(*, now: dt.datetime) -> dict[str, list[int]]:
    """One round: the frames for the subscriptions lagging at ``now`` and for those told
    so last round that no longer lag; returns the ids of each (``lagging``,
    ``caught_up``)."""
    rows = subscriptions_lagging(now=now, limit=None)["rows"]
    lagging = {row["id"] for row in rows}
    client = redis_client()
    key = lagging_key()
    before = {int(member) for member in cast(set[bytes], client.smembers(key))}
    gone = sorted(before - lagging)
    caught_up = sorted(
        Subscription.objects.filter(pk__in=gone, state=Subscription.State.ACTIVE).values_list(
            "pk", flat=True
        )
    )
    messages = [
        (
            group_for(stream_name(row["id"])),
            {
                "type": "stream.frame",
                "frame": lagging_frame(
                    subscription_id=row["id"],
                    behind_events=row["behind_events"],
                    behind_seconds=row["behind_seconds"],
                ),
            },
        )
        for row in rows
    ]
    messages += [
        (
            group_for(stream_name(sub_id)),
            {"type": "stream.frame", "frame": caught_up_frame(subscription_id=sub_id)},
        )
        for sub_id in caught_up
    ]
    with client.pipeline() as pipe:
        pipe.delete(key)
        if lagging:
            pipe.sadd(key, *sorted(lagging))
        pipe.execute()
    if messages:
        group_send_all(messages)
    return {"lagging": sorted(lagging), "caught_up": caught_up}
