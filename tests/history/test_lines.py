"""Historic reads built in SQL (``selectors/history.py``): byte for byte the lines the
Python path writes, on generated events with absent attributes, decimals, timestamps with
and without microseconds, text PostgreSQL and Python spell differently, and keys a type
does not have; the ``seq`` window; visibility; pages; an early close."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.pq import TransactionStatus

from exchange.models import Event
from exchange.selectors import history
from exchange.selectors.history import HistoryWhere, history_events, history_lines
from matching.subjects import SubjectError
from matching.subscriptions.language.schema import EVENT_SCHEMA, EVENT_TYPES, OWNER_AND_STAFF
from matching.values import format_timestamp_body
from tests.factories import StaffFactory, UserFactory
from tests.history.logs import log_write, python_events, python_lines

pytestmark = pytest.mark.django_db

SUBJECTS = ["office.supplies.pencils", "office.supplies.pens", "garden.tools.spades"]
# Text where a naive respelling of jsonb's "k": v, ... would go wrong, and text that
# PostgreSQL writes raw but json.dumps escapes.
TRICKY = ['", "', '": ', 'a, "b', "\\", '\\"', "\x7f", "é", "😀", "\n\t\x01", "\u2028", ": ", ", "]
TEXT = st.one_of(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8),
    st.lists(st.sampled_from(TRICKY), max_size=3).map("".join),
)
TIMES = st.datetimes(
    min_value=dt.datetime(2026, 1, 1),
    max_value=dt.datetime(2031, 12, 31),
    timezones=st.just(dt.UTC),
)
TIMESTAMP_TEXT = st.one_of(TIMES, TIMES.map(lambda t: t.replace(microsecond=0))).map(
    format_timestamp_body
)
DECIMAL_TEXT = st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str)
BY_TYPE = {
    "int": st.integers(-(2**62), 2**62),
    "decimal": st.one_of(DECIMAL_TEXT, st.integers(0, 10**9)),
    "timestamp": TIMESTAMP_TEXT,
    "string": TEXT,
}
# Whatever a writer's bug might leave beside the attributes: the lines stay exact.
STRAY = st.dictionaries(
    st.sampled_from(["zz", "seq", "type", "é"]),
    st.one_of(st.integers(), TEXT, st.booleans()),
    max_size=2,
)


@st.composite
def event_rows(draw, owner_id: int):
    kind = draw(st.sampled_from(sorted(EVENT_TYPES)))
    spec = EVENT_TYPES[kind]
    data = {}
    for name in spec.attributes:
        if draw(st.booleans()) or draw(st.booleans()):  # absent a quarter of the time
            data[name] = draw(BY_TYPE[EVENT_SCHEMA[name].value])
    if draw(st.integers(0, 9)) == 0:
        data.update(draw(STRAY))
    owner = owner_id if spec.visible_to == OWNER_AND_STAFF else None
    return (kind, draw(st.sampled_from(SUBJECTS)), owner, data)


@st.composite
def logs(draw, owner_id: int):
    rows = draw(st.lists(event_rows(owner_id), max_size=12))
    times = sorted(draw(st.lists(TIMES, min_size=len(rows), max_size=len(rows))))
    times = [t.replace(microsecond=0) if draw(st.booleans()) else t for t in times]
    return list(zip(rows, sorted(times), strict=True))


@pytest.fixture
def people():
    return {"bidder": UserFactory(), "staff": StaffFactory(), "anonymous": AnonymousUser()}


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 3 lines in parts of 2, so a few events cross several pages."""
    monkeypatch.setattr(history, "PAGE_ROWS", 3)
    monkeypatch.setattr(history, "PART_ROWS", 2)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_lines_are_byte_for_byte_the_python_paths(people, small_pages, data):
    # Given a generated log
    upto = log_write(data.draw(logs(people["bidder"].pk)))
    for user in people.values():
        # When it is read through SQL
        lines = b"".join(history_lines(user=user, after=0, upto=upto))
        # Then every role gets exactly the bytes the ORM and json.dumps gave
        assert lines == python_lines(user)
        assert list(history_events(user=user, after=0, upto=upto)) == python_events(user)


def test_a_line_spells_time_and_absent_attributes_as_spec_8_1(people):
    at = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    upto = log_write(
        [
            (("best_offer", "office.supplies.pencils", None, {"offer": 7, "matching_bids": 0}), at),
            (
                (
                    "offer_posted",
                    "office.supplies.pencils",
                    None,
                    {
                        "offer": 8,
                        "version": 1,
                        "ask": "1.10",
                        "quantity_min": 5,
                        "constraint": "lot >= 5 AND price >= 1.10",
                    },
                ),
                at.replace(microsecond=120),
            ),
        ]
    )
    assert b"".join(history_lines(user=people["anonymous"], after=0, upto=upto)).decode() == (
        '{"seq":1,"time":"2026-11-20T10:00:00Z","type":"best_offer",'
        '"subject":"office.supplies.pencils","offer":7,"matching_bids":0}\n'
        '{"seq":2,"time":"2026-11-20T10:00:00.000120Z","type":"offer_posted",'
        '"subject":"office.supplies.pencils","ask":"1.10","offer":8,"version":1,'
        '"constraint":"lot >= 5 AND price >= 1.10","quantity_min":5}\n'
    )


def test_the_window_is_after_to_upto_and_visibility_holds(people, small_pages):
    at = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    bidder, other = people["bidder"], UserFactory()
    rows = []
    for i in range(10):
        owner = (bidder, other)[i % 2].pk
        kind, who = ("bid_placed", owner) if i % 3 == 0 else ("offer_withdrawn", None)
        data = {"bid": i, "version": 1, "limit": "1.00", "constraint": "x"} if who else {"offer": i}
        rows.append(((kind, SUBJECTS[0], who, data), at + dt.timedelta(hours=i)))
    log_write(rows)
    # seq 1, 4, 7, 10 are bids: 1 and 7 the bidder's, 4 and 10 the other's
    for user, expected in [
        (bidder, [3, 5, 6, 7, 8]),
        (other, [3, 4, 5, 6, 8]),
        (people["anonymous"], [3, 5, 6, 8]),
        (people["staff"], [3, 4, 5, 6, 7, 8]),
    ]:
        got = [e["seq"] for e in history_events(user=user, after=2, upto=8)]
        assert got == expected, user
    assert list(history_events(user=people["staff"], after=8, upto=8)) == []
    assert list(history_lines(user=people["staff"], after=10, upto=10)) == []


def test_pages_after_the_first_start_at_the_last_events_time(people, monkeypatch):
    # Given 9 events over 9 days, read in pages of 4
    monkeypatch.setattr(history, "PAGE_ROWS", 4)
    at = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    log_write(
        [
            (("offer_withdrawn", SUBJECTS[0], None, {"offer": i}), at + dt.timedelta(days=i))
            for i in range(9)
        ]
    )
    statements = []
    real = history.history_sql

    def spy(**kwargs):
        statements.append(kwargs["where"])
        return real(**kwargs)

    monkeypatch.setattr(history, "history_sql", spy)
    # When all of it is read
    assert [e["seq"] for e in history_events(user=people["staff"], after=0, upto=9)] == list(
        range(1, 10)
    )
    # Then the check, then one statement per page, each page after the first bounded
    # below by the time of the last event of the page before
    assert [w.since for w in statements] == [
        None,
        None,
        at + dt.timedelta(days=3),
        at + dt.timedelta(days=7),
    ]


@pytest.mark.django_db(transaction=True)
def test_closing_a_read_early_cancels_it_and_the_connection_goes_on(people):
    # Given a log longer than one page
    at = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    total = history.PAGE_ROWS + 10
    upto = log_write(
        [
            (("offer_withdrawn", SUBJECTS[0], None, {"offer": i}), at + dt.timedelta(seconds=i))
            for i in range(total)
        ]
    )
    # When a reader takes the first part and goes away
    lines = history_lines(user=people["anonymous"], after=0, upto=upto)
    first = next(lines)
    lines.close()
    # Then it got whole lines from the start, its cursor and transaction are gone, and the
    # connection serves the next query
    assert first.count(b"\n") == history.PART_ROWS
    assert json.loads(first.splitlines()[0])["seq"] == 1
    assert connection.connection.info.transaction_status == TransactionStatus.IDLE
    assert Event.objects.count() == total
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_cursors")
        assert cursor.fetchone()[0] == 0


def test_a_bad_subject_pattern_fails_before_reading(people):
    with pytest.raises(SubjectError) as caught:
        history_lines(user=people["staff"], after=0, upto=5, where=HistoryWhere(subject="office."))
    assert caught.value.position == 7


def test_a_limit_reads_the_first_events_only(people, small_pages):
    at = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    upto = log_write(
        [(("offer_withdrawn", SUBJECTS[0], None, {"offer": i}), at) for i in range(10)]
    )
    staff = people["staff"]
    for limit, expected in [
        (0, []),
        (1, [1]),
        (3, [1, 2, 3]),
        (7, list(range(1, 8))),
        (50, list(range(1, 11))),
    ]:
        got = [e["seq"] for e in history_events(user=staff, after=0, upto=upto, limit=limit)]
        assert got == expected, limit
    assert [e["seq"] for e in history_events(user=staff, after=4, upto=9, limit=4)] == [5, 6, 7, 8]


# Attribute values around the two byte replacements that compact jsonb's text: strings
# that start with ': ' or end with ', ' (where a separator's bytes are inside a string),
# the interval syntax of constraints, nested values, keys the envelope has, no attributes.
UNUSUAL = [
    {"offer": 1, "constraint": ": lot >= 5"},
    {"offer": 1, "constraint": "lot >= 5, "},
    {"offer": 1, "constraint": ", "},
    {"offer": 1, "constraint": ":"},
    {"offer": 1, "constraint": ""},
    {"offer": 1, "constraint": "lot IN [1, 5) AND colour IN ('red', 'blue')"},
    {"offer": 1, "constraint": 'say "hi", ": '},
    {"offer": 1, "zz": [1, "a, ", {"b": 2}]},
    {"offer": 1, "zz": {"k": [3, 4]}},
    {"offer": 1, "subject": "elsewhere"},
    {"offer": 1, ": ": ", "},
    {"": 1},
    {},
]


@pytest.mark.parametrize("data", UNUSUAL, ids=[json.dumps(d) for d in UNUSUAL])
def test_unusual_attributes_are_spelled_as_the_python_path_does(people, data):
    # Given an event carrying them, between two plain ones (one part of three lines)
    at = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    plain = ("offer_withdrawn", SUBJECTS[0], None, {"offer": 9})
    upto = log_write([(plain, at), (("offer_posted", SUBJECTS[1], None, data), at), (plain, at)])
    # When the log is read through SQL, then it is byte for byte the Python path's
    got = b"".join(history_lines(user=people["anonymous"], after=0, upto=upto))
    assert got == python_lines(people["anonymous"])
    assert (
        json.loads(got.splitlines()[1])
        == {
            "seq": 2,
            "time": "2026-11-20T00:00:00Z",
            "type": "offer_posted",
            "subject": SUBJECTS[1],
        }
        | data
    )


def test_a_pattern_ending_in_rest_after_plain_tokens_is_a_prefix_test_in_sql(people):
    sql, params = history.history_sql(
        user=people["staff"], after=0, upto=9, where=HistoryWhere(subject="office.supplies.>")
    )
    assert "starts_with(e.subject, %s)" in sql and "~" not in sql
    assert params == [0, 9, "office.supplies."]
    sql, params = history.history_sql(
        user=people["staff"], after=0, upto=9, where=HistoryWhere(subject="office.*.>")
    )
    assert "e.subject ~ %s" in sql and "starts_with" not in sql
    assert params[-1] == r"^office\.[a-z0-9]+\.[a-z0-9]+(?:\.[a-z0-9]+)*$"
