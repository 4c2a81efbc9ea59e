"""What a market adds to the constraint language (SPEC 5.1, 5.2): no database needed, except
for the store's limits, which need a market."""

from __future__ import annotations

from decimal import Decimal

import pytest

from exchange.errors import InvalidInput
from exchange.market_rules import order_constraint, schema_parse, with_subject
from exchange.numbers import price_text
from exchange.selectors.markets import constraint_check
from exchange.services.markets import market_create
from tests.factories import PENCILS_SCHEMA

SCHEMA = schema_parse(
    PENCILS_SCHEMA
    + [
        {
            "name": "grade",
            "type": "string",
            "label": "Grade",
            "unit": "",
            "required_on_offer": False,
            "required_on_bid": False,
            "role": None,
        },
    ]
)
TICK = Decimal("0.01")


def offer(text):
    return order_constraint(schema=SCHEMA, tick=TICK, side="offer", source=text)


def bid(text):
    return order_constraint(schema=SCHEMA, tick=TICK, side="bid", source=text)


def error(fn, text):
    with pytest.raises(InvalidInput) as caught:
        fn(text)
    return caught.value.code, caught.value.position


def test_open_price_bounds_move_one_tick_inwards():
    assert bid("price < 1.10").text == "price <= 1.09 AND int lot = * AND string grade = *"
    assert offer("lot = 5 AND price > 0.90").text == "lot = 5 AND price >= 0.91"


def test_bids_get_wildcards_for_the_attributes_they_leave_out():
    assert (
        bid("lot >= 10 AND price <= 2.00").text
        == "lot >= 10 AND price <= 2.00 AND string grade = *"
    )


def test_offers_keep_only_what_they_say():
    assert (
        offer("lot BETWEEN 1 AND 9 AND price = 1.00").text == "lot BETWEEN 1 AND 9 AND price = 1.00"
    )


def test_int_literal_prices_are_decimals_on_the_tick():
    assert offer("lot = 1 AND price = 2").text == "lot = 1 AND price = 2.00"


def test_off_tick_price_is_refused_with_its_position():
    assert error(offer, "lot = 1 AND price = 1.005") == ("off_tick", 12)


def test_negative_price_is_refused():
    assert error(offer, "lot = 1 AND price >= -1.00")[0] == "negative_price"


def test_offer_needs_a_fixed_price_or_a_reserve():
    assert error(offer, "lot = 1 AND price <= 1.00") == ("missing_price_bound", 12)


def test_bid_needs_an_upper_price_bound():
    assert error(bid, "lot = 1 AND price >= 1.00") == ("missing_price_bound", 12)
    assert error(bid, "lot = 1")[0] == "missing_attribute"


def test_unknown_attribute_and_wrong_type_point_at_the_name():
    assert error(offer, "lot = 1 AND price = 1.00 AND colour = 'red'") == ("unknown_attribute", 29)
    assert error(offer, "lot = 1 AND price = 1.00 AND float grade = 1.5") == ("type_mismatch", 29)


def test_required_attribute_missing_in_one_disjunct():
    assert error(offer, "(lot = 1 AND price = 1.00) OR price = 2.00")[0] == "missing_attribute"


def test_subject_is_implied():
    assert error(offer, "subject = 'x' AND lot = 1 AND price = 1.00")[0] == "subject_implied"


def test_syntax_errors_carry_the_parsers_position():
    assert error(offer, "lot = AND price = 1.00")[1] == 6


def test_no_price_left_on_the_tick_is_unsatisfiable():
    assert error(bid, "price > 1.00 AND price < 1.01")[0] == "unsatisfiable"


def test_the_engine_adds_the_subject_to_every_disjunct():
    parsed = offer("(lot = 1 AND price = 1.00) OR (lot = 2 AND price = 2.00)").constraint
    engine = with_subject(parsed, "office.supplies.pencils")
    assert [next(iter(d.items))[0].name for d in engine] == ["subject", "subject"]


def test_price_text_uses_the_ticks_places():
    assert price_text(Decimal("1.1000000000"), Decimal("0.01")) == "1.10"
    assert price_text(Decimal("400"), Decimal("1")) == "400"


@pytest.mark.parametrize(
    "schema, message",
    [
        ([], "non-empty"),
        ([{"name": "price", "type": "int", "role": "price"}], "must be decimal"),
        ([{"name": "lot", "type": "int"}], "role price"),
        (
            [
                {"name": "subject", "type": "string"},
                {"name": "p", "type": "decimal", "role": "price"},
            ],
            "reserved",
        ),
        ([{"name": "a b", "type": "int"}], "name"),
        ([{"name": "x", "type": "money"}], "type must be one of"),
        (
            [{"name": "p", "type": "decimal", "role": "price"}, {"name": "p", "type": "int"}],
            "twice",
        ),
    ],
)
def test_bad_schemas_are_refused(schema, message):
    with pytest.raises(InvalidInput) as caught:
        schema_parse(schema)
    assert message in caught.value.message


@pytest.mark.django_db
def test_values_too_large_to_index_are_refused():
    # The store's limits come on top of the market rules: posting and checking both apply them.
    market = market_create(
        subject="graded.pencils", title="Graded pencils", schema=SCHEMA.as_list()
    )
    text = "lot = 1 AND price = 1.00 AND grade = '" + "x" * 5000 + "'"
    assert offer(text).constraint  # the market rules alone accept it
    with pytest.raises(InvalidInput) as caught:
        constraint_check(market=market, side="offer", source=text)
    assert (caught.value.code, caught.value.field, caught.value.position) == (
        "too_large",
        "constraint",
        0,
    )
