"""``cycle_end`` marks a cycle's changes processed and writes its record in one statement of
its own (issue 36) rather than the ORM's ``update`` and ``create``: it must leave exactly the
rows the ORM would (every column of each, read as PostgreSQL's JSON of the whole row, so a
column added later is compared too), and touch no other change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import MatchingCycle, OrderChange
from exchange.services.matching import cycle_end

pytestmark = pytest.mark.django_db

CHANGES = 5
START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def changes() -> list[int]:
    """Pending changes (their orders need not exist: nothing here reads them)."""
    return [OrderChange.objects.create(side="bid", order_id=i + 1).pk for i in range(CHANGES)]


def rows_after(write: Callable[[], None]) -> tuple[list[str], list[str]]:
    """Run ``write`` in a savepoint rolled back after; every change row and every cycle record
    it left (ids of the records left out: the sequence moves on), each as its row's JSON."""
    with transaction.atomic():
        mark = MatchingCycle.objects.order_by("-id").values_list("id", flat=True).first() or 0
        write()
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_jsonb(c)::text FROM exchange_orderchange c ORDER BY id")
            change_rows = [row[0] for row in cursor.fetchall()]
            cursor.execute(
                "SELECT (to_jsonb(m) - 'id')::text FROM exchange_matchingcycle m"
                " WHERE id > %s ORDER BY id",
                [mark],
            )
            records = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    return change_rows, records


counts = st.integers(0, 2**31 - 1)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    taken=st.sets(st.integers(0, CHANGES - 1)),
    processed=st.integers(0, 10**9),
    took=st.integers(0, 10**9),
    figures=st.tuples(counts, counts, counts, counts),
    strategy=st.sampled_from(["range", "paper"]),
)
def test_cycle_end_writes_what_the_orm_would(changes, taken, processed, took, figures, strategy):
    # Given some of the pending changes, a processing time and a cycle's figures
    ids = sorted(changes[i] for i in taken)
    processed_at = START + dt.timedelta(microseconds=processed)
    finished_at = processed_at + dt.timedelta(microseconds=took)
    done, touched, notes, aside = figures

    def record() -> MatchingCycle:
        return MatchingCycle(
            started_at=START,
            finished_at=finished_at,
            changes=done,
            offers_touched=touched,
            notifications=notes,
            set_aside=aside,
            strategy=strategy,
        )

    def through_the_orm() -> None:
        OrderChange.objects.filter(id__in=ids).update(processed_at=processed_at)
        record().save()

    # When the cycle ends through the one statement and through the ORM
    ended = rows_after(lambda: cycle_end(change_ids=ids, processed_at=processed_at, cycle=record()))

    # Then every row is the same, and only the changes taken are processed
    assert ended == rows_after(through_the_orm)
    assert OrderChange.objects.filter(processed_at__isnull=False).count() == 0
    change_rows, records = ended
    assert sum('"processed_at": null' not in row for row in change_rows) == len(ids)
    assert len(records) == 1
