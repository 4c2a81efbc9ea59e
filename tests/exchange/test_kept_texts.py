"""Caches keyed by an order's text keep only short texts, so that they are bounded in bytes
as well as in entries: a text near the language's limits parses or decodes to some 100 KB of
objects, and a cache of 10,000 to 200,000 of them would have held gigabytes."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import JSONField, Value

import matching
from exchange.api import hot
from exchange.engine import constraints
from exchange.memo import KEPT_TEXT_MAX
from exchange.services import notifications
from tests.factories import pencils_market


def _alternatives(n: int) -> str:
    return " OR ".join(f"(lot = {i})" for i in range(n))


def test_a_long_stored_text_is_parsed_but_not_kept():
    short, long = _alternatives(3), _alternatives(60)
    assert len(short) <= KEPT_TEXT_MAX < len(long)
    constraints._parsed.cache_clear()
    assert constraints._parsed(long) == matching.parse(long)
    assert constraints._parsed(long) is not constraints._parsed(long)  # parsed each time
    assert constraints._parsed.cache_info().currsize == 0
    assert constraints._parsed(short) == matching.parse(short)
    assert constraints._parsed(short) is constraints._parsed(short)  # kept
    assert constraints._parsed.cache_info().currsize == 1


def test_a_long_offer_text_is_priced_but_not_kept(db):
    market = pencils_market()
    schema = constraints.market_schema_of(market)

    class Offer:  # what the pricing reads of an offer
        def __init__(self, text: str) -> None:
            self.constraint_text = text
            self.market = market

    fixed = " OR ".join(f"(lot = {i} AND price = 1.00)" for i in range(20))
    auction = " OR ".join(f"(lot = {i} AND price >= 1.00)" for i in range(20))
    assert len(fixed) > KEPT_TEXT_MAX and len(auction) > KEPT_TEXT_MAX
    notifications._fixed_price.cache_clear()
    assert notifications._pricing(Offer(fixed), schema) == "fixed"
    assert notifications._pricing(Offer(auction), schema) == market.pricing
    assert notifications._fixed_price.cache_info().currsize == 0
    assert notifications._pricing(Offer("lot = 1 AND price = 1.00"), schema) == "fixed"
    assert notifications._fixed_price.cache_info().currsize == 1


def test_a_long_json_column_is_decoded_but_not_kept():
    decoded: list[str] = []

    def decode(value: str, expression: Any, connection: Any) -> Any:
        decoded.append(value)
        return json.loads(value)

    (kept,) = hot._kept_decoding((decode,), Value(None, output_field=JSONField()))
    hot._decoded.clear()
    long = json.dumps({"alternatives": ["x" * 40] * 60})
    short = json.dumps({"lot": [1, 2]})
    assert len(short) <= hot.DECODED_TEXT_MAX < len(long)
    for _ in range(2):
        assert kept(long, None, None) == json.loads(long)
        assert kept(short, None, None) == json.loads(short)
    assert decoded == [long, short, long]  # the short one decoded once, the long one each time
    assert list(hot._decoded) == [short]
