"""Random sequences of posts, amends, withdrawals and closes across markets: after every step
the best-offer table equals a recomputation from scratch (SPEC 5.3), and each buyer's
commitment the sum of its active bids' largest awards (``BuyerCommitment``)."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

import matching
from exchange import engine
from exchange.errors import ExchangeError
from exchange.models import Bid, Offer, OfferBidMatch, Trade
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import (
    bid_amend,
    bid_place,
    bid_withdraw,
    offer_amend,
    offer_publish,
    offer_withdraw,
)
from exchange.services.verification import best_offers_verify
from tests.exchange.test_buyer_commitment import active_award_sums, commitments
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]

lots = st.integers(1, 8)
prices = st.sampled_from(["1.00", "1.01", "1.02", "1.03"])


@st.composite
def offer_texts(draw):
    a, b = sorted((draw(lots), draw(lots)))
    op = draw(st.sampled_from(["=", ">="]))
    text = f"lot BETWEEN {a} AND {b} AND price {op} {draw(prices)}"
    if draw(st.booleans()):
        c = draw(lots)
        text = f"({text}) OR (lot = {c} AND price {op} {draw(prices)})"
    return text


@st.composite
def bid_texts(draw):
    lot = draw(
        st.sampled_from(
            ["", "lot = * AND ", f"lot IN [{draw(lots)}, 8] AND ", f"lot <= {draw(lots)} AND "]
        )
    )
    return f"{lot}price <= {draw(prices)}"


class Exchange(RuleBasedStateMachine):
    offers = Bundle("offers")
    bids = Bundle("bids")

    def __init__(self):
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.markets = [
            pencils_market(subject="m.first"),
            pencils_market(subject="m.second", pricing="second"),
        ]
        self.sellers = [UserFactory(username=f"s{i}") for i in range(2)]
        self.buyers = [UserFactory(username=f"b{i}") for i in range(3)]
        self.staff = StaffFactory(username="staff")

    def teardown(self):
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    @rule(target=offers, market=st.integers(0, 1), seller=st.integers(0, 1), text=offer_texts())
    def publish(self, market, seller, text):
        return offer_publish(
            seller=self.sellers[seller], market=self.markets[market], constraint=text
        ).pk

    @rule(target=bids, market=st.integers(0, 1), buyer=st.integers(0, 2), text=bid_texts())
    def place(self, market, buyer, text):
        return bid_place(buyer=self.buyers[buyer], market=self.markets[market], constraint=text).pk

    @rule(offer=offers, text=offer_texts())
    def amend_offer(self, offer, text):
        o = Offer.objects.get(pk=offer)
        if o.state == "open":
            offer_amend(seller=o.seller, offer_id=offer, constraint=text, version=o.version)

    @rule(bid=bids, text=bid_texts())
    def amend_bid(self, bid, text):
        b = Bid.objects.get(pk=bid)
        if b.state == "active":
            bid_amend(buyer=b.buyer, bid_id=bid, constraint=text, version=b.version)

    @rule(offer=offers)
    def withdraw_offer(self, offer):
        o = Offer.objects.get(pk=offer)
        if o.state == "open":
            offer_withdraw(seller=o.seller, offer_id=offer)

    @rule(bid=bids)
    def withdraw_bid(self, bid):
        b = Bid.objects.get(pk=bid)
        if b.state == "active":
            bid_withdraw(buyer=b.buyer, bid_id=bid)

    @rule(offer=offers)
    def close(self, offer):
        try:
            offer_close(offer_id=offer, staff=self.staff)
        except ExchangeError as exc:
            assert exc.code == "not_open"

    @rule()
    def cycle(self):
        matching_cycle_run()

    @invariant()
    def commitments_are_the_sums_of_the_active_awards(self):
        assert commitments() == active_award_sums()

    @invariant()
    def table_equals_recomputation(self):
        matching_cycle_run()
        result = best_offers_verify()
        assert result.clean, result
        # The recomputation shares the store with the cycle; the oracle shares nothing.
        offers = Offer.objects.filter(state="open").select_related("market")
        bids = list(Bid.objects.filter(state="active").select_related("market"))
        expected = {
            (o.pk, b.pk)
            for o in offers
            for b in bids
            if matching.matches(engine.usable_constraint(o), engine.usable_constraint(b))
        }
        assert set(OfferBidMatch.objects.values_list("offer_id", "bid_id")) == expected
        assert (
            Trade.objects.count()
            == Offer.objects.filter(state="closed", trade__isnull=False).count()
        )
        assert Bid.objects.filter(state="filled").count() == Trade.objects.count()


def test_best_offer_table_survives_random_histories():
    run_state_machine_as_test(
        Exchange,
        settings=settings(
            max_examples=12,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
