"""``manage.py subscription_run`` (SPEC 8.3's offline contract): output lines, the end
line, exit statuses, and no database.

The in-process tests take no ``db`` fixture, so pytest-django refuses any database
access: they would fail if the command opened a connection. One subprocess test also
points ``DATABASE_URL`` at a port where nothing listens.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.livestack import ROOT
from tests.matching.subscriptions.subscription_cases import (
    COMPOSITE,
    COMPOSITE_QUERY,
    EXAMPLES,
    TRADES,
    at,
)
from tests.matching.subscriptions.test_query_depth import DEEP, DEEP_MESSAGE


def write_events(tmp_path: Path, events, name="events.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def run(path: str, query: str, *extra: str) -> tuple[int | str | None, list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    status: int | str | None = 0
    try:
        call_command("subscription_run", path, query, *extra, stdout=out, stderr=err)
    except SystemExit as exc:
        status = exc.code
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return status, lines, err.getvalue()


@pytest.mark.parametrize(("query", "now", "expected"), EXAMPLES)
def test_worked_examples(tmp_path, query, now, expected):
    path = write_events(tmp_path, TRADES)
    status, lines, err = run(path, query, *(["--now", now] if now else []))
    assert (status, err) == (0, "")
    assert lines == [
        {"n": n, "seq": seq, "data": data} for n, (seq, data) in enumerate(expected, 1)
    ]


def test_composite_example(tmp_path):
    status, lines, _ = run(write_events(tmp_path, COMPOSITE), COMPOSITE_QUERY)
    assert status == 0
    assert lines == [{"n": 1, "seq": 2, "data": {"b": {"offer": 7}}}]


def test_an_end_in_the_future_completes_at_the_first_live_event_reaching_it(tmp_path):
    path = write_events(tmp_path, TRADES)
    query = "SELECT price WHERE price > 1.00, start_time = NOW - 25m, end_time = NOW + 15m"
    status, lines, _ = run(path, query, "--now", at("10:30"))
    assert status == 0
    # 10:40 is delivered; 10:50 reaches the end (10:45) and is not.
    assert lines == [
        {"n": 1, "seq": 2, "data": {"price": "1.10"}},
        {"n": 2, "seq": 4, "data": {"price": "1.20"}},
        {"n": 3, "seq": 5, "data": {"price": "1.30"}},
        {"end": True},
    ]


def test_an_end_in_the_past_completes_after_the_history(tmp_path):
    path = write_events(tmp_path, TRADES)
    query = "SELECT price WHERE start_time = TIMESTAMP '2026-11-20T10:00:00Z', end_time = NOW - 25m"
    status, lines, _ = run(path, query, "--now", at("10:30"))
    assert status == 0
    assert lines == [{"n": 1, "seq": 1, "data": {"price": "1.00"}}, {"end": True}]


def test_a_subscription_without_end_prints_no_end_line(tmp_path):
    status, lines, _ = run(write_events(tmp_path, TRADES), "SELECT seq")
    assert status == 0
    assert lines == [{"n": k, "seq": k, "data": {"seq": k}} for k in range(1, 7)]


def test_an_empty_file_with_a_past_end_completes(tmp_path):
    status, lines, _ = run(write_events(tmp_path, []), "SELECT * WHERE end_time = NOW")
    assert (status, lines) == (0, [{"end": True}])


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT price WHERE price > 'x'", "QUERY:1:28: price is a decimal attribute"),
        ("SELECT price WHERE lot > 1", "QUERY:1:20: unknown attribute lot"),
        ("SELECT price AS avg", "QUERY:1:17: AVG is a reserved keyword"),
        ("SELECT price WHERE subject MATCHES 'office.'", "QUERY:1:44: empty token"),
        ("", "QUERY:1:1: expected SELECT"),
        (
            "SELECT a.price FROM FILTER{type = 'trade'}(EVENTS) AS",
            "QUERY:1:54: expected an alias such as a",
        ),
        (DEEP, f"QUERY:1:116: {DEEP_MESSAGE}"),
    ],
)
def test_a_bad_query_exits_2_with_its_column(tmp_path, query, message):
    status, lines, err = run(write_events(tmp_path, TRADES), query)
    assert (status, lines) == (2, [])
    assert err.startswith(message), err


GOOD = json.dumps(TRADES[0]) + "\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (GOOD + '{"seq": 2}\n', ":2: the event has no time"),
        (GOOD + "not json\n", ":2: not JSON"),
        (GOOD + "[1]\n", ":2: an event is a JSON object"),
        (GOOD + json.dumps({**TRADES[1], "price": 1.5}) + "\n", ":2: price must be a decimal"),
        (GOOD + json.dumps({**TRADES[1], "seq": "2"}) + "\n", ":2: seq must be a JSON integer"),
        (GOOD + json.dumps({**TRADES[1], "offer": None}) + "\n", ":2: offer is null"),
        (GOOD + json.dumps(TRADES[0]) + "\n", ":2: seq 1 does not follow 1"),
        (
            GOOD + json.dumps({**TRADES[1], "time": at("09:00")}) + "\n",
            ":2: time goes backwards",
        ),
        (
            GOOD + json.dumps({**TRADES[1], "time": "9999-12-31T23:59:59-05:00"}) + "\n",
            ":2: time is not a valid timestamp",
        ),
    ],
)
def test_a_malformed_file_exits_1_before_printing_anything(tmp_path, content, message):
    # The good first line would already be printed by a reader that did not check first.
    path = tmp_path / "events.jsonl"
    path.write_text(content)
    status, lines, err = run(str(path), "SELECT *")
    assert (status, lines) == (1, [])
    assert err.startswith(f"{path}{message}"), err


def test_a_missing_file_exits_1(tmp_path):
    status, lines, err = run(str(tmp_path / "nope.jsonl"), "SELECT *")
    assert (status, lines) == (1, [])
    assert "cannot read the events file" in err


def test_a_bad_now_exits_1(tmp_path):
    status, lines, err = run(write_events(tmp_path, TRADES), "SELECT *", "--now", "10:30")
    assert (status, lines) == (1, [])
    assert err.startswith("--now: --now must be an ISO 8601 timestamp")


def test_it_runs_with_an_unreachable_database(tmp_path):
    path = write_events(tmp_path, TRADES)
    env = {**os.environ, "DATABASE_URL": "postgres://nobody:none@127.0.0.1:1/none"}
    result = subprocess.run(
        [sys.executable, "manage.py", "subscription_run", path, EXAMPLES[0][0]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(x)["seq"] for x in result.stdout.splitlines()] == [2, 4, 5, 6]


def test_a_query_nested_too_deep_exits_2_from_the_command_line(tmp_path):
    # issue 37: 237 levels printed a RecursionError's traceback and exited 1
    result = subprocess.run(
        [sys.executable, "manage.py", "subscription_run", write_events(tmp_path, TRADES), DEEP],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"QUERY:1:116: {DEEP_MESSAGE}\n"


@pytest.mark.parametrize("now", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"])
def test_a_now_beyond_the_calendar_in_utc_exits_1(tmp_path, now):
    status, lines, err = run(write_events(tmp_path, TRADES), "SELECT *", "--now", now)
    assert (status, lines) == (1, [])
    assert err.startswith("--now: --now is not a valid timestamp"), err


def test_a_four_way_composite_is_suspended_by_its_outputs_per_event(tmp_path):
    # Given 30 trades, each of which qualifies for every alias (issue 37: 657,720 outputs
    # and 899 MB before the limits)
    events = [
        {"seq": s, "time": at(f"10:{s:02d}"), "type": "trade", "subject": "a.b", "price": "1"}
        for s in range(1, 31)
    ]
    query = "SELECT * FROM a AND b AND c AND d WHERE start_time = NOW - 7d"

    # When subscription_run runs the query over them
    status, lines, err = run(write_events(tmp_path, events), query)

    # Then seq 16, which would complete 10,920 tuples, sends the suspension instead, and it
    # is the last line (no end); the status is 0
    assert (status, err) == (0, "")
    assert lines[-1] == {"n": len(lines), "seq": 16, "data": {"error": "state_limit"}}
    assert len(lines) == 1 + sum(4 * (s - 1) * (s - 2) * (s - 3) for s in range(4, 16))
