"""``best_bids`` joins only the matches at an offer's highest value to their bids (issues 35
and 36); it must find exactly what the statement before it found, which joined every match:
the best bid (highest value, then the earlier ``priority_at``, then the lower id), its
value and how many bids match, for offers with any matches, ties or none.

Generated matches (values and bid priorities drawn from a few, so that ties are common) are
written in a savepoint rolled back after; the answer is compared with the former statement
and with the rule written out in Python.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exchange.models import Bid, Offer, OfferBidMatch
from exchange.services.best import NO_BEST, Best
from exchange.services.matching import best_bids
from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

OFFERS, BIDS = 4, 6

# The statement ``best_bids`` ran before: every match joined to its bid.
FORMER_SQL = """
SELECT DISTINCT ON (m.offer_id) m.offer_id, m.bid_id, m.value,
       count(*) OVER (PARTITION BY m.offer_id)
FROM exchange_offerbidmatch m JOIN exchange_bid b ON b.id = m.bid_id
WHERE m.offer_id = ANY(%s)
ORDER BY m.offer_id, m.value DESC, b.priority_at, b.id
"""

AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def book() -> tuple[list[Offer], list[Bid]]:
    market = pencils_market()
    seller, buyer = UserFactory(), UserFactory()
    offers = [
        offer_publish(seller=seller, market=market, constraint=f"lot = {i + 1} AND price >= 1")
        for i in range(OFFERS)
    ]
    bids = [
        bid_place(buyer=buyer, market=market, constraint=f"lot = {100 + i} AND price <= 2")
        for i in range(BIDS)
    ]
    return offers, bids


matches = st.dictionaries(
    st.tuples(st.integers(0, OFFERS - 1), st.integers(0, BIDS - 1)),
    # Mostly the top value, so that the tie-breaks decide; one just below it (the column's
    # tenth place) and a zero.
    st.sampled_from([Decimal(2), Decimal(2), Decimal("2.0000000000"), Decimal("1.9999999999"), 0]),
    max_size=OFFERS * BIDS,
)
priorities = st.lists(st.integers(0, 2), min_size=BIDS, max_size=BIDS)


def expected(drawn: dict[tuple[int, int], Decimal], offers: list[Offer], bids: list[Bid],
             priority: list[int]) -> dict[int, Best]:  # fmt: skip
    """The rule written out: highest value, then the earlier priority, then the lower id."""
    found = {}
    for i, offer in enumerate(offers):
        mine = [(value, b) for (o, b), value in drawn.items() if o == i]
        if not mine:
            found[offer.pk] = NO_BEST
            continue
        value, b = min(mine, key=lambda vb: (-vb[0], priority[vb[1]], bids[vb[1]].pk))
        found[offer.pk] = Best(bids[b].pk, value, len(mine))
    return found


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(drawn=matches, priority=priorities)
# A tie on value broken by the priority against the id, and one broken by the id.
@example(drawn={(0, 0): Decimal(2), (0, 1): Decimal(2)}, priority=[1, 0, 0, 0, 0, 0])
@example(drawn={(0, 1): Decimal(2), (0, 0): Decimal(2)}, priority=[0, 0, 0, 0, 0, 0])
def test_best_bids_finds_what_the_former_statement_found(book, drawn, priority):
    # Given generated matches and bid priorities, ties included
    offers, bids = book
    ids = [o.pk for o in offers]
    with transaction.atomic():
        OfferBidMatch.objects.filter(offer_id__in=ids).delete()
        OfferBidMatch.objects.bulk_create(
            OfferBidMatch(offer=offers[o], bid=bids[b], value=value, pub_disjunct=0,
                          sub_disjunct=0)
            for (o, b), value in drawn.items()
        )  # fmt: skip
        for bid, p in zip(bids, priority, strict=True):
            Bid.objects.filter(pk=bid.pk).update(priority_at=AT + dt.timedelta(seconds=p))
        # When the best bids are read
        found = best_bids(ids)
        with connection.cursor() as cursor:
            cursor.execute(FORMER_SQL, [ids])
            former: dict[int, Any] = {row[0]: Best(row[1], row[2], row[3]) for row in cursor}
        transaction.set_rollback(True)
    # Then they are the former statement's, and the rule's
    assert found == {i: former.get(i, NO_BEST) for i in ids}
    assert found == expected(drawn, offers, bids, priority)


def test_best_bids_of_no_offer_is_empty():
    assert best_bids([]) == {}
