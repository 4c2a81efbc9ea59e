"""A personal notification a request writes (staff cancelling an offer: its seller's
``offer`` row) takes its id under the cycles' tail lock, held to commit, as a cycle's
notifications do: the seller's ``me`` stream reads after the last id it sent, so a row
committed out of id order with a cycle's rows for the same seller would be skipped
(docs/reliability.md). The bid path and the requests that write no personal row do not
take it."""

from __future__ import annotations

from unittest import mock

import psycopg
import pytest
from django.db import connection, transaction

from exchange.models import Notification, Offer
from exchange.services.closing import offer_close
from exchange.services.matching import TAIL_LOCK, matching_cycle_run
from exchange.services.orders import bid_place, offer_cancel, offer_publish, offer_withdraw
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db

OFFER = "lot <= 100 AND price >= 1.00"


@pytest.fixture
def hold_tail():
    """``hold_tail()``: another session takes the tail lock, as a cycle holds it from
    writing its notifications to its commit."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        yield lambda: other.execute("SELECT pg_advisory_lock(%s)", [TAIL_LOCK])


def test_staff_cancelling_an_offer_waits_for_a_cycles_tail(hold_tail):
    market, seller = pencils_market(), UserFactory()
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        offer = offer_publish(seller=seller, market=market, constraint=OFFER)
        mine = offer_publish(seller=seller, market=market, constraint=OFFER)
        hold_tail()
        # Neither placing a bid nor a seller's own withdrawal (no personal row) waits
        bid_place(buyer=UserFactory(), market=market, constraint="lot = 5 AND price <= 1.00")
        offer_withdraw(seller=seller, offer_id=mine.pk)
        # Cancelling writes the seller's own row: it waits for the tail (here it gives up
        # at the lock timeout, and nothing is written)
        with pytest.raises(Exception, match="lock timeout"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '200ms'")
            offer_cancel(staff=StaffFactory(), offer_id=offer.pk)
    offer.refresh_from_db()
    assert offer.state == Offer.State.OPEN
    assert not Notification.objects.filter(recipient=seller).exists()


def test_once_the_tail_is_free_the_cancel_writes_the_sellers_row():
    market, seller = pencils_market(), UserFactory()
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        offer = offer_publish(seller=seller, market=market, constraint=OFFER)
        offer_cancel(staff=StaffFactory(), offer_id=offer.pk)
    [note] = Notification.objects.filter(recipient=seller)
    assert (note.type, note.data["state"]) == ("offer", "cancelled")


@pytest.mark.django_db(transaction=True)  # the cycle before commits (and frees the tail)
def test_closing_an_offer_nobody_bid_on_writes_its_sellers_row_under_the_tail_lock(hold_tail):
    """Closing holds the cycle lock, so no cycle runs meanwhile, but a staff cancel may: its
    notes go under the tail lock too (an offer with a best bid took it already, for its
    best-offer history; one with none did not)."""
    market, seller = pencils_market(), UserFactory()
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        offer = offer_publish(seller=seller, market=market, constraint=OFFER)
    matching_cycle_run()
    hold_tail()
    with pytest.raises(Exception, match="lock timeout"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '200ms'")
        offer_close(offer_id=offer.pk, staff=StaffFactory())
    offer.refresh_from_db()
    assert offer.state == Offer.State.OPEN
    assert not Notification.objects.filter(recipient=seller).exists()
