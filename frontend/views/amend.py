"""Amending from the web UI: editing an offer's or a bid's terms, raising a bid, and
withdrawing all of one's bids in a market.

Every change goes through the order services (``offer_amend``, ``bid_amend``,
``bid_withdraw``), which check the version, the owner and the market's rules. A stale
version (HTTP 409 in the API) is explained here in words, with the order's current terms.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from exchange.errors import ExchangeError, InvalidInput, StaleVersion
from exchange.http import whole_number
from exchange.models import Bid, Offer
from exchange.selectors import ui
from exchange.selectors.markets import market_schema
from exchange.selectors.orders import bid_get
from exchange.services.orders import bid_amend, bid_withdraw, offer_amend

from .common import AuthenticatedRequest, live_context, login_required, terms
from .markets import breadcrumbs
from .orders import back_to


def _id(value: str) -> int:
    number = whole_number(value)
    if number is None:
        raise Http404
    return number


def stale_message(order: Offer | Bid, sent: int | None) -> str:
    """What a 409 means, for people: someone changed the order first, nothing was saved."""
    kind = "Offer" if isinstance(order, Offer) else "Bid"
    was = f" (you were editing version {sent})" if sent is not None else ""
    return (
        f"{kind} #{order.pk} was changed after this page was loaded, in another tab or by a "
        f"program using your API token, so your change was not saved. It is now at version "
        f"{order.version}{was}. Its current terms are shown here: check them and amend again."
    )


def _own_order(request: AuthenticatedRequest, kind: str, pk: int) -> Offer | Bid:
    """The user's own offer or bid, else 404 (other people's bids are private, SPEC 5.6)."""
    order: Offer | Bid | None
    if kind == "offer":
        order = ui.offer_page_get(offer_id=pk)
        if order is not None and order.seller_id != request.user.pk:
            order = None
    else:
        order = bid_get(user=request.user, bid_id=pk)
        if order is not None and order.buyer_id != request.user.pk:
            order = None
    if order is None:
        raise Http404(f"You have no {kind} #{pk}.")
    return order


def _order_url(order: Offer | Bid) -> str:
    if isinstance(order, Offer):
        return reverse("frontend:offer", kwargs={"offer_id": order.pk})
    return reverse("frontend:account") + f"#bid-{order.pk}"


@login_required
def order_edit(request: AuthenticatedRequest, kind: str, order_id: str) -> HttpResponse:
    """Edit an open offer's or an active bid's constraint (GET shows it, POST amends).

    The form carries the version it was loaded at; a refused amendment shows the form again
    with the error (and its position in the text) and changes nothing.
    """
    order = _own_order(request, kind, _id(order_id))
    text, version = order.constraint_text, order.version
    error, position, status, stale = None, None, 200, False
    if request.method == "POST":
        text = request.POST.get("constraint", "")
        sent = whole_number(request.POST.get("version", ""))
        try:
            if sent is None:
                raise InvalidInput(
                    "invalid_version",
                    "The form lost its version: reload the page.",
                    field="version",
                )
            amended: Offer | Bid
            if isinstance(order, Offer):
                amended = offer_amend(
                    seller=request.user, offer_id=order.pk, constraint=text, version=sent
                )
            else:
                amended = bid_amend(
                    buyer=request.user, bid_id=order.pk, constraint=text, version=sent
                )
        except StaleVersion:
            order = _own_order(request, kind, order.pk)
            error, status, stale = stale_message(order, sent), 409, True
            text, version = order.constraint_text, order.version
        except ExchangeError as exc:
            error, position, status = exc.message, exc.position, exc.status
            version = sent if sent is not None else order.version
        else:
            messages.success(
                request,
                f"{kind.capitalize()} #{amended.pk} is amended (version {amended.version}).",
            )
            return redirect(_order_url(amended))
    live = order.state in (Offer.State.OPEN, Bid.State.ACTIVE)
    context = {
        "order": order,
        "kind": kind,
        "market": order.market,
        "breadcrumbs": breadcrumbs(order.market.subject),
        "text": text,
        "version": version,
        "live": live,
        "error": error,
        "position": position,
        "stale": stale,
        "terms": terms(order.constraint_text, order.market),
        "back": _order_url(order),
        **live_context(request, []),
    }
    return render(request, "frontend/amend.html", context, status=status)


@require_POST
@login_required
def bid_raise(request: AuthenticatedRequest, bid_id: str) -> HttpResponse:
    """Raise an active bid's highest price (by at least the market's tick) in every tier."""
    bid = _own_order(request, "bid", _id(bid_id))
    assert isinstance(bid, Bid)
    sent = whole_number(request.POST.get("version", ""))
    try:
        if sent is None:
            raise InvalidInput("invalid_version", "the form lost its version: reload the page.")
        text = ui.bid_raised_text(
            bid=bid, schema=market_schema(market=bid.market), price=request.POST.get("price", "")
        )
        raised = bid_amend(buyer=request.user, bid_id=bid.pk, constraint=text, version=sent)
    except StaleVersion:
        fresh = _own_order(request, "bid", bid.pk)
        messages.error(request, stale_message(fresh, sent))
    except ExchangeError as exc:
        messages.error(request, f"Bid #{bid.pk} is not raised: {exc.message}")
    else:
        messages.success(
            request,
            f"Bid #{raised.pk} now pays up to {request.POST.get('price', '').strip()} "
            f"(version {raised.version}).",
        )
    return back_to(request, _order_url(bid))


@require_POST
@login_required
def market_bids_withdraw(request: AuthenticatedRequest, subject: str) -> HttpResponse:
    """Withdraw every active bid of the user in one market, one transaction per bid (through
    ``bid_withdraw``): a bid that fills or is withdrawn meanwhile is reported, not an error,
    and the others are still withdrawn."""
    market = ui.market_get(subject=subject)
    if market is None:
        raise Http404("There is no such market.")
    done, missed = [], []
    for pk in ui.user_active_bid_ids(user=request.user, market=market):
        try:
            bid_withdraw(buyer=request.user, bid_id=pk)
            done.append(f"#{pk}")
        except ExchangeError as exc:
            missed.append(f"#{pk} ({exc.message})")
    if done:
        messages.success(
            request,
            f"Withdrawn in {market.title}: bid{'s' if len(done) > 1 else ''} {', '.join(done)}.",
        )
    if missed:
        messages.error(request, "Not withdrawn: " + "; ".join(missed))
    if not done and not missed:
        messages.info(request, f"You have no active bids in {market.title}.")
    return redirect("/account/#bids")
