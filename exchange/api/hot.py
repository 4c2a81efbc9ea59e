"""The busiest reads written out by hand: a page of the best-offer table from plain rows.

``GET /api/v1/best-offers/`` is the page every trading bot polls. Read through the ORM, a
page of 50 offers built 150 model instances (each offer with its market and its best bid),
decoded the market's JSON schema once per offer, and then serialized each offer from them:
in-process cProfile put the ORM's rows at 55% of the page's CPU (issue 36). Here the same
filtered, ordered queryset is read as ``values_list`` rows of the columns the answer shows,
and each row is written as ``OfferSerializer.to_representation`` writes an offer; the count,
the page's bounds and the envelope stay DRF's. tests/api/test_hot_paths.py checks that the
two answers are the same, key order included, for every reader and every kind of offer.

An offer that is not open (the table only lists open ones; a closed offer shows its trade)
is read and written the ordinary way, so the answer does not depend on which rows come.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from exchange.models import Offer
from exchange.numbers import price_text
from exchange.selectors import orders as order_selectors

from . import serializers as s

# The columns of an offer's answer, in the order ``_offer_row`` reads them.
OFFER_COLUMNS = (
    "id",
    "market__subject",
    "market__tick",
    "version",
    "state",
    "constraint_text",
    "constraint_json",
    "closes_at",
    "created_at",
    "updated_at",
    "best__offer_id",
    "best__value",
    "best__matching_bids",
    "seller_id",
    "set_aside_reason",
)


def offer_rows(queryset: QuerySet[Offer]) -> QuerySet[Any]:
    """``queryset`` (offers, filtered and ordered) as rows of ``OFFER_COLUMNS``."""
    return queryset.values_list(*OFFER_COLUMNS)


def offers_shown(rows: list[tuple[Any, ...]], request: Request) -> list[dict[str, Any]]:
    """Each row of ``offer_rows`` as ``OfferSerializer`` shows that offer to ``request``'s
    reader."""
    zone = timezone.get_current_timezone()
    user = request.user
    reader = user.pk if user is not None and user.is_authenticated else None
    context = {"request": request}
    out: list[dict[str, Any]] = []
    for row in rows:
        (pk, subject, tick, version, state, text, json, closes, created, updated) = row[:10]
        (best, value, matching, seller, reason) = row[10:]
        if state != Offer.State.OPEN:
            offer = order_selectors.offer_get(offer_id=pk)
            out.append(s.OfferSerializer(offer, context=context).data)
            continue
        out.append(
            {
                "id": pk,
                "market": subject,
                "version": version,
                "state": str(state),
                "constraint": text,
                "constraint_json": json,
                "closes_at": s.time_text(closes, zone),
                "created_at": s.time_text(created, zone),
                "updated_at": s.time_text(updated, zone),
                "best_value": None if best is None else price_text(value, tick),
                "matching_bids": 0 if best is None else matching,
                "mine": reader is not None and seller == reader,
                "trade": None,
                "set_aside_reason": reason or None,
            }
        )
    return out


def offer_page(view: GenericAPIView, request: Request) -> Response:
    """``view``'s ``list`` (a list of offers, paginated by DRF) over ``offer_rows``."""
    queryset = offer_rows(view.filter_queryset(view.get_queryset()))
    page = view.paginate_queryset(queryset)
    if page is None:
        return Response(offers_shown(list(queryset), request))
    return view.get_paginated_response(offers_shown(page, request))
