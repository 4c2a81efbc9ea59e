"""The "alert me when ..." shortcuts (``frontend.shortcuts``): a small GET form on the market
or offer page comes here; its values, once checked, become a subscription's text and the user
goes on to the Alerts and feeds page with it filled in. A value that does not fit is shown
again on a page of its own, with the form, the values typed and the message beside the field
(status 400). Nothing is written here."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from exchange.http import whole_number
from exchange.selectors import ui
from exchange.selectors.markets import market_schema
from frontend.shortcuts import MARKET_SHORTCUTS, BestBidMoveForm, ShortcutForm, alerts_address
from matching.subscriptions import QueryError, parse_query

from .common import live_context
from .markets import breadcrumbs


def _answer(request: HttpRequest, form: ShortcutForm, context: dict) -> HttpResponse:
    """On to the Alerts and feeds page with the shortcut's text, or the form again with
    what is wrong. The text is parsed here with the language's own parser so that a
    shortcut can never send the user to a query the page would refuse."""
    if form.is_valid():
        alert = form.alert()
        try:
            parse_query(alert.query)
        except QueryError as exc:
            form.add_error(None, f"These values do not make a valid alert: {exc.message}")
        else:
            return redirect(alerts_address(alert))
    context = {**context, "shortcut_form": form, **live_context(request, [])}
    return render(request, "frontend/shortcut.html", context, status=400)


@require_GET
def market_alert(request: HttpRequest, subject: str) -> HttpResponse:
    """``?shortcut=price|jump|lot`` and that shortcut's fields (``frontend.shortcuts``)."""
    market = ui.market_get(subject=subject)
    if market is None:
        raise Http404("There is no such market.")
    schema = market_schema(market=market)
    kind = request.GET.get("shortcut", "")
    form_class = MARKET_SHORTCUTS.get(kind)
    if form_class is None:
        raise Http404("There is no such alert shortcut.")
    form = form_class(request.GET, market=market, schema=schema)
    context = {
        "market": market,
        "schema": schema,
        "breadcrumbs": breadcrumbs(market.subject),
        "extra_crumb": "Alert",
        "shortcut_template": f"frontend/_shortcut_{kind}.html",
        "quantity": schema.by_role("quantity"),
    }
    return _answer(request, form, context)


@require_GET
def offer_alert(request: HttpRequest, offer_id: str) -> HttpResponse:
    """The offer page's "tell me when the best bid moves by ...": ``?by=<x>&unit=percent|price``."""
    pk = whole_number(offer_id)
    offer = ui.offer_page_get(offer_id=pk) if pk is not None else None
    if offer is None:
        raise Http404("There is no such offer.")
    form = BestBidMoveForm(request.GET, offer=offer)
    context = {
        "market": offer.market,
        "schema": market_schema(market=offer.market),
        "offer": offer,
        "breadcrumbs": breadcrumbs(offer.market.subject),
        "extra_crumb": f"Offer #{offer.pk}",
        "shortcut_template": "frontend/_shortcut_bid_move.html",
    }
    return _answer(request, form, context)
