"""An offer's page, and withdrawing one's own offers and bids."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from exchange.errors import ExchangeError
from exchange.http import whole_number
from exchange.models import Offer
from exchange.notification_texts import note_text
from exchange.selectors import ui
from exchange.selectors.markets import market_schema
from exchange.selectors.orders import bid_get, bid_outcomes, bid_standings, trade_party
from exchange.services.orders import bid_withdraw, offer_withdraw

from .common import (
    AuthenticatedRequest,
    live_context,
    login_required,
    offer_row,
    price_precision,
    terms,
    trade_row,
)
from .markets import breadcrumbs


def _id(value: str) -> int:
    number = whole_number(value)
    if number is None:
        raise Http404
    return number


@require_GET
def offer_detail(request: HttpRequest, offer_id: str) -> HttpResponse:
    pk = _id(offer_id)
    live = live_context(request, [f"offer:{pk}"])  # before the data: see live_context
    offer = ui.offer_page_get(offer_id=pk)
    if offer is None:
        raise Http404("There is no such offer.")
    schema = market_schema(market=offer.market)
    trade = getattr(offer, "trade", None) if offer.state == Offer.State.CLOSED else None
    history = ui.offer_best_history(offer=offer)
    mine = request.user.is_authenticated and offer.seller_id == request.user.pk
    fixed = ui.offer_fixed_price(offer=offer, schema=schema)
    context = {
        "market": offer.market,
        "breadcrumbs": breadcrumbs(offer.market.subject),
        "extra_crumb": f"Offer #{offer.pk}",
        "row": offer_row(offer, request, schema),
        "offer": offer,
        "history": history,
        "history_chart": {"points": history, "precision": price_precision(offer.market)},
        "my_bids": [
            {
                **b,
                "next_price": ui.bid_next_price(
                    bid=b["bid"], schema=schema, standings=[b["standing"]]
                ),
            }
            for b in ui.offer_bids_of_user(offer=offer, user=request.user)
        ],
        "bid_here": offer.state == Offer.State.OPEN and not mine,
        "fixed_price": fixed,
        # The depth of matching bids is the seller's (and staff's) to see (SPEC 5.6).
        "depth": (
            ui.offer_depth(offer=offer)
            if mine or (request.user.is_authenticated and request.user.is_staff)
            else None
        ),
        "trade": trade_row(trade, request) if trade is not None else None,
        "trade_party": trade is not None and trade_party(trade, request.user),
        **live,
    }
    return render(request, "frontend/offer.html", context)


@require_GET
def bid_detail(request: HttpRequest, bid_id: str) -> HttpResponse:
    """A bid's page: its terms, where it stands now, how the auctions it matched ended and
    its history. Its owner's and staff's alone; anyone else gets a 404 (SPEC 5.6)."""
    pk = _id(bid_id)
    live = live_context(request, [])  # before the data: see live_context
    bid = bid_get(user=request.user, bid_id=pk)
    if bid is None:
        raise Http404("There is no such bid.")
    schema = market_schema(market=bid.market)
    standings = bid_standings(bids=[bid]).get(bid.pk, [])
    history = []
    for entry in ui.bid_history(bid=bid):
        text = tone = None
        if entry.data is not None:
            text, tone = note_text(entry.kind, entry.data)
        history.append({"entry": entry, "text": text, "tone": tone})
    context = {
        "market": bid.market,
        "breadcrumbs": breadcrumbs(bid.market.subject),
        "extra_crumb": f"Bid #{bid.pk}",
        "bid": bid,
        "mine": bid.buyer_id == request.user.pk,
        "unit": schema.price.unit,
        "terms": terms(bid.constraint_text, bid.market, schema),
        "standings": standings,
        "next_price": (
            ui.bid_next_price(bid=bid, schema=schema, standings=standings)
            if bid.state == bid.State.ACTIVE
            else None
        ),
        "outcomes": bid_outcomes(bids=[bid]).get(bid.pk, []),
        "trade": getattr(bid, "trade", None),
        "history": history,
        **live,
    }
    return render(request, "frontend/bid.html", context)


def back_to(request: HttpRequest, default: str) -> HttpResponse:
    """Redirect to the form's ``next`` when it stays on this site, else to ``default``."""
    target = request.POST.get("next", "")
    # A path of this site only: ``redirect`` takes a bare word (``0``) for a view's name
    # and failed to reverse it (a 500)
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}
    ):
        return HttpResponseRedirect(target)
    return redirect(default)


@require_POST
@login_required
def offer_withdraw_view(request: AuthenticatedRequest, offer_id: str) -> HttpResponse:
    pk = _id(offer_id)
    try:
        offer_withdraw(seller=request.user, offer_id=pk)
        messages.success(request, f"Offer #{pk} is withdrawn.")
    except ExchangeError as exc:
        messages.error(request, exc.message)
    return back_to(request, f"/offers/{pk}/")


@require_POST
@login_required
def bid_withdraw_view(request: AuthenticatedRequest, bid_id: str) -> HttpResponse:
    pk = _id(bid_id)
    if bid_get(user=request.user, bid_id=pk) is None:
        raise Http404
    try:
        bid_withdraw(buyer=request.user, bid_id=pk)
        messages.success(request, f"Bid #{pk} is withdrawn.")
    except ExchangeError as exc:
        messages.error(request, exc.message)
    return back_to(request, "/account/#bids")
