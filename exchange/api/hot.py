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

The page's two statements (the count and the rows) are compiled once per set of filters,
not per request: the ORM building, compiling and converting them was about 45% of the
page's CPU in-process after the rows were written by hand (cProfile, issue 36). The first
request of a filter set runs the ORM's count and keeps the statement it ran, and keeps the
rows' statement as the ORM compiles it, with its converters; later requests of that filter
set run the kept text with the page's bounds as ``LIMIT``/``OFFSET`` parameters. A filter
set is the view and its raw filter value: what the statements depend on (every filter is
parsed from that value alone, and a value that fails to parse is never kept). Each offer's
``constraint_json`` is decoded once per distinct text (``_json_kept``): decoding it for
every row of every page was a tenth of the page's CPU once the rest was kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import JSONField, QuerySet
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


@dataclass(frozen=True)
class CompiledRows:
    """A filtered, ordered ``offer_rows`` queryset as the SQL the ORM compiled for it: its
    count's statement, its rows' statement (unsliced) and the converters the ORM applies to
    each row. What DRF's pagination asks of a queryset (``count()``, a slice, iteration)
    runs those statements as they are."""

    count_sql: str
    count_params: tuple[Any, ...]
    rows_sql: str
    rows_params: tuple[Any, ...]
    converters: tuple[tuple[int, tuple[Callable[..., Any], ...], Any], ...]

    @classmethod
    def of(
        cls, queryset: QuerySet[Any], counted: Callable[[], int] | None = None
    ) -> tuple[CompiledRows, int]:
        """``queryset`` compiled, and its count: the ORM's own ``count()``, or ``counted``
        (one statement whose one value is the same number), whose statement is kept as it
        ran."""
        ran: list[tuple[str, tuple[Any, ...]]] = []

        def keep(execute, sql, params, many, context):
            ran.append((sql, tuple(params or ())))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(keep):
            count = queryset.count() if counted is None else counted()
        (count_sql, count_params) = ran[-1]
        compiler = queryset.query.get_compiler(using=queryset.db)
        rows_sql, rows_params = compiler.as_sql()
        fields = [selected[0] for selected in compiler.select[0 : compiler.col_count]]
        converters = tuple(
            (position, _kept_decoding(tuple(functions), expression), expression)
            for position, (functions, expression) in compiler.get_converters(fields).items()
        )
        compiled = cls(count_sql, count_params, rows_sql, tuple(rows_params), converters)
        return compiled, count

    def count(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(self.count_sql, self.count_params)
            (count,) = cursor.fetchone()
        return int(count)

    def rows(self, limit: int | None = None, offset: int = 0) -> list[tuple[Any, ...]]:
        sql, params = self.rows_sql, self.rows_params
        if limit is not None:
            sql, params = f"{sql} LIMIT %s OFFSET %s", (*params, limit, offset)
        elif offset:
            sql, params = f"{sql} OFFSET %s", (*params, offset)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            fetched = cursor.fetchall()
        if not self.converters:
            return [tuple(row) for row in fetched]
        out = []
        for row in fetched:
            values = list(row)
            for position, functions, expression in self.converters:
                value = values[position]
                for function in functions:
                    value = function(value, expression, connection)
                values[position] = value
            out.append(tuple(values))
        return out


# A JSON column's text -> what its field decodes it to, shared by every answer that shows
# it: the answers only read it (they are rendered, never changed).
_decoded: dict[str, Any] = {}
DECODED_MAX = 10_000
# Only texts up to this long are kept, so that the cache is bounded in bytes too: a large
# offer's JSON form decodes to some 70 KB of objects, and 10,000 of those would be 0.7 GB
# per process. Longer ones are decoded at each answer.
DECODED_TEXT_MAX = 2048


def _kept_decoding(
    functions: tuple[Callable[..., Any], ...], expression: Any
) -> tuple[Callable[..., Any], ...]:
    """``functions`` (a column's converters), with a plain ``JSONField``'s decoding done once
    per distinct text."""
    field = getattr(expression, "output_field", None)
    if not isinstance(field, JSONField) or field.decoder is not None or len(functions) != 1:
        return functions
    (decode,) = functions

    def _json_kept(value: Any, expression: Any, connection: Any) -> Any:
        if not isinstance(value, str) or len(value) > DECODED_TEXT_MAX:
            return decode(value, expression, connection)
        found = _decoded.get(value)
        if found is None:
            found = decode(value, expression, connection)
            if len(_decoded) >= DECODED_MAX:
                _decoded.clear()
            _decoded[value] = found
        return found

    return (_json_kept,)


class _Page:
    """``CompiledRows`` as DRF's ``LimitOffsetPagination`` reads a queryset; the first
    ``count()`` may be one already run (``CompiledRows.of``)."""

    def __init__(self, compiled: CompiledRows, count: int | None) -> None:
        self.compiled = compiled
        self.counted = count

    def count(self) -> int:
        if self.counted is None:
            self.counted = self.compiled.count()
        return self.counted

    def __getitem__(self, bounds: slice) -> list[tuple[Any, ...]]:
        start = bounds.start or 0
        limit = None if bounds.stop is None else max(0, bounds.stop - start)
        return self.compiled.rows(limit, start)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.compiled.rows())


_compiled: dict[tuple[type, str | None], CompiledRows] = {}
_compiled_lock = threading.Lock()
COMPILED_MAX = 1_000


def offer_page(
    view: GenericAPIView,
    request: Request,
    *,
    filters: str | None,
    counted: Callable[[], int] | None = None,
) -> Response:
    """``view``'s ``list`` (a list of offers, paginated by DRF) over ``offer_rows``, its
    statements compiled once per ``filters`` (the raw value every filter of ``view``'s
    queryset is parsed from; None when absent); the page's count is ``counted``'s statement
    when given (``CompiledRows.of``)."""
    key = (type(view), filters)
    compiled = _compiled.get(key)
    count = None
    if compiled is None:
        rows = offer_rows(view.filter_queryset(view.get_queryset()))
        compiled, count = CompiledRows.of(rows, counted)
        with _compiled_lock:
            if len(_compiled) >= COMPILED_MAX:
                _compiled.clear()
            _compiled[key] = compiled
    queryset: Any = _Page(compiled, count)
    page = view.paginate_queryset(queryset)
    if page is None:
        return Response(offers_shown(list(queryset), request))
    return view.get_paginated_response(offers_shown(page, request))
