"""The hot requests keep a query budget whatever the size of the book (issue 17): placing
a bid or an offer, the market list and the best-offer list. Each budget is checked on a
small book and on one ten times larger."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from exchange.models import Bid, Market, Offer
from tests.api.conftest import client_for
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SUBJECT = "office.supplies.pencils"

# Queries of each request: the token, the market, the order row with its OrderChange (and
# for an offer its public event), the reply; for a bid, the order rows, its buyer's row lock
# and the limit check are one statement (tests/exchange/test_bid_insert.py); a list's count
# and its page.
BID_POST = 3
OFFER_POST = 9
MARKET_LIST = 2
BEST_OFFER_LIST = 2


@pytest.fixture(params=[(10, 100), (100, 1000)], ids=["small", "large"])
def book(request):
    """The bench's book (``manage.py bench_book``) at two sizes, settled."""
    offers, bids = request.param
    call_command("bench_book", offers=offers, bids=bids, seed=5, verbosity=0)
    return Market.objects.get(subject=SUBJECT)


@pytest.mark.parametrize(
    "path, constraint, budget, model",
    [
        ("/api/v1/bids/", "lot = 101 AND price <= 1.60", BID_POST, Bid),
        ("/api/v1/offers/", "lot BETWEEN 1 AND 50 AND price >= 1.00", OFFER_POST, Offer),
    ],
    ids=["bid", "offer"],
)
def test_placing_an_order_keeps_its_budget(
    book, django_assert_max_num_queries, path, constraint, budget, model
):
    client = client_for(UserFactory())
    with django_assert_max_num_queries(budget):
        response = client.post(path, {"market": SUBJECT, "constraint": constraint}, format="json")
    assert response.status_code == 201, response.json()
    assert model.objects.get(pk=response.json()["id"]).constraint_text == constraint


def test_the_market_list_keeps_its_budget(book, django_assert_max_num_queries):
    client = client_for(None)
    with django_assert_max_num_queries(MARKET_LIST):
        response = client.get("/api/v1/markets/")
    assert response.status_code == 200
    assert [m["subject"] for m in response.json()["results"]] == [SUBJECT]


def test_the_best_offer_list_keeps_its_budget(book, django_assert_max_num_queries):
    client = client_for(None)
    with django_assert_max_num_queries(BEST_OFFER_LIST):
        response = client.get("/api/v1/best-offers/?limit=50")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == Offer.objects.filter(state=Offer.State.OPEN).count()
    assert len(body["results"]) == min(50, body["count"])
