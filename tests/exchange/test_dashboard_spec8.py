"""The staff dashboard's SPEC 8 panel (issue 23): the selectors' exact figures on a small
log and a few subscriptions, and the page that shows them to staff only, whole when the
replica or Redis is away."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.conf import settings as django_settings
from django.db import connection
from redis.exceptions import RedisError

import exchange.views.dashboard as dashboard_view
from exchange.dissemination.choices import choice_record, choices_key
from exchange.models import EventCounter, Subscription, SubscriptionNotification
from exchange.redis_clients import redis_client
from exchange.selectors import log_status
from exchange.selectors.dissemination import dissemination_recent
from exchange.services.event_partitions import (
    DEFAULT_PARTITION,
    event_partitions_ensure,
    partition_name,
)
from exchange.services.events import events_insert
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions import parse_query
from matching.subscriptions.run.snapshot import snapshot_dump
from tests.factories import StaffFactory, UserFactory

pytestmark = pytest.mark.django_db

DAY1, DAY2 = dt.date(2026, 1, 1), dt.date(2026, 1, 2)
T = "FILTER{type = 'trade'}(EVENTS)"
# Each trade waits for a later trade on its market 5% higher: falling prices pile up.
RISE = (
    f"SELECT a.price, b.price FROM {T} AS a "
    f"NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} {T} AS b"
)
NOW = dt.datetime(2026, 1, 1, 9, tzinfo=dt.UTC)


def _at(day: dt.date, hour: int) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour), tzinfo=dt.UTC)


def _best(offer: int) -> tuple[str, str, None, dict]:
    return ("best_offer", "office.supplies.pencils", None, {"offer": offer, "matching_bids": 0})


@pytest.fixture
def log():
    """Six events: seq 1 in 2025 (the default partition), 2-4 on DAY1, 5-6 on DAY2."""
    event_partitions_ensure(first=DAY1, days=2)
    times = [
        dt.datetime(2025, 6, 1, tzinfo=dt.UTC),
        _at(DAY1, 10),
        _at(DAY1, 11),
        _at(DAY1, 12),
        _at(DAY2, 8),
        _at(DAY2, 9),
    ]
    events_insert([(_best(i), t) for i, t in enumerate(times, 1)], first_seq=1)
    EventCounter.objects.update_or_create(
        id=1, defaults={"last_seq": 6, "last_time": _at(DAY2, 10)}
    )
    return times


def _evaluator(query: str, prices: list[str]) -> Evaluator:
    """An evaluator of ``query`` pushed live trades on pencils at ``prices``."""
    evaluator = Evaluator(parse_query(query), now=NOW)
    evaluator.history_done()
    for seq, price in enumerate(prices, 1):
        event = {
            "seq": seq, "time": f"2026-01-01T10:0{seq}:00Z", "type": "trade",
            "subject": "office.supplies.pencils", "offer": 1, "trade": seq, "quantity": 1,
            "price": price,
        }  # fmt: skip
        evaluator.push(event, live=True)
    return evaluator


def _subscription(owner, kind: str, state: str = "active", **fields) -> Subscription:
    if state == "active" and "evaluator" not in fields:
        fields["evaluator"] = snapshot_dump(_evaluator("SELECT * WHERE type = 'trade'", []))
    return Subscription.objects.create(
        owner=owner, kind=kind, query="q", state=state, created_at=NOW, now=NOW, seam=0,
        cursor=0, **fields,
    )  # fmt: skip


@pytest.fixture
def subscriptions():
    """ann: an events subscription of each state, a composite, two patterns (3 and 1
    instances), a watch; bob: a watch suspended for an error and a pattern suspended at
    its state limit."""
    ann, bob = UserFactory(username="ann"), UserFactory(username="bob")
    _subscription(ann, "events")
    _subscription(ann, "events", "done", reason="completed")
    _subscription(ann, "composite")
    three = _subscription(
        ann, "pattern", evaluator=snapshot_dump(_evaluator(RISE, ["1.00", "0.99", "0.98"]))
    )
    one = _subscription(ann, "pattern", evaluator=snapshot_dump(_evaluator(RISE, ["1.00"])))
    _subscription(ann, "state")
    failed = _subscription(bob, "state", "suspended", reason="error", last_n=2)
    full = _subscription(bob, "pattern", "suspended", reason="state_limit", last_n=1)
    for sub, n, when in ((failed, 1, 10), (failed, 2, 11), (full, 1, 12)):
        SubscriptionNotification.objects.create(subscription=sub, n=n, seq=n, data={})
        SubscriptionNotification.objects.filter(subscription=sub, n=n).update(
            created_at=_at(DAY2, when)
        )
    return {"three": three, "one": one, "failed": failed, "full": full}


@pytest.fixture
def choices():
    redis_client().delete(choices_key())
    yield
    redis_client().delete(choices_key())


def _entry(seq: int, choice: str, measured: float | None) -> dict:
    entry = {
        "at": f"2026-01-02T10:00:0{seq}+00:00",
        "seq": seq,
        "choice": choice,
        "estimates": {
            "enumerate": {"messages": 2.0, "bytes": 120.0, "seconds": 0.0004},
            "relax": {"messages": 4, "bytes": 900, "seconds": 0.002},
            "reformulate": {"messages": 4, "bytes": 400, "seconds": 0.0005},
        },
    }
    if measured is not None:
        entry["measured_seconds"] = measured
    return entry


# -- the selectors ----------------------------------------------------------------------------


def test_the_head_is_the_last_events_seq_and_its_own_time_not_the_counters(log):
    assert log_status.log_head() == {"seq": 6, "time": _at(DAY2, 9)}


def test_an_empty_log_has_head_zero_and_no_time():
    EventCounter.objects.filter(id=1).delete()
    assert log_status.log_head() == {"seq": 0, "time": None}


def test_partitions_list_every_day_then_the_default_with_rows_and_total_size(log):
    got = log_status.log_partitions()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'exchange_event'::regclass"
        )
        sizes = dict(cursor.fetchall())
    days = sorted(name for name in sizes if name != DEFAULT_PARTITION)
    assert [p["name"] for p in got] == [*days, DEFAULT_PARTITION]
    rows = {p["name"]: p["rows"] for p in got}
    assert rows == {
        **dict.fromkeys(days, 0),
        partition_name(DAY1): 3,
        partition_name(DAY2): 2,
        DEFAULT_PARTITION: 1,
    }
    assert {p["name"]: p["bytes"] for p in got} == sizes
    first = got[days.index(partition_name(DAY1))]
    assert first["bounds"] == (
        "FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-01-02 00:00:00+00')"
    )
    assert got[-1]["bounds"] == "DEFAULT"


def test_no_replica_configured(settings):
    settings.HISTORY_DATABASE_URL = None
    got = log_status.replica_status()
    assert got["configured"] is False
    assert set(got) == {"configured", "senders"}


def test_an_unreachable_replica_is_reported_not_raised(settings):
    # A port nobody listens on: the connection is refused at once
    settings.HISTORY_DATABASE_URL = "postgres://nobody@127.0.0.1:9/nothing"
    got = log_status.replica_status()
    assert (got["configured"], got["reachable"]) == (True, False)
    assert "127.0.0.1" in got["error"]
    assert set(got) == {"configured", "senders", "reachable", "error"}


def test_a_history_database_that_is_no_standby_says_so(settings):
    # The test cluster's primary itself: reachable, not in recovery, nothing received
    settings.HISTORY_DATABASE_URL = settings.DATABASE_URL
    got = log_status.replica_status()
    assert {
        k: got[k] for k in ("configured", "reachable", "standby", "lag_bytes", "lag_seconds")
    } == {
        "configured": True,
        "reachable": True,
        "standby": False,
        "lag_bytes": None,
        "lag_seconds": None,
    }


def test_subscriptions_are_counted_by_form_and_state(subscriptions):
    assert log_status.subscriptions_by_kind() == [
        {"kind": "events", "label": "form 1: events", "total": 2,
         "counts": {"active": 1, "paused": 0, "done": 1, "suspended": 0}},
        {"kind": "composite", "label": "form 2: composite", "total": 1,
         "counts": {"active": 1, "paused": 0, "done": 0, "suspended": 0}},
        {"kind": "pattern", "label": "form 3: pattern", "total": 3,
         "counts": {"active": 2, "paused": 0, "done": 0, "suspended": 1}},
        {"kind": "state", "label": "form 4: watch", "total": 2,
         "counts": {"active": 1, "paused": 0, "done": 0, "suspended": 1}},
    ]  # fmt: skip


def test_suspended_subscriptions_newest_first_with_the_time_of_their_last_notice(subscriptions):
    failed, full = subscriptions["failed"], subscriptions["full"]
    assert log_status.subscriptions_suspended() == {
        "total": 2,
        "rows": [
            {"id": full.pk, "owner": "bob", "kind": "pattern", "reason": "state_limit",
             "at": _at(DAY2, 12)},
            {"id": failed.pk, "owner": "bob", "kind": "state", "reason": "error",
             "at": _at(DAY2, 11)},
        ],
    }  # fmt: skip
    assert log_status.subscriptions_suspended(limit=1)["rows"][0]["id"] == full.pk


def test_pattern_instances_come_from_the_stored_state_largest_first(subscriptions):
    three, one = subscriptions["three"], subscriptions["one"]
    got = log_status.pattern_instances()
    assert [(r["id"], r["owner"], r["instances"]) for r in got["rows"]] == [
        (three.pk, "ann", 3),
        (one.pk, "ann", 1),
    ]
    assert [r["state_bytes"] for r in got["rows"]] == [
        len(bytes(Subscription.objects.get(pk=s.pk).evaluator)) for s in (three, one)
    ]
    assert got["total"] == 2
    assert log_status.pattern_instances(limit=1)["rows"][0]["id"] == three.pk


def test_an_unreadable_pattern_state_shows_no_count_and_the_rest_still_read(subscriptions):
    Subscription.objects.filter(pk=subscriptions["one"].pk).update(evaluator=b"x" * 10_000)
    got = log_status.pattern_instances()
    assert [(r["id"], r["instances"]) for r in got["rows"]] == [
        (subscriptions["one"].pk, None),
        (subscriptions["three"].pk, 3),
    ]


def test_the_recent_choices_are_laid_out_with_estimates_in_milliseconds(choices):
    choice_record(_entry(1, "enumerate", 0.0009))
    choice_record(_entry(2, "reformulate", None))
    # The estimates of _entry, in the order of STRATEGIES, seconds as milliseconds
    laid_out = [
        ("enumerate", 2.0, 120.0, 0.4),
        ("relax", 4, 900, 2.0),
        ("reformulate", 4, 400, 0.5),
    ]
    assert dissemination_recent() == [
        {"at": dt.datetime(2026, 1, 2, 10, 0, 2, tzinfo=dt.UTC), "seq": 2, "choice": "reformulate",
         "estimates": laid_out, "chosen_ms": 0.5, "measured_ms": None},
        {"at": dt.datetime(2026, 1, 2, 10, 0, 1, tzinfo=dt.UTC), "seq": 1, "choice": "enumerate",
         "estimates": laid_out, "chosen_ms": 0.4, "measured_ms": 0.9},
    ]  # fmt: skip
    assert [c["seq"] for c in dissemination_recent(limit=1)] == [2]


# -- the page ---------------------------------------------------------------------------------


def test_only_staff_see_the_dashboard(client):
    assert client.get("/staff/").status_code == 302
    client.force_login(UserFactory())
    response = client.get("/staff/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def _text(page: str) -> str:
    """The page's text, tags dropped and whitespace folded, for exact phrases."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_panel_shows_each_figure(client, settings, log, subscriptions, choices):
    settings.HISTORY_DATABASE_URL = None
    choice_record(_entry(1, "enumerate", 0.0009))
    client.force_login(StaffFactory(username="root"))
    page = client.get("/staff/").content.decode()
    text = _text(page)
    assert "Head of the log seq 6 at 2026-01-02 09:00:00 UTC" in text
    assert "no replica configured: historic reads go to the primary" in text
    assert f"{partition_name(DAY1)} FOR VALUES FROM ('2026-01-01 00:00:00+00') TO " in text
    assert f"{DEFAULT_PARTITION} DEFAULT 1 " in text
    assert "form 3: pattern 2 0 0 1 3" in text
    assert "form 4: watch 1 0 0 1 2" in text
    failed = subscriptions["failed"]
    assert f"subscription {failed.pk} bob state error 2026-01-02 11:00:00 UTC" in text
    assert f"subscription {subscriptions['three'].pk} ann 3 " in text
    assert (
        "seq 1 enumerate enumerate: 2.0 msg, 120 B, 0.400 ms; relax: 4.0 msg, 900 B, 2.000 ms; "
        "reformulate: 4.0 msg, 400 B, 0.500 ms 0.400 ms 0.900 ms"
    ) in text


def test_the_page_stands_when_the_replica_and_redis_are_away(client, settings, monkeypatch):
    settings.HISTORY_DATABASE_URL = "postgres://nobody@127.0.0.1:9/nothing"

    def down(**kwargs):
        raise RedisError("connection refused")

    monkeypatch.setattr(dashboard_view, "dissemination_recent", down)
    client.force_login(StaffFactory(username="root"))
    response = client.get("/staff/")
    assert response.status_code == 200
    text = _text(response.content.decode())
    assert "Replica unreachable: " in text
    assert "Unavailable: Redis, which keeps the choices, did not answer." in text
    assert "None: no subscription is suspended." in text
    assert "No active pattern subscription." in text


def test_the_panel_reads_in_ten_queries_however_many_rows(
    log, subscriptions, choices, django_assert_num_queries
):
    # head 2, the primary's standbys 1, partitions 2, by form 1, suspended 2, patterns 2;
    # the replica is asked on its own connection and the choices in Redis
    with django_assert_num_queries(10):
        dashboard_view._spec8()


def test_no_choice_yet(client, choices):
    client.force_login(StaffFactory(username="root"))
    assert "No choice yet: no change has reached a watch." in _text(
        client.get("/staff/").content.decode()
    )


@pytest.mark.skipif(
    "history" not in django_settings.DATABASES,
    reason="no replica is running: `ops/services --test start` starts one",
)
def test_the_test_clusters_streaming_replica_reports_its_lag():
    # The settings point HISTORY_DATABASE_URL at the test cluster's standby
    got = log_status.replica_status()
    assert (got["configured"], got["reachable"], got["standby"]) == (True, True, True)
    assert isinstance(got["lag_bytes"], int) and got["lag_bytes"] >= 0
    assert got["lag_seconds"] is None or got["lag_seconds"] >= 0
    # and the primary lists the standbys it streams to (their state and lag only for a role
    # with pg_read_all_stats: None otherwise)
    assert [s["name"] for s in got["senders"]] == ["walreceiver"]
