"""Filters pushed down into SQL (``selectors/history.py``): a read with them gives exactly
what filtering every visible event in Python gives; what SQL cannot apply exactly stays
the evaluator's; a one-day read touches that day's partition only, and one market's or
one type's read walks the index made for it."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.selectors.history import HistoryWhere, history_events, history_pushdown, history_sql
from exchange.services.event_partitions import event_partitions_ensure
from matching.subjects import subject_matches
from matching.subscriptions import event_from_dict, parse_query
from matching.subscriptions.run.predicates import condition_holds
from tests.factories import StaffFactory, UserFactory
from tests.history.logs import log_write, python_events

pytestmark = pytest.mark.django_db

START = dt.datetime(2030, 3, 1, tzinfo=dt.UTC)
SUBJECTS = [
    "office.supplies.pencils",
    "office.supplies.pens",
    "office.furniture.pencils",
    "garden.tools.spades",
]
PATTERNS = ["office.>", "office.*.pencils", "*.supplies.*", "garden.>", ">", *SUBJECTS[:2]]
CONJUNCTS = [
    "type = 'trade'",
    "(type = 'trade' OR type = 'best_offer')",
    "(type = 'bid_placed' OR subject MATCHES 'garden.>')",
    "subject MATCHES 'office.>'",
    "(NOT subject MATCHES 'office.*.pencils')",
    "subject = 'office.supplies.pens'",
    "seq > 7",
    "seq IN [3, 30)",
    "time >= TIMESTAMP '2030-03-02T00:00:00Z'",
    "time < TIMESTAMP '2030-03-03T12:00:00Z'",
    "type = *",
    # not SQL's: a range of strings (collations differ), a data attribute
    "type >= 'offer'",
    "price > 1.00",
    "(type = 'trade' OR price > 1.00)",
]


def event_log(bidders) -> list:
    """40 events over four days: every kind of event, on four markets, two bidders' bids."""
    rows = []
    for i in range(40):
        subject = SUBJECTS[i % 4]
        time = START + dt.timedelta(hours=2 * i + i % 3, microseconds=i % 2)
        match i % 5:
            case 0:
                row = (
                    "offer_posted",
                    subject,
                    None,
                    {"offer": i, "version": 1, "ask": "1.00", "constraint": "x"},
                )
            case 1:
                row = (
                    "best_offer",
                    subject,
                    None,
                    {"offer": i, "value": f"{i % 3}.50", "matching_bids": 2},
                )
            case 2:
                row = (
                    "trade",
                    subject,
                    None,
                    {"offer": i, "trade": i, "price": f"{i % 4}.25", "quantity": 5},
                )
            case 3:
                bidder = bidders[i % 2].pk
                row = (
                    "bid_placed",
                    subject,
                    bidder,
                    {"bid": i, "version": 1, "limit": "2.00", "constraint": "y"},
                )
            case _:
                row = ("offer_withdrawn", subject, None, {"offer": i})
        rows.append((row, time))
    return rows


@pytest.fixture
def log():
    event_partitions_ensure(first=START.date(), days=4)
    bidders = (UserFactory(), UserFactory())
    upto = log_write(event_log(bidders))
    return {
        "upto": upto,
        "users": [*bidders, StaffFactory(), AnonymousUser()],
    }


def in_python(user, *, after, upto, where: HistoryWhere, conditions) -> list[dict]:
    """The plain reading: every visible event, filtered here."""
    kept = []
    for raw in python_events(user):
        event = event_from_dict(raw)
        if not after < event.seq <= upto:
            continue
        if where.since is not None and event.time < where.since:
            continue
        if where.until is not None and event.time >= where.until:
            continue
        if where.types is not None and raw["type"] not in where.types:
            continue
        if where.subject is not None and not subject_matches(where.subject, raw["subject"]):
            continue
        if all(condition_holds(c, event.values) for c in conditions):
            kept.append(raw)
    return kept


TIMES = st.one_of(
    st.none(), st.integers(0, 100).map(lambda h: START + dt.timedelta(hours=h, minutes=30))
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    who=st.integers(0, 3),
    after=st.integers(0, 40),
    span=st.integers(0, 40),
    since=TIMES,
    until=TIMES,
    types=st.one_of(
        st.none(), st.sets(st.sampled_from(["trade", "best_offer", "bid_placed", "offer_posted"]))
    ),
    subject=st.one_of(st.none(), st.sampled_from(PATTERNS)),
    conjuncts=st.lists(st.sampled_from(CONJUNCTS), max_size=4),
)
def test_a_pushed_down_read_is_filtering_in_python(
    log, who, after, span, since, until, types, subject, conjuncts
):
    user = log["users"][who]
    upto = min(after + span, log["upto"])
    conditions = parse_query(
        "SELECT *" + (" WHERE " + ", ".join(conjuncts) if conjuncts else "")
    ).conditions
    pushed, rest = history_pushdown(conditions)
    where = HistoryWhere(
        since=since,
        until=until,
        types=None if types is None else frozenset(types),
        subject=subject,
        conditions=pushed,
    )
    # SQL applies what was pushed; the evaluator's part is applied here, as it would be
    read = [
        e
        for e in history_events(user=user, after=after, upto=upto, where=where)
        if all(condition_holds(c, event_from_dict(e).values) for c in rest)
    ]
    assert read == in_python(user, after=after, upto=upto, where=where, conditions=conditions)


def test_pushdown_takes_the_envelopes_exact_tests_and_leaves_the_rest():
    query = parse_query(
        "SELECT * WHERE (type = 'trade' OR type = 'best_offer'), subject MATCHES 'office.>', "
        "price > 1, type >= 'b', seq IN [3, 9), (type = 'trade' OR price > 2), "
        "time >= TIMESTAMP '2030-01-01T00:00:00Z', (NOT subject MATCHES 'x.*')"
    )
    pushed, rest = history_pushdown(query.conditions)
    c = query.conditions
    assert pushed == (c[0], c[1], c[4], c[6], c[7])
    assert rest == (c[2], c[3], c[5])


def test_pushdown_keeps_to_one_alias():
    query = parse_query(
        "SELECT * FROM a AND b WHERE a.type = 'trade', b.subject MATCHES 'office.>', a.price > 1, "
        "a.offer = b.offer"
    )
    pushed, rest = history_pushdown(query.conditions, alias="a")
    assert [c.alias for c in pushed] == ["a"] and len(pushed) == 1
    assert [c.alias for c in rest] == ["a"] and len(rest) == 1
    assert history_pushdown(query.conditions, alias="b")[0] == (query.conditions[1],)


def test_seq_and_time_bounds_keep_their_exact_values(log):
    # Given a time bound with microseconds and a seq bound, pushed as conditions
    staff = log["users"][2]
    query = parse_query("SELECT * WHERE time > TIMESTAMP '2030-03-01T06:00:00Z', seq <= 6")
    where = HistoryWhere(conditions=history_pushdown(query.conditions)[0])
    got = [e["seq"] for e in history_events(user=staff, after=0, upto=40, where=where)]
    # seq 3 is at 06:00:00 (not after it), seq 4 one microsecond later
    assert [e["time"] for e in python_events(staff)[2:4]] == [
        "2030-03-01T06:00:00Z",
        "2030-03-01T06:00:00.000001Z",
    ]
    assert got == [4, 5, 6]


def plan(sql: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE exchange_event")
        cursor.execute("EXPLAIN (COSTS off) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def partitions_in(text: str) -> set[str]:
    return set(re.findall(r"exchange_event_(?:p\d{8}|default)", text))


def test_a_one_day_read_touches_that_days_partition_only(log):
    day = START + dt.timedelta(days=1)
    sql, params = history_sql(
        user=AnonymousUser(),
        after=0,
        upto=40,
        where=HistoryWhere(since=day, until=day + dt.timedelta(days=1)),
        limit=20_000,
    )
    assert partitions_in(plan(sql, params)) == {"exchange_event_p20300302"}


def big_log(markets: int, per_day: int, days: int) -> int:
    """``per_day`` events a day on ``markets`` markets, one type in ten a trade."""
    event_partitions_ensure(first=START.date(), days=days)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO exchange_event (seq, time, type, subject, owner_id, data)
            SELECT g, %s::timestamptz + g * (interval '1 day' / %s),
                   CASE WHEN g %% 10 = 0 THEN 'trade' ELSE 'best_offer' END,
                   'office.market' || (g %% %s), NULL, jsonb_build_object('offer', g)
            FROM generate_series(1, %s) AS g
            """,
            [START, per_day, markets, per_day * days],
        )
    return per_day * days


def test_one_markets_read_and_one_types_read_walk_their_indexes():
    # Given 20,000 events over two days on 100 markets
    upto = big_log(markets=100, per_day=10_000, days=2)
    days = {f"exchange_event_p{d:%Y%m%d}" for d in (START, START + dt.timedelta(days=1))}
    staff = StaffFactory()
    for where, index in [
        (HistoryWhere(subject="office.market7"), "subject_seq_idx"),
        (HistoryWhere(types=frozenset({"trade"})), "type_seq_idx"),
    ]:
        # When one market's or one type's events are read
        sql, params = history_sql(user=staff, after=0, upto=upto, where=where, limit=20_000)
        text = plan(sql, params)
        # Then both days' partitions are read through their copy of that index, and
        # only the empty partitions are scanned whole
        probed = set(re.findall(r"Index Scan (?:using|on) (\S+)", text))
        assert {f"{day}_{index}" for day in days} <= probed, text
        scanned = set(re.findall(r"Seq Scan on (\S+)", text))
        assert not scanned & days, text
