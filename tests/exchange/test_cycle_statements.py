"""A matching cycle over one change runs a fixed number of statements, whatever the size of
the book (issue 17): no statement per offer, bid or match of the book.

The statements are counted at the driver, under Django and the constraint store alike (the
store runs on Django's connection but with cursors of its own): every ``execute``, every
parameter set of an ``executemany`` and every ``COPY``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from exchange.models import BestOffer, Market, Notification, Offer
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place

pytestmark = pytest.mark.django_db

# What one cycle over one new best bid runs: the locks (the cycle lock shared, then its
# markets' locks), the batch (with its changes' events), the store update and its match, the
# matches, the tail lock, the store's counters (deferred to here: two statements), the
# best-offer row with its history and outbox (one statement since issue 36 merged the row's
# upsert and the two bulk_creates, which were three), the events appended to the log (the
# counter locked and read, the best-offer history since its mark, one insert that moves the
# counter on), the cycle's record.
CYCLE_STATEMENTS = 34


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every statement sent to PostgreSQL inside the block, by any cursor."""
    sent: list[str] = []
    execute, executemany, copy = (
        psycopg.Cursor.execute,
        psycopg.Cursor.executemany,
        psycopg.Cursor.copy,
    )

    def counted_execute(self, query, *args, **kwargs):
        sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    def counted_executemany(self, query, params_seq, *args, **kwargs):
        params_seq = list(params_seq)
        sent.extend(str(query) for _ in params_seq)
        return executemany(self, query, params_seq, *args, **kwargs)

    def counted_copy(self, statement, *args, **kwargs):
        sent.append(str(statement))
        return copy(self, statement, *args, **kwargs)

    psycopg.Cursor.execute = counted_execute
    psycopg.Cursor.executemany = counted_executemany
    psycopg.Cursor.copy = counted_copy
    try:
        yield sent
    finally:
        psycopg.Cursor.execute, psycopg.Cursor.executemany = execute, executemany
        psycopg.Cursor.copy = copy


@pytest.mark.parametrize("offers, bids", [(10, 100), (200, 4000)])
def test_a_cycle_over_one_change_runs_the_same_statements_on_any_book(offers, bids):
    # Given the bench's book (offer i sells lots 100 i + 1 to 100 i + 50; bids up to 1.49)
    call_command("bench_book", offers=offers, bids=bids, seed=3, verbosity=0)
    market = Market.objects.get()
    offer = Offer.objects.order_by("id")[1]
    buyer = get_user_model().objects.get(username="buyer0")
    bid = bid_place(buyer=buyer, market=market, constraint="lot = 101 AND price <= 1.60")
    notes = Notification.objects.count()

    # When one cycle takes the one change
    with statements() as sent:
        report = matching_cycle_run()

    # Then the bid is the offer's best, the cycle wrote its outbox, and it took a fixed
    # number of statements
    assert (report.changes, report.offers_touched) == (1, 1)
    assert BestOffer.objects.get(offer=offer).bid_id == bid.pk
    assert Notification.objects.count() - notes == report.notifications == 4
    assert len(sent) == CYCLE_STATEMENTS, "\n".join(sent)
