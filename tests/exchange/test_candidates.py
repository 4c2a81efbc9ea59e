"""The engine's store finds candidates without the subject and the price; the cycle decides
them on the full constraints (``engine.candidate_constraint``). These cases are the ones
where the candidate and the full answer differ, checked against the plain-Python oracle."""

from __future__ import annotations

from decimal import Decimal

import pytest

import matching
from exchange import engine
from exchange.models import Bid, Offer, OfferBidMatch
from exchange.services.markets import market_create
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]

PRICE_ONLY_SCHEMA = [
    {
        "name": "price",
        "type": "decimal",
        "label": "Price",
        "unit": "",
        "required_on_offer": True,
        "required_on_bid": True,
        "role": "price",
    },
    {
        "name": "lot",
        "type": "int",
        "label": "Lot",
        "unit": "",
        "required_on_offer": False,
        "required_on_bid": False,
        "role": "quantity",
    },
]


def oracle_pairs() -> set[tuple[int, int]]:
    offers = Offer.objects.filter(state="open").select_related("market")
    bids = list(Bid.objects.filter(state="active").select_related("market"))
    return {
        (o.pk, b.pk)
        for o in offers
        for b in bids
        if matching.matches(engine.usable_constraint(o), engine.usable_constraint(b))
    }


def stored_pairs() -> set[tuple[int, int]]:
    return set(OfferBidMatch.objects.values_list("offer_id", "bid_id"))


def test_candidate_constraint_drops_subject_and_price_and_renames_into_the_market():
    market = pencils_market()
    seller, buyer = UserFactory(), UserFactory()
    # (an upper lot: a bid without one meeting an offer without one would have no bounded
    # cost, which the spending limit refuses)
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 10 AND 1000 AND price >= 1.00"
    )
    bid = bid_place(buyer=buyer, market=market, constraint="price <= 1.10")
    m = f"m{market.pk}"
    assert matching.to_text(engine.candidate_constraint(offer)) == f"{m}__lot BETWEEN 10 AND 1000"
    assert matching.to_text(engine.candidate_constraint(bid)) == f"{m} = 0 AND int {m}__lot = *"


def test_price_that_does_not_meet_is_a_candidate_but_no_match():
    market = pencils_market()
    seller, buyer = UserFactory(), UserFactory()
    offer = offer_publish(seller=seller, market=market, constraint="lot = 5 AND price >= 1.20")
    bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.10")  # too low
    high = bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.25")
    matching_cycle_run()
    assert stored_pairs() == oracle_pairs() == {(offer.pk, high.pk)}


def test_markets_with_the_same_attribute_names_never_meet():
    pens = pencils_market(subject="office.supplies.pens")
    pencils = pencils_market(subject="office.supplies.pencils")
    seller, buyer = UserFactory(), UserFactory()
    pen = offer_publish(seller=seller, market=pens, constraint="lot = 5 AND price >= 1.00")
    pencil = offer_publish(seller=seller, market=pencils, constraint="lot = 5 AND price >= 1.00")
    pen_bid = bid_place(buyer=buyer, market=pens, constraint="lot = 5 AND price <= 2.00")
    any_pencil = bid_place(buyer=buyer, market=pencils, constraint="price <= 2.00")
    matching_cycle_run()
    assert stored_pairs() == oracle_pairs() == {(pen.pk, pen_bid.pk), (pencil.pk, any_pencil.pk)}


def test_offer_with_nothing_but_a_price_meets_only_its_own_market():
    first = market_create(subject="a.first", title="A", schema=PRICE_ONLY_SCHEMA, tick="0.01")
    second = market_create(subject="a.second", title="B", schema=PRICE_ONLY_SCHEMA, tick="0.01")
    seller, buyer = UserFactory(), UserFactory()
    # The bid first: placed after this offer with no lot it would have no bounded cost,
    # which the spending limit refuses
    mine = bid_place(buyer=buyer, market=first, constraint="price <= 1.50")
    offer = offer_publish(seller=seller, market=first, constraint="price >= 1.00")
    assert matching.to_text(engine.candidate_constraint(offer)) == f"m{first.pk} = 0"
    too_low = bid_place(buyer=buyer, market=first, constraint="lot = 3 AND price <= 0.50")
    bid_place(buyer=buyer, market=second, constraint="price <= 1.50")
    matching_cycle_run()
    assert stored_pairs() == oracle_pairs() == {(offer.pk, mine.pk)}
    assert too_low.pk not in {b for _, b in stored_pairs()}


def test_price_tiers_with_the_same_lot_take_the_tier_whose_price_meets():
    market = pencils_market()
    seller, buyer = UserFactory(), UserFactory()
    # Both tiers become the same candidate disjunct; only the cheaper one meets the bid.
    offer = offer_publish(
        seller=seller,
        market=market,
        constraint="(lot BETWEEN 1 AND 10 AND price >= 2.00) OR (lot BETWEEN 1 AND 10 AND price >= 1.00)",
    )
    bid = bid_place(buyer=buyer, market=market, constraint="lot = 4 AND price <= 1.50")
    matching_cycle_run()
    assert stored_pairs() == oracle_pairs() == {(offer.pk, bid.pk)}
    match = OfferBidMatch.objects.get()
    assert (match.pub_disjunct, match.sub_disjunct) == (1, 0)
    assert match.value == Decimal("1.50")
