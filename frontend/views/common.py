"""What the views share: login, the page's live streams, presenting orders and trades."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required as django_login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, JsonResponse

from exchange.http import error_body
from exchange.market_rules import MarketSchema
from exchange.models import Market, Offer, Trade
from exchange.numbers import grouped_text, money_text, price_quantum, price_text
from exchange.selectors import ui
from exchange.selectors.markets import market_schema
from exchange.selectors.orders import notification_latest_seq, trade_party
from exchange.throttling import client_ident, throttle_wait
from frontend.readable import Readable, readable

LOGIN_URL = "frontend:login"


class AuthenticatedRequest(HttpRequest):
    """The request of a view behind ``login_required``: its user is a real account."""

    user: User


def login_required(view):
    """Django's login_required, sending people to the UI's own login page."""
    return django_login_required(view, login_url=LOGIN_URL)


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def check_throttled(request: HttpRequest) -> JsonResponse | None:
    """The 429 for a client past the ``check`` rate of the check-as-you-type endpoints
    (the constraint box, the subscription editor), with ``Retry-After``; None within it."""
    wait = throttle_wait(request, [("check", client_ident(request))])
    if wait is None:
        return None
    response = JsonResponse(
        error_body("throttled", f"Too many checks; try again in {wait} seconds."), status=429
    )
    response["Retry-After"] = str(wait)
    return response


def live_context(request: HttpRequest, streams: list[str]) -> dict[str, Any]:
    """What base.html needs to follow the page's streams (and ``me`` when logged in).

    Call it before reading the page's data: the page resumes ``me`` after this sequence
    number, so a notification committed while the page is being read arrives live instead
    of falling between the data and the number.
    """
    return {
        "live_streams": streams,
        "me_seq": notification_latest_seq(user=request.user),
    }


def terms(text: str, market: Market, schema: MarketSchema | None = None) -> Readable | None:
    """The readable form of a stored order's constraint (None if it no longer parses, e.g.
    after staff changed the market's schema: the page then shows the text alone)."""
    schema = schema or market_schema(market=market)
    try:
        return readable(
            ui.constraint_parsed(text=text, schema=schema), schema=schema, tick=market.tick
        )
    except Exception:  # a stored constraint that no longer fits the schema: text only
        return None


def best_of(offer: Offer) -> tuple[str | None, int]:
    best = getattr(offer, "best", None) if offer.state == Offer.State.OPEN else None
    if best is None:
        return None, 0
    return price_text(best.value, offer.market.tick), best.matching_bids


def units(market: Market, schema: MarketSchema | None = None) -> dict[str, str]:
    """The market's currency (its price's unit) and quantity unit, "" where it names none."""
    schema = schema or market_schema(market=market)
    quantity = schema.by_role("quantity")
    return {
        "price_unit": schema.price.unit,
        "quantity_unit": quantity.unit if quantity is not None else "",
    }


def offer_row(offer: Offer, request: HttpRequest, schema: MarketSchema | None = None) -> dict:
    value, count = best_of(offer)
    return {
        **units(offer.market, schema),
        "offer": offer,
        "terms": terms(offer.constraint_text, offer.market, schema),
        "best_value": value,
        "matching_bids": count,
        "mine": request.user.is_authenticated and offer.seller_id == request.user.pk,
    }


def price_precision(market: Market) -> int:
    """How many decimal places the market's prices show (2 at a tick of 0.01, 0 at 10)."""
    return max(0, -int(price_quantum(market.tick).as_tuple().exponent))


def trade_row(trade: Trade, request: HttpRequest) -> dict:
    party = trade_party(trade, request.user)
    side = None
    if request.user.is_authenticated:
        if trade.seller_id == request.user.pk:
            side = "sold"
        elif trade.buyer_id == request.user.pk:
            side = "bought"
    tick = trade.market.tick
    return {
        **units(trade.market),
        "trade": trade,
        "agreed": terms(trade.agreed_constraint, trade.market) if party else None,
        "price": price_text(trade.price, tick),
        "quantity": None if trade.quantity is None else grouped_text(trade.quantity),
        "total": (
            None
            if trade.quantity is None
            else grouped_text(money_text(price_text(trade.price * trade.quantity, tick)))
        ),
        "party": party,
        "side": side,
        "counterparty": (
            None
            if side is None
            else (trade.buyer if side == "sold" else trade.seller).get_username()
        ),
    }
