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
from exchange.models import (
    EventCounter,
    Subscription,
    SubscriptionEngineProcess,
    SubscriptionPartition,
)
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
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)
    ]


def test_lists_the_subscriptions_behind_by_more_than_the_setting(
    client, monkeypatch, settings, log
):
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
    # with no engine process beating, the engine's panel says so and every partition is free
    assert (
        "No subscription engine process has beaten: none is running, so no live subscription "
        "advances."
    ) in text
    assert len(_rows(page, "engine-partitions")) == settings.SUBSCRIPTION_ENGINE_PARTITIONS
    assert {row[1] for row in _rows(page, "engine-partitions")} == {"none (lease free)"}
    # the setting moves the threshold
    settings.SUBSCRIPTION_LAG_SECONDS = 15
    assert _rows(_page(client, monkeypatch, _at(32)), "lagging") == [
        [f"subscription {first.pk}", "ann", "form 1: events", "4 events", "32.0 s"],
    ]


def test_nobody_behind_says_so(client, monkeypatch, log):
    _sub(UserFactory(username="ann"), "events", 3)
    page = _page(client, monkeypatch, _at(34))
    assert 'aria-labelledby="lagging"' not in page
    assert "None: every active subscription is within 5 s of the log." in _text(page)


def test_numbers_are_grouped_and_counted(client, monkeypatch, log):
    # a log end far past the events here: 1,234 events behind, one of them for an hour
    EventCounter.objects.filter(id=1).update(last_seq=1234)
    one = _sub(UserFactory(username="ann"), "state", 0)
    assert _rows(_page(client, monkeypatch, _at(3600)), "lagging") == [
        [f"subscription {one.pk}", "ann", "form 4: watch", "1,234 events", "3,600.0 s"],
    ]


def test_shows_each_partition_and_where_its_subscriptions_stand(client, monkeypatch, settings, log):
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


def test_the_lag_reads_in_three_queries_however_many_rows(
    settings, monkeypatch, log, django_assert_num_queries
):
    owners = [UserFactory() for _ in range(3)]
    for i in range(80):
        _sub(owners[i % 3], "events", i % 4)
    monkeypatch.setattr(dashboard_view, "timezone", types.SimpleNamespace(now=lambda: _at(34)))
    # the lagging subscriptions, the engine's partitions, its processes
    for i in range(30):
        SubscriptionEngineProcess.objects.create(
            name=f"eng-{i}", heartbeat_at=_at(33), started_at=T0, partitions=0
        )
    with django_assert_num_queries(3):
        lag = dashboard_view._lag()
    # 60 behind by more than 5 s (cursors 0, 1 and 2), the 50 longest shown, longest first
    assert (lag["total"], len(lag["rows"])) == (60, 50)
    assert [r["behind_seconds"] for r in lag["rows"]] == ["34.0 s"] * 20 + ["24.0 s"] * 20 + [
        "14.0 s"
    ] * 10


def test_each_engine_process_with_its_partitions_lag_and_checkpoint(
    client, monkeypatch, settings, log
):
    # Given the engine's rows as its processes leave them
    settings.SUBSCRIPTION_ENGINE_PARTITIONS = 4
    settings.SUBSCRIPTION_ENGINE_LEASE_SECONDS = 5
    now = _at(32)

    def ago(seconds: float) -> dt.datetime:
        return now - dt.timedelta(seconds=seconds)

    # eng-a holds 0 (at seq 3, checkpointed 40 s ago) and 1 (at 2, 10 s ago); eng-b holds 2
    # at the log's end, never checkpointed; eng-c stopped a minute ago, its lease on 3 ran out
    for partition, owner, expires, cursor, checkpointed in (
        (0, "eng-a", 4, 3, ago(40)),
        (1, "eng-a", 4, 2, ago(10)),
        (2, "eng-b", 3, 4, None),
        (3, "eng-c", -1, 1, ago(70)),
    ):
        SubscriptionPartition.objects.create(
            partition=partition, owner=owner, expires_at=now + dt.timedelta(seconds=expires),
            cursor=cursor, checkpoint_cursor=cursor, checkpointed_at=checkpointed,
        )  # fmt: skip
    for name, beat, subscriptions, lag in (
        ("eng-c", 60, 10, 7),
        ("eng-b", 0.5, 3, 0),
        ("eng-a", 1.5, 1234, 9),
    ):
        SubscriptionEngineProcess.objects.create(
            name=name, heartbeat_at=ago(beat), started_at=T0, partitions=2,
            subscriptions=subscriptions, lag=lag,
        )  # fmt: skip
    # When staff open the dashboard
    page = _page(client, monkeypatch, now)
    # Then each process: the live by name, then the stopped; lag as its furthest partition's
    # (events and the age of the first unread event), its latest checkpoint's age; a
    # stopped one holding nothing shows the lag of its last beat
    assert _rows(page, "engine-processes") == [
        ["eng-a", "1.5 s ago", "2 partitions: 0, 1", "1,234", "2 events", "12.0 s", "10.0 s ago"],
        ["eng-b", "0.5 s ago", "1 partition: 2", "3", "0 events", "0.0 s", "never"],
        ["eng-c", "stopped: 60.0 s ago", "none", "10", "7 events", "—", "—"],
    ]
    assert '<tr class="stopped"><td>eng-c</td>' in page
    assert _rows(page, "engine-partitions") == [
        ["0", "eng-a", "3", "1 event", "2.0 s", "40.0 s ago"],
        ["1", "eng-a", "2", "2 events", "12.0 s", "10.0 s ago"],
        ["2", "eng-b", "4", "0 events", "0.0 s", "never"],
        ["3", "none (lease free)", "1", "3 events", "22.0 s", "70.0 s ago"],
    ]


def test_no_engine_process_says_nothing_advances(client, monkeypatch, settings, log):
    page = _page(client, monkeypatch, _at(32))
    assert 'aria-labelledby="engine-processes"' not in page
    assert (
        "No subscription engine process has beaten: none is running, so no live subscription "
        "advances."
    ) in _text(page)
