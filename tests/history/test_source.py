"""``history_source``'s choice between the replica and the primary, with the replica's
answers scripted: no database is needed, and no timing is waited out."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from exchange.selectors import history


class Connection:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def replica(settings, monkeypatch):
    """The replica's answers to ``history_end``, in order: an int (its last ``seq``) or an
    exception it raises; its connection records how often it was closed."""
    settings.HISTORY_DATABASE = "history"
    answers: list[Any] = []
    connection = Connection()

    def end(*, using: str) -> int:
        assert using == "history"
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    clock = [0.0]
    monkeypatch.setattr(history, "history_end", end)
    monkeypatch.setattr(history, "connections", {"history": connection})
    monkeypatch.setattr(history.time, "monotonic", lambda: clock[0])

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr(history.time, "sleep", sleep)
    return answers, connection


def test_a_query_the_standby_cancelled_is_tried_again_on_a_new_session(replica):
    # Given a replica whose first look is cancelled by a conflict with recovery
    answers, connection = replica
    answers += [OperationalError("canceling statement due to conflict with recovery"), 40, 50]
    # Then the read still goes to the replica once it holds the end, after a new session
    assert history.history_source(upto=50, wait=1.0) == "history"
    assert connection.closed == 1
    assert answers == []


def test_a_replica_that_keeps_failing_leaves_the_read_to_the_primary_at_the_deadline(replica):
    answers, connection = replica
    answers += [OperationalError("the replica is away")] * 1000
    assert history.history_source(upto=50, wait=0.05) == "default"
    # one look, then one every REPLICA_POLL until the deadline, each on a new session
    looks = 1000 - len(answers)
    assert looks == connection.closed == round(0.05 / history.REPLICA_POLL) + 1


def test_no_wait_means_one_look(replica):
    answers, connection = replica
    answers += [OperationalError("cancelled"), 50]
    assert history.history_source(upto=50, wait=0) == "default"
    assert answers == [50]
