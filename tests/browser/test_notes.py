"""Personal notifications as sentences (``exchange/notification_texts.py``: the account page
shows them and the ``me`` frames carry them for the live list), and a ``set_aside`` note says
what the engine wrote (issue 15) rather than naming an offer it does not have."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from exchange.models import Bid, Notification
from exchange.notification_texts import note_text
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place
from tests.factories import UserFactory, pencils_market

SET_ASIDE_MESSAGE = (
    "Your bid 7 is left out of matching because its stored constraint does not parse: "
    "expected a value at 9. Amend it or withdraw it."
)
CASES = [
    ("set_aside", {"bid": 7, "reason": "r", "message": SET_ASIDE_MESSAGE}),
    ("set_aside", {"offer": 3, "reason": "r"}),
    ("set_aside", {"bid": 7, "reason": "r"}),
    ("best_offer", {"offer": 3, "best_value": "1.50", "matching_bids": 2}),
    ("best_offer", {"offer": 3, "best_value": None, "matching_bids": 0}),
    ("best_bid", {"offer": 3, "bid": 7, "best_value": "1.50"}),
    ("outbid", {"offer": 3, "bid": 7, "status": "outbid", "best_value": "1.70"}),
    ("offer_ended", {"offer": 3, "bid": 7, "status": "closed"}),
    ("offer_ended", {"offer": 3, "bid": 7, "status": "withdrawn"}),
    ("trade", {"offer": 3, "bid": 7, "price": "1.50", "quantity": "12000", "buyer": "bob"}),
    ("trade", {"offer": 3, "bid": 7, "price": "1.50"}),
    ("offer", {"offer": 3, "state": "closed", "sold": False}),
    ("offer", {"offer": 3, "state": "withdrawn"}),
]
# What each of CASES[3:] says, and its tone
EXPECTED = [
    ("Best bid on offer #3 is now 1.50 (2 matching bids).", "good"),
    ("No bid matches offer #3 any more.", "info"),
    ("Bid #7 is now the best bid on offer #3 at 1.50.", "good"),
    ("Bid #7 was outbid on offer #3: the best bid is now 1.70.", "bad"),
    ("Offer #3 closed and another bid won it.", "info"),
    ("Offer #3 was withdrawn by its seller: bid #7 no longer matches it.", "info"),
    ("Sold: offer #3 to bob, 12,000 at 1.50.", "good"),
    ("Won: bid #7 won the auction of offer #3, at 1.50.", "good"),
    ("Offer #3 closed unsold.", "info"),
    ("Offer #3 is now withdrawn.", "info"),
]


def test_set_aside_sentences():
    assert note_text(*CASES[0]) == (SET_ASIDE_MESSAGE, "bad")
    assert note_text(*CASES[1]) == ("Your offer #3 is left out of matching.", "bad")
    assert note_text(*CASES[2]) == ("Your bid #7 is left out of matching.", "bad")


def test_every_kind_has_its_sentence_and_tone():
    # The pages show these, and the me frames carry them (the pages' script only displays)
    assert [note_text(kind, data) for kind, data in CASES[3:]] == EXPECTED


@pytest.mark.django_db
def test_the_account_page_shows_a_set_aside_bid_in_the_engines_words(client):
    market = pencils_market()
    alice = UserFactory(username="alice")
    bad = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    # A stored text the parser refuses, changed behind the services' back.
    Bid.objects.filter(pk=bad.pk).update(constraint_text="price <= AND lot")
    matching_cycle_run()
    note = Notification.objects.get(type="set_aside", recipient=alice)
    client.force_login(alice)

    page = client.get("/account/").content.decode()

    message = note.data["message"]
    assert message.startswith(f"Your bid {bad.pk} is left out of matching because its stored")
    assert (
        f'<li id="note-{note.pk}" class="note note-bad" data-type="set_aside">'
        f'<span class="note-text">{escape(message)}</span>'
    ) in page
    assert "#None" not in page
