"""Markets: the subject tree with search, a market's page, and posting offers and bids."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

import matching
from exchange.analytics.selectors import market_public_days
from exchange.errors import ExchangeError, InvalidInput
from exchange.http import error_body, json_bounded, whole_number
from exchange.market_rules import MarketSchema, Side
from exchange.models import Market, Offer
from exchange.selectors import ui
from exchange.selectors.markets import market_schema
from exchange.services.orders import bid_place, offer_publish
from frontend.daily import daily_figures
from frontend.posting import PostingForm
from frontend.readable import readable
from frontend.shortcuts import alerts_address, pattern_trades_alert
from matching.subjects import ONE, REST, SubjectError, SubjectPattern, compile_pattern

from .common import (
    AuthenticatedRequest,
    check_throttled,
    is_htmx,
    live_context,
    login_required,
    offer_row,
    price_precision,
    trade_row,
)


@dataclass(frozen=True)
class Search:
    """A search box's text read as words and at most one subject pattern (SPEC 8.2): a
    token with a wildcard (``office.>``, ``*.tools.*``) is the pattern, the other tokens
    are words. ``error`` is a malformed pattern cut around its position in the text, for
    display: ``{"message", "position", "before", "at", "after"}``."""

    words: str = ""
    pattern: SubjectPattern | None = None
    error: dict | None = None


def _error_at(text: str, at: int, message: str) -> dict:
    return {
        "message": message,
        "position": at,
        "before": text[:at],
        "at": text[at : at + 1] or " ",
        "after": text[at + 1 :],
    }


def search_read(query: str) -> Search:
    text = query.strip()
    words: list[str] = []
    found: re.Match[str] | None = None
    for token in re.finditer(r"\S+", text):
        if not any(wildcard in token.group() for wildcard in (ONE, REST)):
            words.append(token.group())
        elif found is not None:
            message = (
                f"search with one pattern at a time (this is a second one after {found.group()})"
            )
            return Search(" ".join(words), None, _error_at(text, token.start(), message))
        else:
            found = token
    if found is None:
        return Search(" ".join(words))
    try:
        return Search(" ".join(words), compile_pattern(found.group()))
    except SubjectError as exc:
        return Search(
            " ".join(words), None, _error_at(text, found.start() + exc.position, exc.message)
        )


def _matched(nodes: list[ui.SubjectNode]) -> int:
    return sum(node.matched + _matched(node.children) for node in nodes)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The subject tree. Words narrow it; a subject pattern among them highlights the
    markets it matches and dims the others (a malformed one is explained at its position,
    and the tree stays as the words leave it)."""
    query = request.GET.get("q", "")[:200]
    search = search_read(query)
    tree = ui.market_tree(query=search.words, highlight=search.pattern)
    context = {
        "tree": tree,
        "query": query,
        "words": search.words,
        "pattern": search.pattern,
        "pattern_error": search.error,
        "matched": _matched(tree),
        "pattern_alert": (
            alerts_address(pattern_trades_alert(search.pattern.text)) if search.pattern else None
        ),
    }
    if is_htmx(request):
        return render(request, "frontend/_market_tree.html", context)
    return render(request, "frontend/home.html", {**context, **live_context(request, [])})


def _market(subject: str) -> tuple[Market, MarketSchema]:
    market = ui.market_get(subject=subject)
    if market is None:
        raise Http404("There is no such market.")
    return market, market_schema(market=market)


def _side(value: str | None) -> Side:
    """The side a form names; an offer unless it says bid."""
    return "bid" if value == "bid" else "offer"


def _forms(market: Market, schema: MarketSchema, bound: PostingForm | None) -> dict:
    sides: tuple[Side, Side] = ("offer", "bid")
    forms = {side: PostingForm(market=market, schema=schema, side=side) for side in sides}
    if bound is not None:
        forms[bound.side] = bound
    return {"offer_form": forms["offer"], "bid_form": forms["bid"]}


def _market_context(
    request: HttpRequest, market: Market, schema: MarketSchema, bound: PostingForm | None = None
) -> dict:
    live = live_context(request, [f"market:{market.subject}"])  # before the data: see there
    side = bound.side if bound else request.GET.get("side", "offer")
    offers = ui.market_open_offers(market=market)
    precision = price_precision(market)
    return {
        "market": market,
        "schema": schema,
        "breadcrumbs": breadcrumbs(market.subject),
        "offers": [offer_row(o, request, schema) for o in offers],
        "trades": [trade_row(t, request) for t in ui.market_recent_trades(market=market)],
        "chart": {**ui.market_candles(market=market), "precision": precision},
        "daily": daily_figures(
            market_public_days(market=market), market=market, precision=precision
        ),
        "side": side if side in ("offer", "bid") else "offer",
        **_forms(market, schema, bound),
        **live,
    }


def breadcrumbs(subject: str) -> list[dict[str, str]]:
    """The subject's tokens with their paths: office › supplies › pencils."""
    tokens = subject.split(".")
    return [{"token": t, "path": ".".join(tokens[: i + 1])} for i, t in enumerate(tokens)]


@require_GET
def market_detail(request: HttpRequest, subject: str) -> HttpResponse:
    market, schema = _market(subject)
    return render(request, "frontend/market.html", _market_context(request, market, schema))


@login_required
def market_post(request: AuthenticatedRequest, subject: str) -> HttpResponse:
    """Post an offer or place a bid from the generated form (or its advanced box).

    GET shows the form on a page of its own; a POST with an error shows it again with the
    error and, for the constraint text, its position.
    """
    market, schema = _market(subject)
    side = _side(request.POST.get("side") or request.GET.get("side"))
    if request.method != "POST":
        form = PostingForm(
            market=market, schema=schema, side=side, data=_prefill(request, market, schema)
        )
        return render(request, "frontend/post.html", _post_context(request, market, form))
    form = PostingForm(market=market, schema=schema, side=side, data=request.POST)
    if request.POST.get("add_tier"):
        return render(request, "frontend/post.html", _post_context(request, market, form))
    source = form.source()
    closes_at = form.closes_at_value()
    if source is not None and not form.has_errors:
        try:
            if side == "offer":
                offer = offer_publish(
                    seller=request.user, market=market, constraint=source, closes_at=closes_at
                )
                messages.success(
                    request,
                    f"Offer #{offer.pk} is published. Matching bids show up here as they come.",
                )
                return redirect("frontend:offer", offer_id=offer.pk)
            bid = bid_place(buyer=request.user, market=market, constraint=source)
            messages.success(
                request,
                f"Bid #{bid.pk} is placed. Its standing on each matching offer updates below.",
            )
            return redirect(reverse("frontend:account") + f"#bid-{bid.pk}")
        except ExchangeError as exc:
            form.error = exc.message
            form.error_code = exc.code
            form.error_position = exc.position
            form.error_text = source
    context = _post_context(request, market, form)
    return render(request, "frontend/post.html", context, status=400)


def _prefill(request: HttpRequest, market: Market, schema: MarketSchema) -> QueryDict | None:
    """The bid form's fields from ``?offer=<id>&tier=<n>`` ("Bid on this" on an offer's
    page); None (an empty form) without them, or for an offer of another market or one
    that is no longer open."""
    offer_id = whole_number(request.GET.get("offer", ""))
    if request.GET.get("side") != "bid" or offer_id is None:
        return None
    offer = ui.offer_page_get(offer_id=offer_id)
    if offer is None or offer.market_id != market.pk or offer.state != Offer.State.OPEN:
        return None
    tier = whole_number(request.GET.get("tier", "1")) or 1
    try:
        best = getattr(offer, "best", None)
        lead = None if best is None else best.value
        fields = ui.offer_bid_prefill(offer=offer, schema=schema, tier=tier, lead=lead)
    except matching.ConstraintError:  # its stored text no longer fits the schema
        return None
    data = QueryDict(mutable=True)
    data.update(fields)
    return data


def _post_context(request: HttpRequest, market: Market, form: PostingForm) -> dict:
    return {
        "market": market,
        "schema": form.schema,
        "form": form,
        "breadcrumbs": breadcrumbs(market.subject),
        **live_context(request, []),
    }


@require_POST
def market_check(request: HttpRequest, subject: str) -> JsonResponse:
    """Check a constraint against the market's rules without posting it (the advanced box
    calls this as you type). The answer has the API's shapes: the canonical text, or
    ``{"error": {"code", "message", "position"?}}`` with status 400 (413 for an oversize
    body, 429 past the ``check`` rate per client).

    The rule is the API's and posting's (``constraint_check``); this URL exists beside
    ``/api/v1/markets/<subject>/check/`` only to add the readable tiers of
    ``frontend.readable``, which the API layer may not import, and to take the page's
    session and CSRF token rather than an API client's."""
    throttled = check_throttled(request)
    if throttled is not None:
        return throttled
    market = ui.market_get(subject=subject)
    if market is None:
        return JsonResponse(error_body("not_found", "There is no such market."), status=404)
    try:
        body = json_bounded(request.read(settings.JSON_MAX_BYTES + 1))
        if not isinstance(body, dict) or body.get("side") not in ("offer", "bid"):
            raise InvalidInput(
                "bad_request", 'Send {"side": "offer" or "bid", "constraint": "<text>"} as JSON.'
            )
        if "constraint" not in body:
            raise InvalidInput("bad_request", 'Send the "constraint" to check.', field="constraint")
        checked = ui.constraint_check(market=market, side=body["side"], source=body["constraint"])
    except ExchangeError as exc:
        return JsonResponse({"error": exc.as_dict()}, status=exc.status)
    schema = market_schema(market=market)
    terms = readable(checked.constraint, schema=schema, tick=market.tick)
    return JsonResponse({"constraint": checked.text, "tiers": terms.lines})


@require_POST
def market_preview(request: HttpRequest, subject: str) -> HttpResponse:
    """What the form fields post, as canonical text and tiers, or what is wrong (an htmx
    fragment under the form)."""
    market, schema = _market(subject)
    side = _side(request.POST.get("side"))
    form = PostingForm(market=market, schema=schema, side=side, data=request.POST)
    text = form.form_text()
    context: dict = {"form": form, "text": text, "market": market}
    if text is not None:
        try:
            checked = ui.constraint_check(market=market, side=side, source=text)
            context["canonical"] = checked.text
            context["terms"] = readable(checked.constraint, schema=schema, tick=market.tick)
        except ExchangeError as exc:
            context["error"] = exc.message
            context["position"] = exc.position
    return render(request, "frontend/_preview.html", context)
