"""The two "check as you type" endpoints and posting answer one rule (issue 16): the market's
rules and then the store's limits (``exchange.selectors.markets.constraint_check``)."""

from __future__ import annotations

import pytest
from django.test import Client

from exchange.models import BestOffer, Offer, OrderChange
from exchange.services.markets import market_create
from tests.factories import PENCILS_SCHEMA, UserFactory

from .conftest import client_for

pytestmark = pytest.mark.django_db

SUBJECT = "graded.pencils"
TOO_LARGE = "lot = 1 AND price >= 1.00 AND grade = '" + "x" * 5000 + "'"
REFUSAL = {
    "error": {
        "code": "too_large",
        "message": (
            "The constraint holds a value too large to index: a string compared with grade is "
            "longer than 1000 bytes, more than the constraint store holds."
        ),
        "field": "constraint",
        "position": 0,
    }
}


@pytest.fixture
def graded(db):
    return market_create(
        subject=SUBJECT,
        title="Graded pencils",
        schema=[*PENCILS_SCHEMA, {"name": "grade", "type": "string"}],
    )


def test_api_check_ui_check_and_posting_refuse_the_store_limit_alike(graded):
    seller = client_for(UserFactory(username="seller"))
    body = {"side": "offer", "constraint": TOO_LARGE}
    before = (Offer.objects.count(), BestOffer.objects.count(), OrderChange.objects.count())

    api = seller.post(f"/api/v1/markets/{SUBJECT}/check/", body, format="json")
    ui = Client().post(f"/markets/{SUBJECT}/check/", body, content_type="application/json")
    posted = seller.post(
        "/api/v1/offers/", {"market": SUBJECT, "constraint": TOO_LARGE}, format="json"
    )

    for response in (api, ui, posted):
        assert (response.status_code, response.json()) == (400, REFUSAL)
    assert (Offer.objects.count(), BestOffer.objects.count(), OrderChange.objects.count()) == before


def test_both_checks_give_the_canonical_text_posting_stores(graded):
    seller = client_for(UserFactory(username="seller"))
    text = "price >= 1.5 AND lot = 3 AND grade = 'HB'"
    body = {"side": "offer", "constraint": text}

    api = seller.post(f"/api/v1/markets/{SUBJECT}/check/", body, format="json").json()
    ui = Client().post(f"/markets/{SUBJECT}/check/", body, content_type="application/json").json()
    posted = seller.post("/api/v1/offers/", {"market": SUBJECT, "constraint": text}, format="json")

    assert posted.status_code == 201
    stored = Offer.objects.get(pk=posted.json()["id"])
    assert api["constraint"] == ui["constraint"] == stored.constraint_text
    assert api["constraint_json"] == stored.constraint_json
