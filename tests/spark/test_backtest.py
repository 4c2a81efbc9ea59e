"""``manage.py backtest``: a pattern run on Spark over the log read with JDBC, partitioned
by subject, gives exactly the notifications of the offline contract (``subscription_run``'s
evaluator) over the same range registered at ``--since``; patterns whose steps are not tied
to one subject, other forms, bad ranges and unknown users are refused with status 2.

The log is committed (``transaction=True``): Spark reads it on its own connection. The
Spark session is the run's shared one (``conftest.spark``)."""

from __future__ import annotations

import datetime as dt
import io
import json
import random

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command

from exchange.services import events as event_service
from exchange.services import subscriptions as service
from matching.subscriptions import parse_query, parse_timestamp, run_offline
from tests.factories import StaffFactory, UserFactory
from tests.subscriptions.log import DAY, append_at, bid_placed, owner_log, trade

T = "FILTER{type = 'trade'}(EVENTS)"
SUBJECTS = [f"office.supplies.m{i}" for i in range(5)]
QUERIES = [
    f"SELECT a.price, b.price FROM {T} AS a "
    f"NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} {T} AS b",
    f"SELECT a.price, b.price, n, DUR FROM {T} AS a "
    f"FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} {T} AS b "
    "WHERE n >= 2 WITHIN 20m",
    f"SELECT a.price, b.price FROM {T} AS a NEXT{{a.subject = b.subject AND b.price < 0.90}} "
    f"{T} AS b UNION SELECT a.limit FROM FILTER{{type = 'bid_placed'}}(EVENTS) AS a",
]


@pytest.fixture(autouse=True)
def no_advance_requests(monkeypatch):
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)


def backtest(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("backtest", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def refused(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        call_command("backtest", *args)
    assert exit_.value.code == 2
    return capsys.readouterr().err.strip()


@pytest.mark.django_db(transaction=True)
def test_a_backtest_on_spark_gives_what_the_offline_contract_gives(spark):
    rng = random.Random(20)
    trader, staff = UserFactory(username="trader"), StaffFactory()
    for minute in range(300):
        subject = rng.choice(SUBJECTS)
        if rng.random() < 0.85:
            row = trade(f"{rng.randint(80, 130) / 100:.2f}", trade_id=minute, subject=subject)
        else:
            row = bid_placed(
                trader.pk, minute, f"{rng.randint(80, 130) / 100:.2f}", subject=subject
            )
        append_at([row], DAY + dt.timedelta(minutes=minute))
    since, until = DAY + dt.timedelta(minutes=40), DAY + dt.timedelta(minutes=260)
    window = ["--since", since.isoformat(), "--until", until.isoformat()]

    for text in QUERIES:
        for user in (None, trader, staff):
            log = owner_log(user or AnonymousUser())
            seen = [e for e in log if parse_timestamp(e["time"], "time") < until]
            expected = list(run_offline(parse_query(text), seen, now=since))
            who = [] if user is None else ["--user", user.username]
            got = backtest(text, *window, *who)
            assert got == expected, (text, user)
            assert got and all("n" in line for line in got)
    # the bids show for their bidder and staff only
    assert not [x for x in backtest(QUERIES[2], *window) if "a.limit" in x["data"]]
    assert [x for x in backtest(QUERIES[2], *window, "--user", "trader") if "a.limit" in x["data"]]


@pytest.mark.django_db
def test_a_pattern_not_tied_to_one_subject_is_refused(capsys):
    text = f"SELECT a.price, b.price FROM {T} AS a NEXT{{b.price > a.price}} {T} AS b"
    assert refused(capsys, text, "--since", "2031-01-01T00:00:00Z") == (
        "QUERY: the NEXT step binding 'b' does not require the subject of an earlier step, so "
        "the pattern cannot run partitioned by subject: add b.subject = a.subject to its "
        "condition"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["SELECT price WHERE type = 'trade'", "--since", "2031-01-01T00:00:00Z"],
            "QUERY: backtest runs patterns (SPEC 8.3 form 3) on Spark; other forms are "
            "backtested by POST /api/v1/subscriptions/test/",
        ),
        (["SELECT FROM", "--since", "2031-01-01T00:00:00Z"], None),
        (
            [QUERIES[0], "--since", "yesterday"],
            "--since must be an ISO 8601 timestamp such as 2026-11-20T10:00:00Z, not 'yesterday'",
        ),
        (
            [QUERIES[0], "--since", "2031-01-02T00:00:00Z", "--until", "2031-01-01T00:00:00Z"],
            "--until: the range is empty (--until must be after --since)",
        ),
        (
            [QUERIES[0], "--since", "2020-01-01T00:00:00Z", "--user", "nobody"],
            "--user: there is no user 'nobody'",
        ),
    ],
)
def test_bad_input_is_refused_with_status_2(capsys, args, message):
    got = refused(capsys, *args)
    if message is None:
        assert got.startswith("QUERY:1:")
    else:
        assert got == message
