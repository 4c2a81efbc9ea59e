"""``best_offers_verify`` (SPEC 5.3) finds a best-offer row or a match that differs from the
recomputation: in a small book's scratch store (no secondary indexes, no statistics) and in
a large one's (indexes built over its rows), with each strategy."""

from __future__ import annotations

import pytest

from exchange.models import BestOffer, OfferBidMatch
from exchange.services import verification
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]


@pytest.mark.parametrize("book", ["small", "large"])
def test_a_wrong_best_bid_and_a_lost_match_are_found(monkeypatch, book):
    # Given a book taken as small or as large, whose two bids both match the first offer
    monkeypatch.setattr(verification, "SMALL_BOOK", 500 if book == "small" else 0)
    market = pencils_market()
    seller = UserFactory()
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    offer_publish(seller=seller, market=market, constraint="lot = 500 AND price >= 1.00")
    low = bid_place(buyer=UserFactory(), market=market, constraint="lot = 10 AND price <= 1.10")
    high = bid_place(buyer=UserFactory(), market=market, constraint="lot = 20 AND price <= 1.20")
    matching_cycle_run()
    result = best_offers_verify()
    assert result.clean and result.offers == 2
    assert BestOffer.objects.get(offer=offer).bid_id == high.pk

    # When the table names the lower bid best, the verification finds that offer's row
    BestOffer.objects.filter(offer=offer).update(bid=low)
    result = best_offers_verify()
    assert [
        (d.offer_id, d.table[0], d.recomputed[0], d.recomputed[2]) for d in result.differences
    ] == [(offer.pk, low.pk, high.pk, 2)]
    assert result.match_differences == 0 and not result.clean

    # and when a match is lost as well, that one too
    OfferBidMatch.objects.filter(offer=offer, bid=low).delete()
    result = best_offers_verify()
    assert len(result.differences) == 1 and result.match_differences == 1
