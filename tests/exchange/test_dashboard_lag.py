"""The staff dashboard's lag (issue 39): the subscriptions more than
``SUBSCRIPTION_LAG_SECONDS`` behind the log, in either mode, and the subscription engine's
partitions when it is on; exact cells, numbers written as the staff pages write them, and
a bounded number of queries."""

from __future__ import annotations

import datetime as dt
import html
import re
import types

import pytest

import exchange.views.dashboard as dashboard_view
from exchange.models import EventCounter, Subscription, SubscriptionPartition
from tests.factories import StaffFactory, UserFactory
from tests.subscriptions.log import append_at, trade

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2031, 3, 4, 9, tzinfo=dt.UTC)


def _at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture
def log():
    """Four trades, at T0 and 10, 20 and 30 s after."""
    for i in range(4):
        append_at([trade("1.00", trade_id=i + 1)], _at(10 * i))


def _sub(owner, kind: str, cursor: int, state: str = "active", **fields) -> Subscription:
    return Subscription.objects.create(
        owner=owner, kind=kind, query="q", state=state, created_at=T0, now=T0, seam=0,
        cursor=cursor, evaluator=b"kept", **fields,
    )  # fmt: skip


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _page(client, monkeypatch, now: dt.datetime) -> str:
    monkeypatch.setattr(dashboard_view, "timezone", types.SimpleNamespace(now=lambda: now))
    client.force_login(StaffFactory(username="root"))
    response = client.get("/staff/")
    assert response.status_code == 200
    return response.content.decode()


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The body cells of the table labelled by ``table_id``, row by row."""
    table = re.search(rf'<table[^>]*aria-labelledby="{table_id}">(.*?)</table>', page, re.S)
    assert table is not None, table_id
    body = re.search(r"<tbody>(.*?)</tbody>", table.group(1), re.S)
    assert body is not None
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)
    ]


def test_the_pass_mode_lists_the_subscriptions_behind_by_more_than_the_setting(
    client, monkeypatch, settings, log
):
    settings.SUBSCRIPTION_ENGINE = False
    ann, bob = UserFactory(username="ann"), UserFactory(username="bob")
    # behind since T0 (4 events), since 20 s (2 events), since 30 s (1 event, only 2 s),
    # at the end, and a paused one standing still at 0
    first = _sub(ann, "events", 0)
    second = _sub(ann, "composite", 2)
    _sub(bob, "state", 3)
    _sub(bob, "events", 4)
    _sub(bob, "events", 0, state="paused")
    page = _page(client, monkeypatch, _at(32))
    assert _rows(page, "lagging") == [
        [f"subscription {first.pk}", "ann", "form 1: events", "4 events", "32.0 s"],
        [f"subscription {second.pk}", "ann", "form 2: composite", "2 events", "12.0 s"],
    ]
    text = _text(page)
    assert "first unread event is more than 5 s old" in text
    # the engine's partitions are not shown without the engine
    assert 'id="engine-partitions"' not in page
    # the setting moves the threshold
    settings.SUBSCRIPTION_LAG_SECONDS = 15
    assert _rows(_page(client, monkeypatch, _at(32)), "lagging") == [
        [f"subscription {first.pk}", "ann", "form 1: events", "4 events", "32.0 s"],
    ]


def test_nobody_behind_says_so(client, monkeypatch, settings, log):
    settings.SUBSCRIPTION_ENGINE = False
    _sub(UserFactory(username="ann"), "events", 3)
    page = _page(client, monkeypatch, _at(34))
    assert 'aria-labelledby="lagging"' not in page
    assert "None: every active subscription is within 5 s of the log." in _text(page)


def test_numbers_are_grouped_and_counted(client, monkeypatch, settings, log):
    settings.SUBSCRIPTION_ENGINE = False
    # a log end far past the events here: 1,234 events behind, one of them for an hour
    EventCounter.objects.filter(id=1).update(last_seq=1234)
    one = _sub(UserFactory(username="ann"), "state", 0)
    assert _rows(_page(client, monkeypatch, _at(3600)), "lagging") == [
        [f"subscription {one.pk}", "ann", "form 4: watch", "1,234 events", "3,600.0 s"],
    ]


def test_the_engine_mode_shows_each_partition_and_where_its_subscriptions_stand(
    client, monkeypatch, settings, log
):
    settings.SUBSCRIPTION_ENGINE = True
    settings.SUBSCRIPTION_ENGINE_PARTITIONS = 3
    now = _at(32)
    # partition 0 held by eng-a at seq 3, checkpointed 40 s ago; partition 1's lease ran
    # out at seq 1; partition 2 has no row yet (no process has taken it)
    SubscriptionPartition.objects.create(
        partition=0, owner="eng-a", expires_at=now + dt.timedelta(seconds=4), cursor=3,
        checkpoint_cursor=2, checkpointed_at=now - dt.timedelta(seconds=40),
    )  # fmt: skip
    SubscriptionPartition.objects.create(
        partition=1, owner="eng-b", expires_at=now - dt.timedelta(seconds=1), cursor=1
    )
    ann = UserFactory(username="ann")
    # Each stands at the later of its row's cursor and its partition's
    _sub(ann, "events", 0, id=3000)  # partition 0: at 3, the event after 2 s old
    behind = _sub(ann, "pattern", 0, id=3001)  # partition 1: at 1, 22 s
    checkpointed = _sub(ann, "events", 2, id=3004)  # partition 1: at 2, 12 s
    _sub(ann, "events", 4, id=3005)  # partition 2: at the end
    page = _page(client, monkeypatch, now)
    assert _rows(page, "engine-partitions") == [
        ["0", "eng-a", "3", "1 event", "2.0 s", "40.0 s ago"],
        ["1", "none (lease free)", "1", "3 events", "22.0 s", "never"],
        ["2", "none (lease free)", "0", "4 events", "32.0 s", "never"],
    ]
    assert _rows(page, "lagging") == [
        [f"subscription {behind.pk}", "ann", "form 3: pattern", "3 events", "22.0 s"],
        [f"subscription {checkpointed.pk}", "ann", "form 1: events", "2 events", "12.0 s"],
    ]


@pytest.mark.parametrize(("engine", "queries"), [(False, 1), (True, 2)])
def test_the_lag_reads_in_one_query_and_one_more_for_the_engine_however_many_rows(
    settings, monkeypatch, log, engine, queries, django_assert_num_queries
):
    settings.SUBSCRIPTION_ENGINE = engine
    owners = [UserFactory() for _ in range(3)]
    for i in range(80):
        _sub(owners[i % 3], "events", i % 4)
    monkeypatch.setattr(dashboard_view, "timezone", types.SimpleNamespace(now=lambda: _at(34)))
    with django_assert_num_queries(queries):
        lag = dashboard_view._lag()
    # 60 behind by more than 5 s (cursors 0, 1 and 2), the 50 longest shown, longest first
    assert (lag["total"], len(lag["rows"])) == (60, 50)
    assert [r["behind_seconds"] for r in lag["rows"]] == ["34.0 s"] * 20 + ["24.0 s"] * 20 + [
        "14.0 s"
    ] * 10
