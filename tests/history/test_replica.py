"""Historic reads through the real streaming replica of the test cluster (``ops/services
--test start`` runs it; without it these tests are skipped, saying so).

The run's test database is created on the primary, so the replica holds it too, under the
same name (``HISTORY_DATABASE``'s alias mirrors ``default`` in the test settings). Rows
must be committed to reach the replica: these tests run outside a transaction."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError, connections

from exchange.selectors.history import history_end, history_events, history_lines, history_source
from exchange.services.events import events_insert
from tests.api.conftest import client_for
from tests.factories import StaffFactory
from tests.history.logs import log_write, python_events, python_lines

pytestmark = [
    pytest.mark.skipif(
        "history" not in django_settings.DATABASES,
        reason="no replica is running: `ops/services --test start` starts one",
    ),
    pytest.mark.django_db(transaction=True, databases=["default", "history"]),
]

AT = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
# Long enough for a replica that streams to catch up on a busy machine; only waited out
# when something is wrong.
CATCH_UP = 60.0


def rows(first: int, count: int) -> list:
    return [
        (
            ("best_offer", "office.supplies.pencils", None, {"offer": i, "value": "1.25"}),
            AT + dt.timedelta(seconds=i),
        )
        for i in range(first, first + count)
    ]


def replica_caught_up() -> None:
    """Wait until the replica has replayed everything the primary has written so far.

    The tests rewrite the log from ``seq`` 1 (``log_write``), so "the replica holds event
    ``upto``" could be read off an earlier test's log that the replica has not yet seen
    deleted; waiting for the primary's WAL position first makes each test's log the one the
    replica shows."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        (lsn,) = cursor.fetchone()
    deadline = time.monotonic() + CATCH_UP
    while True:
        try:
            with connections["history"].cursor() as cursor:
                cursor.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [lsn])
                (done,) = cursor.fetchone()
        except DatabaseError:  # a query the standby cancelled (see history_source)
            connections["history"].close()
            done = False
        if done:
            return
        assert time.monotonic() < deadline, f"the replica did not replay up to {lsn}"
        time.sleep(0.01)


def replay(action: str) -> None:
    with connections["history"].cursor() as cursor:
        cursor.execute(f"SELECT pg_wal_replay_{action}()")


@pytest.fixture
def replica(settings):
    settings.HISTORY_DATABASE = "history"
    yield
    replay("resume")  # never leave the shared replica paused


def test_the_replica_is_a_hot_standby_of_the_runs_database(replica):
    with connections["history"].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery(), current_database()")
        assert cursor.fetchone() == (True, connections["default"].settings_dict["NAME"])


def test_a_read_through_the_replica_equals_the_primary(replica):
    # Given a committed log
    upto = log_write(rows(0, 500))
    replica_caught_up()
    # When the replica has caught up, the read goes there
    assert history_source(upto=upto, wait=CATCH_UP) == "history"
    staff = StaffFactory()
    for user in (staff, AnonymousUser()):
        through_replica = b"".join(history_lines(user=user, after=0, upto=upto, using="history"))
        # Then it gives exactly what the primary gives
        assert through_replica == b"".join(
            history_lines(user=user, after=0, upto=upto, using="default")
        )
        assert through_replica == python_lines(user)
    # and so does the API, which reads history through the same choice
    body = b"".join(client_for(staff).get("/api/v1/events/?format=jsonl").streaming_content)
    assert body == python_lines(staff)


def test_a_paused_replica_is_not_waited_for_and_nothing_is_missed(replica):
    # Given a replica that has the first 300 events, then stops replaying
    first = log_write(rows(0, 300))
    replica_caught_up()
    assert history_source(upto=first, wait=CATCH_UP) == "history"
    replay("pause")
    # When 200 more are committed on the primary
    events_insert(rows(300, 200), first_seq=first + 1)
    upto = first + 200
    assert history_end(using="default") == upto
    assert history_end(using="history") == first  # the replica really is behind
    # Then a read up to the new end goes to the primary, and misses nothing
    assert history_source(upto=upto, wait=0.2) == "default"
    read = list(history_events(user=AnonymousUser(), after=0, upto=upto))
    assert [e["seq"] for e in read] == list(range(1, upto + 1))
    assert read == python_events(AnonymousUser())
    # while a read that the replica can answer still goes to it
    assert history_source(upto=first, wait=0) == "history"
    # When replay resumes, the replica is used again for the new end
    replay("resume")
    assert history_source(upto=upto, wait=CATCH_UP) == "history"
    assert list(history_events(user=AnonymousUser(), after=0, upto=upto, using="history")) == read
