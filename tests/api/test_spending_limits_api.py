"""Spending limits and the story of a bid over the API (issue 39): a bid past its buyer's
remaining limit gets a 400 over_limit with the numbers, on POST and on PATCH, and nothing
changes; a bid's matches say the minimum next bid and whether only the buyer's own bid is
ahead; after closing, its outcomes say how the auction ended."""

from __future__ import annotations

from decimal import Decimal

import pytest

from exchange.models import Bid, OrderChange, SpendingLimit
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place

pytestmark = pytest.mark.django_db


@pytest.fixture
def limited(world):
    """alice (lot 10 at 1.50 active: 15.00 committed) has a limit of 100."""
    SpendingLimit.objects.create(user=world["users"]["buyer"], amount=Decimal("100"))
    return world


def snapshot() -> tuple:
    return (
        list(Bid.objects.order_by("id").values_list("id", "version", "constraint_text")),
        OrderChange.objects.count(),
    )


def test_placing_past_the_limit_is_a_400_with_the_numbers(limited):
    before = snapshot()
    answer = limited["clients"]["buyer"].post(
        "/api/v1/bids/",
        {"market": "office.supplies.pencils", "constraint": "lot <= 60 AND price <= 1.50"},
        format="json",
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "error": {
            "code": "over_limit",
            "message": "Bid refused: it could win 60 at 1.50, 90.00 in all, but 85.00 is left "
            "of your spending limit of 100.00 (your other active bids could cost 15.00). "
            "Lower its price or give it an upper quantity of at most 56.",
            "field": "constraint",
            "limit": {
                "limit": "100.00",
                "committed": "15.00",
                "remaining": "85.00",
                "largest_award": "90.00",
                "largest_lot": "60",
                "price": "1.50",
            },
        }
    }
    assert snapshot() == before
    fits = limited["clients"]["buyer"].post(
        "/api/v1/bids/",
        {"market": "office.supplies.pencils", "constraint": "lot <= 56 AND price <= 1.50"},
        format="json",
    )
    assert (fits.status_code, fits.json()["largest_award"]) == (201, "84.00")


def test_amending_past_the_limit_is_a_400_and_changes_nothing(limited):
    bid = limited["bid"]
    before = snapshot()
    answer = limited["clients"]["buyer"].patch(
        f"/api/v1/bids/{bid.pk}/",
        {"constraint": "lot = 70 AND price <= 1.50", "version": 1},
        format="json",
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["field"], error["limit"]) == (
        "over_limit",
        "constraint",
        {
            "limit": "100.00",
            "committed": "0.00",
            "remaining": "100.00",
            "largest_award": "105.00",
            "largest_lot": "70",
            "price": "1.50",
        },
    )
    assert snapshot() == before


def test_a_bids_matches_and_outcomes_tell_its_story(world):
    alice, bob = world["clients"]["buyer"], world["clients"]["other"]
    bid, other_bid = world["bid"], world["other_bid"]
    # bob's second bid is behind only his own better one
    behind = bid_place(
        buyer=world["users"]["other"],
        market=bid.market,
        constraint="lot = 5 AND price <= 1.60",
    )
    matching_cycle_run()
    offer = world["offer"]
    mine = alice.get(f"/api/v1/bids/{bid.pk}/").json()
    assert mine["matches"] == [
        {"offer": offer.pk, "value": "1.50", "best": False, "behind_own": False, "min_next": "1.71"}
    ]
    assert (mine["largest_award"], mine["outcomes"]) == ("15.00", [])
    listed = {b["id"]: b for b in bob.get("/api/v1/bids/").json()["results"]}
    assert listed[behind.pk]["matches"] == [
        {"offer": offer.pk, "value": "1.60", "best": False, "behind_own": True, "min_next": None}
    ]
    assert listed[other_bid.pk]["matches"][0]["best"] is True

    offer_close(offer_id=offer.pk, staff=world["users"]["staff"])
    outcomes = alice.get(f"/api/v1/bids/{bid.pk}/").json()["outcomes"]
    assert [(o["offer"], o["result"], o["price"]) for o in outcomes] == [(offer.pk, "lost", "1.70")]
    assert outcomes[0]["at"].endswith("Z")
    listed = {b["id"]: b for b in bob.get("/api/v1/bids/").json()["results"]}
    assert [(o["result"], o["price"]) for o in listed[other_bid.pk]["outcomes"]] == [
        ("won", "1.70")
    ]
    assert [o["result"] for o in listed[behind.pk]["outcomes"]] == ["lost"]
