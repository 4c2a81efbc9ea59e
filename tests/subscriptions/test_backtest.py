"""``POST /api/v1/subscriptions/test/`` (SPEC 8.3): a query run over history only, as if
registered at ``since``, up to ``until``; the same evaluator as ``run_offline``; bounded in
events, notifications and time; visibility per SPEC 5.6; clear errors."""

from __future__ import annotations

import types

import pytest

from exchange.models import Subscription
from exchange.selectors import subscriptions as selectors
from matching.subscriptions import parse_query, run_offline, to_text
from tests.api.conftest import client_for
from tests.factories import UserFactory
from tests.subscriptions.log import DAY, append_at, bid_placed, owner_log
from tests.subscriptions.test_advance import T, worked_log

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscriptions/test/"


def at(hour: int, minute: int = 0) -> str:
    return DAY.replace(hour=hour, minute=minute).isoformat().replace("+00:00", "Z")


def backtest(user, query: str, since: str, until: str | None = None):
    body = {"query": query, "since": since}
    if until is not None:
        body["until"] = until
    return client_for(user).post(URL, body, format="json")


@pytest.mark.parametrize(
    ("query", "until", "seqs", "end"),
    [
        ("SELECT price WHERE type = 'trade', price > 1.00", at(11), [2, 4, 5, 6], False),
        ("SELECT price WHERE type = 'trade', price > 1.00", at(10, 30), [2, 4], False),
        ("SELECT price WHERE type = 'trade', end_time = NOW + 30m", at(11), [1, 2, 3, 4], True),
        (  # a pattern gets the past range as its live part
            f"SELECT a.price, b.price FROM {T} AS a "
            f"NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} {T} AS b",
            at(11),
            [2, 4, 4, 5],
            False,
        ),
    ],
)
def test_a_backtest_returns_what_the_query_would_have_sent(query, until, seqs, end):
    # Given the worked example's six trades
    worked_log()
    user = UserFactory()

    # When the query is backtested from 10:00 to ``until``
    response = backtest(user, query, at(10), until)

    # Then what run_offline gives registered at 10:00 over the log before ``until``
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [n["seq"] for n in body["notifications"]] == seqs
    assert (body["end"], body["truncated"]) == (end, False)
    assert body["query"] == to_text(parse_query(query))
    assert (body["since"], body["until"]) == (at(10), until)
    log = [e for e in owner_log(user) if e["time"] < until]
    offline = list(run_offline(parse_query(query), log, now=DAY.replace(hour=10)))
    assert body["notifications"] + ([{"end": True}] if end else []) == offline
    assert Subscription.objects.count() == 0  # nothing is registered


def test_a_backtest_with_a_start_before_since_gets_the_earlier_events_as_history():
    worked_log()
    response = backtest(
        UserFactory(),
        "SELECT price WHERE type = 'trade', start_time = NOW - 15m",
        at(10, 20),
        at(11),
    )
    assert [n["seq"] for n in response.json()["notifications"]] == [2, 3, 4, 5, 6]
    assert response.json()["events_read"] == 5


def test_a_backtest_sees_only_what_its_user_may_see():
    alice, bob = UserFactory(), UserFactory()
    append_at([bid_placed(alice.pk, 1, "1.00"), bid_placed(bob.pk, 2, "1.10")], DAY)
    response = backtest(alice, "SELECT bid WHERE type = 'bid_placed'", at(0), at(1))
    assert response.json()["notifications"] == [{"n": 1, "seq": 1, "data": {"bid": 1}}]


def test_a_backtest_stops_at_its_bounds_with_truncated(monkeypatch):
    worked_log()
    user = UserFactory()
    query = parse_query("SELECT price WHERE type = 'trade'")
    since, until = DAY.replace(hour=9), DAY.replace(hour=11)

    by_events = selectors.subscription_backtest(
        user=user, query=query, since=since, until=until, max_events=3
    )
    by_notes = selectors.subscription_backtest(
        user=user, query=query, since=since, until=until, max_notifications=2
    )
    ticks = iter(range(0, 1000, 10))
    monkeypatch.setattr(selectors, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))
    by_time = selectors.subscription_backtest(
        user=user, query=query, since=since, until=until, budget=5
    )

    assert [n["seq"] for n in by_events.notifications] == [1, 2, 3]
    assert (by_events.truncated, by_events.events_read, by_events.end) == (True, 3, False)
    assert [n["seq"] for n in by_notes.notifications] == [1, 2]
    assert by_notes.truncated is True
    assert (by_time.notifications, by_time.truncated, by_time.events_read) == ([], True, 0)


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"query": "SELECT price WHERE", "since": at(10)}, "syntax", "query"),
        ({"query": "SELECT price", "since": "yesterday"}, "invalid_since", "since"),
        ({"query": "SELECT price", "since": at(10), "until": "soon"}, "invalid_until", "until"),
        ({"query": "SELECT price", "since": at(10), "until": at(10)}, "invalid_range", "until"),
        ({"query": "SELECT price"}, "required", "since"),
        ({"since": at(10)}, "required", "query"),
    ],
)
def test_bad_input_is_a_clear_400(body, code, field):
    response = client_for(UserFactory()).post(URL, body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field)
    if code == "syntax":
        assert error["position"] == 18


def test_anonymous_callers_are_refused():
    assert client_for(None).post(URL, {"query": "SELECT *", "since": at(1)}).status_code == 401


@pytest.mark.parametrize(
    ("since", "until", "status"),
    [
        ("0001-01-01T00:00:00Z", None, 200),
        ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", 200),
        ("9999-12-31T23:59:59Z", None, 400),
    ],
)
def test_extreme_times_are_answered_never_a_500(since, until, status):
    worked_log()
    body = {"query": "SELECT price WHERE start_time = NOW - 1d", "since": since}
    if until is not None:
        body["until"] = until
    response = client_for(UserFactory()).post(URL, body, format="json")
    assert response.status_code == status, response.json()
