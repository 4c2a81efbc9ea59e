"""Rows of other shapes: typed cells (dates, points), explicit operators, another delimiter,
a byte order mark, quoted cells over several lines."""

from __future__ import annotations

import json

import pytest

from exchange.adapters.feeds import Row, RowError, feed_rows
from exchange.adapters.imports import RowResult, feed_import
from exchange.adapters.maps import map_default, map_load
from exchange.models import Offer
from exchange.selectors.markets import market_schema
from exchange.services.markets import market_create

from .conftest import DEMO

pytestmark = pytest.mark.django_db

FREIGHT = next(m for m in DEMO["markets"] if m["subject"] == "freight.road.pallets")


@pytest.fixture
def freight(db):
    return market_create(
        subject=FREIGHT["subject"], title="Freight", schema=FREIGHT["schema"], tick="1.00"
    )


def test_dates_points_and_explicit_operators_from_a_semicolon_csv(freight, seller):
    feed_map = map_load(
        json.dumps(
            {
                "delimiter": ";",
                "attributes": {
                    "pallets": {"between": ["min", "max"]},
                    "delivery": {"column": "deliver_by", "op": "<="},
                    "pickup": "depot",
                    "price": {"column": "reserve", "op": ">="},
                },
            }
        ),
        schema=market_schema(market=freight),
        side="offer",
    )
    body = (
        "\ufeffref;min;max;deliver_by;depot;reserve\n"
        'T1;1;20;2026-12-12;"POINT(12.5, 30)";400\n'
        "T2;1;20;12/12/2026;POINT(1, 2);400\n"
        "T3;1;20;2026-12-12;POINT(1);400\n"
    ).encode()
    rows = feed_rows(body, fmt="csv", feed_map=feed_map)
    results = feed_import(user=seller, market=freight, side="offer", rows=rows, feed_map=feed_map)
    (offer,) = Offer.objects.all()
    assert offer.constraint_text == (
        "pallets BETWEEN 1 AND 20 AND delivery <= DATE '2026-12-12' "
        "AND pickup = POINT(12.5, 30.0) AND decimal price >= 400"
    )
    assert results[0] == RowResult(2, "created", offer.pk, "T1")
    assert results[1:] == [
        RowResult(
            3,
            "failed",
            ref="T2",
            error=RowError(
                "deliver_by",
                "bad_literal",
                "DATE '12/12/2026' is not a valid date: write DATE 'YYYY-MM-DD', such as DATE '2026-11-20'",
            ),
        ),
        RowResult(
            4,
            "failed",
            ref="T3",
            error=RowError(
                "depot", "syntax", "expected ',' in POINT(x, y) (it takes 2 numbers), found ')'"
            ),
        ),
    ]
    assert Offer.objects.count() == 1


def test_a_row_is_numbered_by_the_line_it_starts_on(pencils):
    feed_map = map_default(market_schema(market=pencils))
    body = b'ref,lot,price\n\nA,"10\n",1.00\nB,20,1.00\nC,30,1.00,extra\n'
    assert feed_rows(body, fmt="csv", feed_map=feed_map) == [
        Row(3, {"ref": "A", "lot": "10", "price": "1.00"}),
        Row(5, {"ref": "B", "lot": "20", "price": "1.00"}),
        Row(
            6,
            error=RowError(
                "-", "too_many_cells", "this row has 4 cells; the header names 3 columns"
            ),
        ),
    ]
