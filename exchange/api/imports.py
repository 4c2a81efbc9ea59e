"""``POST /api/v1/markets/<subject>/import/?side=offer|bid[&map=...]`` (SPEC 8.2): a legacy
feed in the body (``text/csv``, or JSON lines as ``application/x-ndjson`` or
``application/jsonl``) becomes the caller's own offers or bids, one per row.

The answer is 200 with one result per row (created, existing or failed with its column, code
and message) whenever the feed could be read; a failed row creates nothing and the others go
in. A body over ``IMPORT_MAX_BYTES`` or with more than ``IMPORT_MAX_ROWS`` rows is a 413, a
body that cannot be read as a whole (not UTF-8, a CSV quote never closed) a 400, both with
the row where reading stopped and nothing created. Throttled per user (scope ``import``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from exchange.adapters.feeds import FeedError, FeedTooLarge, feed_rows
from exchange.adapters.imports import feed_import
from exchange.adapters.maps import MapError, map_default, map_load
from exchange.errors import ExchangeError, InvalidInput
from exchange.http import PayloadTooLarge
from exchange.market_rules import Side
from exchange.selectors.lookups import market_by_subject
from exchange.selectors.markets import market_schema

SIDES = ("offer", "bid")


class _FeedParser(BaseParser):
    """The body as bytes, of which at most ``IMPORT_MAX_BYTES`` plus one are ever read."""

    format_name = "csv"

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        limit = settings.IMPORT_MAX_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge("too_large", f"An import body is limited to {limit} bytes.")
        return _Feed(raw, self.format_name)


class CSVParser(_FeedParser):
    media_type = "text/csv"


class NDJSONParser(_FeedParser):
    media_type = "application/x-ndjson"
    format_name = "jsonl"


class JSONLinesParser(NDJSONParser):
    media_type = "application/jsonl"


class _Feed(bytes):
    """A body read by one of the feed parsers, with the format its media type names."""

    format_name: str

    def __new__(cls, raw: bytes, format_name: str) -> _Feed:
        feed = super().__new__(cls, raw)
        feed.format_name = format_name
        return feed


class FeedRefused(ExchangeError):
    """The feed as a whole is refused: 413 past a limit, 400 otherwise, with the row."""

    def __init__(self, exc: FeedError) -> None:
        super().__init__(exc.code, exc.message, field="body")
        self.status = 413 if isinstance(exc, FeedTooLarge) else 400
        self.row = exc.row

    def as_dict(self) -> dict:
        body = super().as_dict()
        if self.row is not None:
            body["row"] = self.row
        return body


class ImportRowResult(serializers.Serializer):
    row = serializers.IntegerField(help_text="the line of the body where the row starts")
    status = serializers.ChoiceField(choices=["created", "existing", "failed"])
    id = serializers.IntegerField(required=False, help_text="the offer or bid")
    ref = serializers.CharField(required=False)
    column = serializers.CharField(required=False, help_text="'-' for the whole row")
    code = serializers.CharField(required=False)
    message = serializers.CharField(required=False)


class ImportResponse(serializers.Serializer):
    market = serializers.CharField()
    side = serializers.ChoiceField(choices=SIDES)
    rows = serializers.IntegerField()
    created = serializers.IntegerField()
    existing = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = ImportRowResult(many=True)


class MarketImport(APIView):
    """Import a legacy feed (CSV or JSON lines) as your own offers or bids, one per row."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [CSVParser, NDJSONParser, JSONLinesParser]
    throttle_scope = "import"

    @extend_schema(
        parameters=[
            OpenApiParameter("side", str, enum=list(SIDES), required=True),
            OpenApiParameter(
                "map",
                str,
                description="a map (docs/adapters.md) as JSON; default: columns named like "
                "the schema's attributes are equalities",
            ),
        ],
        request={
            "text/csv": OpenApiTypes.STR,
            "application/x-ndjson": OpenApiTypes.STR,
            "application/jsonl": OpenApiTypes.STR,
        },
        responses={200: ImportResponse},
    )
    def post(self, request: Request, subject: str) -> Response:
        market = market_by_subject(subject=subject)
        if market is None:
            raise Http404
        if request.query_params.get("side") not in SIDES:
            raise InvalidInput("invalid_side", "side is offer or bid.", field="side")
        side: Side = "offer" if request.query_params["side"] == "offer" else "bid"
        schema = market_schema(market=market)
        raw_map = request.query_params.get("map")
        try:
            feed_map = (
                map_default(schema)
                if raw_map is None
                else map_load(raw_map, schema=schema, side=side)
            )
        except MapError as exc:
            raise InvalidInput("invalid_map", str(exc), field="map") from None
        body = request.data
        if not isinstance(body, _Feed):
            raise InvalidInput(
                "empty_feed", "Send the feed as text/csv or application/x-ndjson.", field="body"
            )
        if feed_map.format is not None and feed_map.format != body.format_name:
            raise InvalidInput(
                "format_mismatch",
                f"The map reads {feed_map.format} but the body is sent as {request.content_type}.",
                field="map",
            )
        try:
            rows = feed_rows(
                bytes(body),
                fmt=body.format_name,
                feed_map=feed_map,
                max_rows=settings.IMPORT_MAX_ROWS,
            )
        except FeedError as exc:
            raise FeedRefused(exc) from None
        results = feed_import(
            user=request.user, market=market, side=side, rows=rows, feed_map=feed_map
        )
        counts = {s: sum(r.status == s for r in results) for s in ("created", "existing", "failed")}
        return Response(
            {
                "market": market.subject,
                "side": side,
                "rows": len(results),
                **counts,
                "results": [r.as_dict() for r in results],
            }
        )
