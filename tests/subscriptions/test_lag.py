"""A subscription behind the log (issue 39): its ``sub:<id>`` stream is told ``lagging``
each round while it is more than ``SUBSCRIPTION_LAG_SECONDS`` behind and ``caught_up``
once it is not; ``GET /subscriptions/<id>/`` says how many events it has still to read."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest
from channels.db import database_sync_to_async

from exchange.celery import app
from exchange.models import Subscription, SubscriptionPartition
from exchange.redis_clients import redis_client
from exchange.services import events as event_service
from exchange.services import subscription_lag as lag_service
from exchange.services import subscriptions as service
from exchange.services.tokens import token_issue
from tests.api.conftest import client_for
from tests.factories import UserFactory
from tests.realtime.client import ask, connect
from tests.subscriptions.log import DAY, advance, append_at, trade

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "SELECT price WHERE type = 'trade'"
URL = "/api/v1/subscriptions/"


@pytest.fixture(autouse=True)
def no_advance_requests(monkeypatch):
    """The tests advance subscriptions themselves (as tests/subscriptions/test_stream.py)."""
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)


@pytest.fixture(autouse=True)
def no_lagging_kept():
    redis_client().delete(lag_service.lagging_key())
    yield
    redis_client().delete(lag_service.lagging_key())


def _at(seconds: float) -> dt.datetime:
    return DAY + dt.timedelta(seconds=seconds)


def _two_trades() -> None:
    append_at([trade("1.00", trade_id=1)], _at(0))
    append_at([trade("1.10", trade_id=2)], _at(1))


async def _take(ws, count: int) -> list[dict]:
    return [json.loads(await ws.receive_from(timeout=10)) for _ in range(count)]


def test_the_stream_is_told_while_it_lags_and_once_when_it_has_caught_up():
    alice = UserFactory(username="alice")
    key = token_issue(user=alice).key
    sub = service.subscription_create(owner=alice, query=QUERY)
    stream = f"sub:{sub.pk}"
    _round = database_sync_to_async(lag_service.subscriptions_lag_round)

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        answer = await ask(ws, {"action": "subscribe", "stream": stream})
        await database_sync_to_async(_two_trades)()
        # 3 s after the first unread event: not yet lagging
        early = await _round(now=_at(3))
        quiet_early = await ws.receive_nothing(timeout=0.3)
        # 7 and 12 s after: one frame each round
        first = await _round(now=_at(7))
        second = await _round(now=_at(12))
        lagging = await _take(ws, 2)
        # it reads the log: its notifications, then caught_up once, then nothing
        await database_sync_to_async(advance)(sub)
        notes = await _take(ws, 2)
        caught = await _round(now=_at(13))
        back = await _take(ws, 1)
        after = await _round(now=_at(20))
        quiet = await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return answer, early, quiet_early, first, second, lagging, notes, caught, back, after, quiet

    answer, early, quiet_early, first, second, lagging, notes, caught, back, after, quiet = (
        asyncio.run(scenario())
    )
    assert answer == {"type": "subscribed", "stream": stream}
    assert (early, quiet_early) == ({"lagging": [], "caught_up": []}, True)
    assert first == second == {"lagging": [sub.pk], "caught_up": []}
    assert lagging == [
        {"type": "lagging", "stream": stream, "behind_events": 2, "behind_seconds": 7.0},
        {"type": "lagging", "stream": stream, "behind_events": 2, "behind_seconds": 12.0},
    ]
    assert [(n["type"], n["n"], n["data"]) for n in notes] == [
        ("notification", 1, {"price": "1.00"}),
        ("notification", 2, {"price": "1.10"}),
    ]
    assert caught == {"lagging": [], "caught_up": [sub.pk]}
    assert back == [{"type": "caught_up", "stream": stream}]
    assert (after, quiet) == ({"lagging": [], "caught_up": []}, True)


def test_only_the_owners_stream_is_told_and_a_paused_one_gets_no_caught_up():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    key = token_issue(user=alice).key
    mine = service.subscription_create(owner=alice, query=QUERY)
    theirs = service.subscription_create(owner=bob, query=QUERY)
    _two_trades()

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        await ask(ws, {"action": "subscribe", "stream": f"sub:{mine.pk}"})
        told = await database_sync_to_async(lag_service.subscriptions_lag_round)(now=_at(10))
        frames = await _take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return told, frames, quiet

    told, frames, quiet = asyncio.run(scenario())
    assert told == {"lagging": [mine.pk, theirs.pk], "caught_up": []}
    assert frames == [
        {"type": "lagging", "stream": f"sub:{mine.pk}", "behind_events": 2, "behind_seconds": 10.0}
    ]
    assert quiet
    # a paused subscription is not lagging, nor catching up
    service.subscription_pause(owner=bob, subscription_id=theirs.pk)
    assert lag_service.subscriptions_lag_round(now=_at(11)) == {
        "lagging": [mine.pk],
        "caught_up": [],
    }


def test_the_rest_detail_says_how_many_events_it_has_still_to_read():
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]
    assert client.get(f"{URL}{sid}/").json()["behind_events"] == 0
    _two_trades()
    assert client.get(f"{URL}{sid}/").json()["behind_events"] == 2
    advance(Subscription.objects.get(pk=sid))
    assert client.get(f"{URL}{sid}/").json()["behind_events"] == 0
    # a paused one is not behind: it stands still on purpose
    append_at([trade("1.20", trade_id=3)], _at(2))
    assert client.post(f"{URL}{sid}/pause/").status_code == 200
    assert client.get(f"{URL}{sid}/").json()["behind_events"] is None
    # the list and the other answers keep their shape
    assert "behind_events" not in client.get(URL).json()["results"][0]


def test_with_the_engine_a_subscription_stands_where_its_partition_does(settings):
    settings.SUBSCRIPTION_ENGINE_PARTITIONS = 4
    alice = UserFactory(username="alice")
    _two_trades()
    sub = Subscription.objects.create(
        id=4001, owner=alice, kind="events", query=QUERY, created_at=_at(0), now=_at(0),
        seam=0, cursor=0, evaluator=b"kept",
    )  # fmt: skip
    client = client_for(alice)
    # the engine has committed partition 1 (4001 % 4) up to seq 1; the row keeps its
    # checkpoint at 0
    SubscriptionPartition.objects.create(partition=1, owner="eng", cursor=1)
    assert client.get(f"{URL}{sub.pk}/").json()["behind_events"] == 1
    assert lag_service.subscriptions_lag_round(now=_at(9)) == {
        "lagging": [sub.pk],
        "caught_up": [],
    }
    SubscriptionPartition.objects.filter(partition=1).update(cursor=2)
    assert client.get(f"{URL}{sub.pk}/").json()["behind_events"] == 0
    assert lag_service.subscriptions_lag_round(now=_at(10)) == {
        "lagging": [],
        "caught_up": [sub.pk],
    }


def test_beat_runs_the_round_on_the_default_queue_every_lag_period(settings):
    entries = [
        e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == lag_service.LAG_TASK
    ]
    assert [e["schedule"] for e in entries] == [settings.SUBSCRIPTION_LAG_SECONDS]
    assert lag_service.LAG_TASK not in settings.CELERY_TASK_ROUTES
    app.loader.import_default_modules()
    assert lag_service.LAG_TASK in app.tasks
