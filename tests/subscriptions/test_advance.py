"""The live path and the outbox (SPEC 8.3), through the subscription engine: it gives
exactly what the offline contract gives on the same log, per form, with visibility, ends,
suspensions and failures; the seam between history and live events."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import Subscription, SubscriptionNotification
from exchange.selectors.subscriptions import evaluator_start
from exchange.services import subscriptions as service
from exchange.services.subscriptions import subscription_create
from exchange.subscription_engine import engine as engine_module
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions import parse_query, run_offline
from tests.exchange.test_subscription_run_patterns import SPEC_TABLE
from tests.factories import StaffFactory, UserFactory
from tests.matching.subscriptions.pattern_cases import T
from tests.matching.subscriptions.subscription_cases import (
    COMPOSITE_QUERY,
    EXAMPLES,
    TRADE_PRICES,
    TRADE_TIMES,
)
from tests.subscriptions.log import (
    DAY,
    PENCILS,
    advance,
    append,
    append_at,
    bid_placed,
    engine,
    engine_forget,
    offline,
    outbox,
    owner_log,
    step,
    trade,
)

pytestmark = pytest.mark.django_db


def worked_trades(start: int, stop: int) -> None:
    """SPEC 8.3's worked example's trades ``start`` to ``stop - 1`` (0-based) on pencils at
    their times of day (10:00 ... 10:50) on ``DAY``, one append each: a day after the
    clock, since the log's time never goes back."""
    for i in range(start, stop):
        hour, minute = map(int, TRADE_TIMES[i].split(":"))
        append_at([trade(TRADE_PRICES[i], trade_id=i + 1)], DAY.replace(hour=hour, minute=minute))


def worked_log(upto: int = 6) -> None:
    worked_trades(0, upto)


def worked_rest(start: int) -> None:
    worked_trades(start, 6)


def sent(subscription: Subscription) -> list[tuple[int, dict]]:
    return [(line["seq"], line["data"]) for line in outbox(subscription) if "seq" in line]


# SPEC 8.3's worked examples registered before seq 1, with the offline tests' expectations.
BEFORE_FIRST = [(query, expected) for query, now, expected in EXAMPLES if now is None]


@pytest.mark.parametrize(("query", "expected"), BEFORE_FIRST + SPEC_TABLE)
def test_the_worked_examples_through_the_live_path(query, expected):
    # Given a subscription registered before seq 1
    sub = subscription_create(owner=UserFactory(), query=query)

    # When the six trades are appended and the task advances it, two events a step
    worked_log()
    advance(sub, chunks=[2])

    # Then exactly SPEC 8.3's notifications, numbered 1, 2, 3, ... as subscription_run does
    assert sent(sub) == expected
    assert outbox(sub) == offline(sub)
    assert [line["n"] for line in outbox(sub)] == list(range(1, len(expected) + 1))


def test_a_hybrid_subscription_sends_its_history_then_live_events_at_the_seam():
    # Given trades 1-4 in the log (10:00 ... 10:20)
    worked_log(upto=4)
    # When a subscription starting 16 minutes before NOW registers (NOW just after 10:20)
    sub = subscription_create(
        owner=UserFactory(),
        query="SELECT price WHERE type = 'trade', price > 1.00, start_time = NOW - 16m",
    )
    assert (sub.seam, sub.now) == (4, DAY.replace(hour=10, minute=20, microsecond=1))
    advance(sub)
    history = sent(sub)
    # and trades 5 and 6 follow
    worked_rest(4)
    advance(sub)

    # Then 2 and 4 from history, then 5 and 6 live: no gap, no duplicate
    assert history == [(2, {"price": "1.10"}), (4, {"price": "1.20"})]
    assert [seq for seq, _ in sent(sub)] == [2, 4, 5, 6]
    assert outbox(sub) == offline(sub)


def test_the_composite_worked_example():
    sub = subscription_create(owner=UserFactory(), query=COMPOSITE_QUERY)
    append([trade("1.10")])
    append(
        [
            (
                "offer_posted",
                PENCILS,
                None,
                {"offer": 7, "version": 1, "ask": "1.00", "constraint": "price >= 1.00"},
            )
        ]
    )
    append(
        [
            (
                "offer_posted",
                "office.supplies.pens",
                None,
                {"offer": 8, "version": 1, "ask": "1.00", "constraint": "price >= 1.00"},
            )
        ]
    )
    advance(sub)
    assert outbox(sub) == [{"n": 1, "seq": 2, "data": {"b": {"offer": 7}}}]


def test_a_purely_historic_subscription_completes_after_its_history():
    # Given the six trades, then a subscription over the hour before NOW, ending at NOW
    worked_log()
    sub = subscription_create(
        owner=UserFactory(),
        query="SELECT price WHERE type = 'trade', price < 1.10, start_time = NOW - 1h, "
        "end_time = NOW",
    )
    # When the task replays the history in steps of one event
    advance(sub, chunks=[1])
    # Then its matches, then the end: state done
    sub.refresh_from_db()
    assert (sub.state, sub.reason, sub.evaluator) == ("done", "completed", None)
    assert outbox(sub) == [
        {"n": 1, "seq": 1, "data": {"price": "1.00"}},
        {"n": 2, "seq": 3, "data": {"price": "0.90"}},
        {"end": True},
    ]
    assert outbox(sub) == offline(sub)
    # and a later event changes nothing
    append([trade("0.10")])
    advance(sub)
    assert outbox(sub) == offline(sub)
    assert sub.pk not in engine().followed


def test_an_end_in_the_future_completes_at_the_first_event_at_or_after_it():
    worked_log(upto=1)  # 10:00
    sub = subscription_create(
        owner=UserFactory(), query="SELECT price WHERE type = 'trade', end_time = NOW + 19m"
    )
    worked_rest(1)  # 10:05, 10:10, then 10:20, past the end (10:19): not delivered
    advance(sub)
    assert [line.get("seq") for line in outbox(sub)] == [2, 3, None]
    assert outbox(sub)[-1] == {"end": True}
    assert outbox(sub) == offline(sub)


def test_a_registration_with_no_history_and_a_past_end_is_done_at_once():
    sub = subscription_create(owner=UserFactory(), query="SELECT * WHERE end_time = NOW - 1h")
    assert (sub.state, sub.reason, sub.evaluator) == ("done", "completed", None)


QUERIES_BY_FORM = {
    "events": "SELECT bid, limit WHERE type = 'bid_placed'",
    "composite": "SELECT a.bid, b.bid FROM a AND b WHERE a.type = 'bid_placed', "
    "b.type = 'bid_placed', a.bid < b.bid",
    "pattern": "SELECT a.bid, b.bid FROM FILTER{type = 'bid_placed'}(EVENTS) AS a "
    "NEXT{b.limit > a.limit} FILTER{type = 'bid_placed'}(EVENTS) AS b",
}


@pytest.mark.parametrize("form", sorted(QUERIES_BY_FORM))
def test_a_subscription_never_sees_another_users_bid_events_and_staff_see_all(form):
    # Given alice, bob and staff subscribed to the same query
    alice, bob, staff = UserFactory(), UserFactory(), StaffFactory()
    subs = {
        who: subscription_create(owner=user, query=QUERIES_BY_FORM[form])
        for who, user in (("alice", alice), ("bob", bob), ("staff", staff))
    }
    # When alice and bob place bids in turn
    for bid, (owner, limit) in enumerate(
        [(alice, "1.00"), (bob, "1.10"), (alice, "1.20"), (bob, "1.30")], 1
    ):
        append([bid_placed(owner.pk, bid, limit)])
    for sub in subs.values():
        advance(sub)

    # Then each sees exactly what the offline contract gives on the log as its owner reads it
    bids = {
        who: sorted({v for line in outbox(sub) for v in _bids(line["data"])})
        for who, sub in subs.items()
    }
    assert bids == {"alice": [1, 3], "bob": [2, 4], "staff": [1, 2, 3, 4]}
    for sub in subs.values():
        assert outbox(sub) == offline(sub)


def _bids(data: dict) -> list[int]:
    values = []
    for key, value in data.items():
        if isinstance(value, dict):
            values += _bids(value)
        elif key.endswith("bid"):
            values.append(value)
    return values


def test_state_limit_suspends_with_a_notification_and_nothing_after(monkeypatch):
    monkeypatch.setattr(service, "STATE_LIMIT", 3)
    sub = subscription_create(
        owner=UserFactory(),
        query="SELECT a.price, b.price FROM a AND b WHERE a.type = 'trade', "
        "b.type = 'trade', a.price > b.price",
    )
    for price in ("1.00", "1.10", "1.20", "1.30", "0.50"):
        append([trade(price)])
    advance(sub)

    sub.refresh_from_db()
    assert (sub.state, sub.reason, sub.evaluator) == ("suspended", "state_limit", None)
    # the error is the last notification, after what seq 4 completed
    lines = outbox(sub)
    assert lines[-1] == {"n": len(lines), "seq": 4, "data": {"error": "state_limit"}}
    # exactly what the offline contract sends with the same limit
    expected = run_offline(
        parse_query(sub.query),
        owner_log(sub.owner),
        now=sub.now,
        state_limit=3,
    )
    assert lines == list(expected)


def test_a_failing_subscription_is_suspended_and_the_others_go_on(monkeypatch):
    # Given two subscriptions, one of which fails on the event with seq 2
    owner = UserFactory()
    failing = subscription_create(owner=owner, query="SELECT price WHERE price > 1.05")
    healthy = subscription_create(owner=owner, query="SELECT price WHERE type = 'trade'")
    original = Evaluator.push
    broken = parse_query(failing.query)

    def push(self, event, *, live, **kwargs):
        if event.seq == 2 and self.query == broken:
            raise ZeroDivisionError("division by zero")
        return original(self, event, live=live, **kwargs)

    monkeypatch.setattr(Evaluator, "push", push)
    append([trade("1.10")])
    append([trade("1.20")])
    append([trade("1.30")])

    # When the engine advances them
    advance(failing, healthy)

    # Then the failing one sent what it had, then an error notification, and is suspended
    failing.refresh_from_db()
    assert (failing.state, failing.reason, failing.evaluator) == ("suspended", "error", None)
    assert outbox(failing) == [
        {"n": 1, "seq": 1, "data": {"price": "1.10"}},
        {
            "n": 2,
            "seq": 2,
            "data": {
                "error": "runtime_error",
                "message": "the subscription failed while evaluating: ZeroDivisionError: "
                "division by zero",
            },
        },
    ]
    # and the other received every event
    assert [line["seq"] for line in outbox(healthy)] == [1, 2, 3]


def test_a_step_writes_nothing_when_it_fails_to_commit(monkeypatch):
    # Given a subscription with one event to read
    sub = subscription_create(owner=UserFactory(), query="SELECT price WHERE type = 'trade'")
    append([trade("1.10")])
    before = Subscription.objects.values().get(pk=sub.pk)

    # When the batch's write fails after the notifications were copied
    write = engine_module._write

    def broken(*args, **kwargs):
        write(*args, **kwargs)
        raise RuntimeError("the process died")

    monkeypatch.setattr(engine_module, "_write", broken)
    with pytest.raises(RuntimeError):
        step()
    monkeypatch.undo()

    # Then nothing changed; the next batch does the same work once
    assert Subscription.objects.values().get(pk=sub.pk) == before
    assert SubscriptionNotification.objects.count() == 0
    advance(sub)
    assert outbox(sub) == [{"n": 1, "seq": 1, "data": {"price": "1.10"}}]


class _Rollback(Exception):
    pass


QUERIES = [
    "SELECT price WHERE type = 'trade', price > 1.00",
    "SELECT * WHERE start_time = NOW - 1h",
    "SELECT price, subject WHERE type = 'trade', start_time = NOW - 1h, end_time = NOW + 1h",
    "SELECT COUNT(price, 2), MAX(price, 2) WHERE start_time = NOW - 1d GROUP BY subject",
    "SELECT price WHERE type = 'trade', start_time = NOW - 1d HAVING AVG(price, 2) > 1.05",
    "SELECT a.price, b.bid FROM a AND b WHERE a.type = 'trade', b.type = 'bid_placed', "
    "a.subject = b.subject, a.start_time = NOW - 1d",
    f"SELECT a.price, b.price FROM {T} AS a NEXT{{b.price > a.price}} {T} AS b",
    "SELECT bid, limit WHERE type = 'bid_placed', start_time = NOW - 1d",
]

events = st.one_of(
    st.builds(
        lambda p, s: trade(p, subject=s),
        st.sampled_from(TRADE_PRICES),
        st.sampled_from([PENCILS, "office.supplies.pens"]),
    ),
    st.builds(
        lambda who, bid, p: ("bid", who, bid, p),
        st.sampled_from([0, 1]),
        st.integers(1, 9),
        st.sampled_from(TRADE_PRICES),
    ),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    query=st.sampled_from(QUERIES),
    before=st.lists(st.lists(events, min_size=1, max_size=4), max_size=5),
    after=st.lists(st.lists(events, min_size=1, max_size=4), max_size=5),
    chunks=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    steps_between=st.lists(st.integers(0, 2), min_size=5, max_size=5),
    staff=st.booleans(),
)
def test_the_live_path_equals_run_offline_on_generated_logs(
    query, before, after, chunks, steps_between, staff
):
    engine_forget()  # the last example's engine held rows this one rolled back
    try:
        with transaction.atomic():
            users = [UserFactory(username="gen-a"), UserFactory(username="gen-b")]
            owner = StaffFactory(username="gen-staff") if staff else users[0]

            def write(batch):
                append(
                    [bid_placed(users[e[1]].pk, e[2], e[3]) if e[0] == "bid" else e for e in batch]
                )

            # Given a log written batch by batch (each batch one append, as one cycle)
            for batch in before:
                write(batch)
            # When the subscription registers, and more batches come while the engine
            # advances it in random steps
            sub = subscription_create(owner=owner, query=query)
            for i, batch in enumerate(after):
                write(batch)
                for _ in range(steps_between[i]):
                    step(chunks[i % len(chunks)])
            advance(sub, chunks=chunks)

            # Then the outbox is exactly the offline contract's output on the same log
            assert outbox(sub) == offline(sub)
            raise _Rollback
    except _Rollback:
        pass


def test_a_division_by_zero_in_a_pattern_is_false_not_a_failure():
    # SPEC 8.3: after NOT is pushed down, a comparison that divides by zero is false; the
    # evaluator does not raise, so the subscription goes on (compare the failure test above)
    sub = subscription_create(
        owner=UserFactory(),
        query=f"SELECT a.price, b.price FROM {T} AS a "
        f"NEXT{{b.price / (a.price - 1.00) > 1}} {T} AS b",
    )
    for price in ("1.00", "1.10", "2.00"):
        append([trade(price)])
    advance(sub)
    sub.refresh_from_db()
    assert sub.state == "active"
    # a = 1.00 divides by zero against every later b; a = 1.10: 2.00 / 0.10 = 20 > 1
    assert outbox(sub) == [{"n": 1, "seq": 3, "data": {"a.price": "1.10", "b.price": "2.00"}}]
    assert outbox(sub) == offline(sub)


def test_an_engine_the_exchange_does_not_know_is_given_the_whole_log():
    evaluator = Evaluator(parse_query("SELECT price"), now=DAY)
    evaluator.engine = object()  # a form added to the evaluator later
    assert evaluator_start(evaluator) == dt.datetime.min.replace(tzinfo=dt.UTC)
