"""The staff dashboard at ``/staff/``: cycle health, orders set aside, and every open auction
with its winner-to-be."""

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from exchange.selectors.dashboard import cycle_health, open_auctions, orders_set_aside
from exchange.selectors.ui.staff import MarketNumbers, market_numbers
from exchange.services.closing import Preview, offer_close_previews

# The most open auctions the page lists; past that it says how many more there are and
# links to the admin's list, so that one request's work stays bounded.
AUCTIONS_SHOWN = 200


def _auction_row(preview: Preview, numbers: MarketNumbers) -> dict:
    bid = preview.bid
    return {
        "offer": preview.offer,
        "buyer": bid.buyer.get_username() if bid else None,
        "bid": bid,
        "value": numbers.price(preview.value),
        "price": numbers.price(preview.price),
        "quantity": numbers.quantity(preview.quantity),
        "unusable": preview.unusable,
    }


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    auctions = open_auctions(limit=AUCTIONS_SHOWN)
    numbers: dict[int, MarketNumbers] = {}
    rows = []
    for preview in offer_close_previews(offers=auctions.offers):
        market = preview.offer.market
        if market.pk not in numbers:
            numbers[market.pk] = market_numbers(market=market)
        rows.append(_auction_row(preview, numbers[market.pk]))
    return render(
        request,
        "staff/dashboard.html",
        {
            "health": cycle_health(),
            "set_aside": orders_set_aside(),
            "auctions": rows,
            "more_auctions": auctions.total - len(rows),
        },
    )
