"""What a bid could win, shown under the bid form before it is sent (issue 39): the largest
lot and total, and whether the buyer's spending limit has room for it. The form's script
(static/frontend/award.js) posts the form here as the buyer types."""

from __future__ import annotations

from decimal import Decimal

from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from exchange.errors import ExchangeError
from exchange.market_rules import MarketSchema
from exchange.models import Market
from exchange.numbers import grouped_text, money_text, number_text, price_text
from exchange.selectors import ui
from exchange.selectors.limits import AwardPreview, bid_award_preview
from exchange.selectors.markets import market_schema
from frontend.posting import PostingForm

from .common import check_throttled


def _price(value: Decimal, market: Market, unit: str) -> str:
    text = grouped_text(price_text(value, market.tick))
    return f"{text} {unit}" if unit else text


def _money(value: Decimal, market: Market, unit: str) -> str:
    """An amount (a total, the room left) as money: two places at least."""
    text = grouped_text(money_text(price_text(value, market.tick) or "0"))
    return f"{text} {unit}" if unit else text


def award_text(preview: AwardPreview, market: Market, schema: MarketSchema) -> str:
    """The sentence under the bid form: what the bid could win, and the room left."""
    award, room = preview.award, preview.room
    unit = schema.price.unit
    quantity = schema.by_role("quantity")
    price = _price(award.price, market, unit)
    if award.amount is None:
        text = (
            "It has no upper lot and matches an open offer with none either: it could cost "
            "any amount. Give it an upper lot."
        )
    elif quantity is not None and award.lot == 0:
        text = (
            f"It could win nothing now: it has no upper {quantity.label.lower()} and matches "
            "no open offer. Give it an upper lot to bound what it can win later."
        )
    else:
        if quantity is None:
            text = f"It could win at most one lot at {price}."
        else:
            lot = grouped_text(number_text(award.lot))
            lot = f"{lot} {quantity.unit}" if quantity.unit else lot
            text = (
                f"It could win at most {lot} at {price}: "
                f"{_money(award.amount, market, unit)} in all."
            )
    if room is not None:
        left = _money(max(room.remaining, Decimal(0)), market, unit)
        text += f" {left} is left of your spending limit"
        text += "." if preview.fits else ": more than that, so it would be refused."
    return text


@require_POST
def market_award(request: HttpRequest, subject: str) -> JsonResponse:
    """``{"state", "text", "largest_lot", "largest_award", "price", "remaining"}`` for the
    bid form's fields (or its advanced text) as posted; ``state`` is ``ok``, ``over``
    (placing it would be refused for the limit), ``empty`` (nothing to compute yet) or
    ``invalid`` (what placing it would answer, in ``text``). 429 past the check rate."""
    throttled = check_throttled(request)
    if throttled is not None:
        return throttled
    market = ui.market_get(subject=subject)
    if market is None:
        raise Http404("There is no such market.")
    schema = market_schema(market=market)
    form = PostingForm(market=market, schema=schema, side="bid", data=request.POST)
    source = form.source()
    empty = {"largest_lot": None, "largest_award": None, "price": None, "remaining": None}
    if source is None or (not form.advanced and not form.price_input.value.strip()):
        text = "Enter the highest price to see the largest lot and total this bid could win."
        if form.has_errors:
            text = "Correct the fields marked to see what this bid could win."
        return JsonResponse({"state": "empty", "text": text, **empty})
    try:
        preview = bid_award_preview(market=market, buyer=request.user, source=source)
    except ExchangeError as exc:
        return JsonResponse({"state": "invalid", "text": exc.message, **empty})
    award, room = preview.award, preview.room
    return JsonResponse(
        {
            "state": "ok" if preview.fits else "over",
            "text": award_text(preview, market, schema),
            "largest_lot": number_text(award.lot),
            "largest_award": price_text(award.amount, market.tick),
            "price": price_text(award.price, market.tick),
            "remaining": None if room is None else price_text(room.remaining, market.tick),
        }
    )
