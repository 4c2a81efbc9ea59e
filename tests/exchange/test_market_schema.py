"""``schema_parse``: every way a schema is refused, with its exact message, the first
problem in the order a reader goes (the list, then each attribute in turn, its fields in
order, then the roles across the list), and what an accepted schema becomes."""

from __future__ import annotations

import pytest

from exchange.errors import InvalidInput
from exchange.market_rules import MarketSchema, SchemaAttribute, schema_parse
from exchange.models import Market
from matching.model import Type
from tests.api.conftest import client_for
from tests.factories import StaffFactory

PRICE = {"name": "price", "type": "decimal", "role": "price"}
NOT_A_LIST = "The schema must be a non-empty list of attributes."
NAME = "schema[1].name must be a name such as lot or delivery_date (letters, digits, _)."
TYPE = "schema[1].type must be one of int, decimal, float, date, timestamp, string, point, box."
ROLE = "schema[1].role must be price, quantity or null."
ONE_PRICE = "Exactly one attribute must have the role price, and it must be decimal."
ONE_QUANTITY = "At most one attribute has the role quantity, and it must be int or decimal."


def refusal(raw: object) -> str:
    with pytest.raises(InvalidInput) as raised:
        schema_parse(raw)
    assert (raised.value.code, raised.value.field) == ("invalid_schema", "schema")
    return raised.value.message


@pytest.mark.parametrize("raw", [None, [], {}, {"name": "lot"}, "price", 5, True])
def test_anything_but_a_non_empty_list_is_refused(raw):
    assert refusal(raw) == NOT_A_LIST


@pytest.mark.parametrize("item", [5, "lot", None, [], True])
def test_an_attribute_that_is_not_an_object_is_refused(item):
    assert refusal([PRICE, item]) == "schema[1] must be an object."


@pytest.mark.parametrize(
    "attribute, message",
    [
        ({"type": "int"}, NAME),
        ({"name": None, "type": "int"}, NAME),
        ({"name": 5, "type": "int"}, NAME),
        ({"name": True, "type": "int"}, NAME),
        ({"name": "", "type": "int"}, NAME),
        ({"name": "a b", "type": "int"}, NAME),
        ({"name": " lot", "type": "int"}, NAME),
        ({"name": "lot ", "type": "int"}, NAME),
        ({"name": "1lot", "type": "int"}, NAME),
        ({"name": "a-" * 40, "type": "int"}, NAME),  # bad and too long: the name's rule first
        (
            {"name": "subject", "type": "int"},
            "schema[1]: 'subject' is reserved for the market's subject.",
        ),
        ({"name": "price", "type": "int"}, "schema[1]: the attribute price appears twice."),
        ({"name": "price", "type": "money"}, "schema[1]: the attribute price appears twice."),
        ({"name": "lot"}, TYPE),
        ({"name": "lot", "type": None}, TYPE),
        ({"name": "lot", "type": 5}, TYPE),
        ({"name": "lot", "type": "money"}, TYPE),
        ({"name": "lot", "type": "money", "role": "seller"}, TYPE),
        ({"name": "lot", "type": "int", "role": "seller"}, ROLE),
        ({"name": "lot", "type": "int", "role": ""}, ROLE),
        ({"name": "lot", "type": "int", "role": 5}, ROLE),
        ({"name": "lot", "type": "int", "role": "Price"}, ROLE),
        ({"name": "lot", "type": "int", "role": "x", "required_on_bid": 1}, ROLE),
        (
            {"name": "lot", "type": "int", "required_on_offer": "true"},
            "schema[1].required_on_offer must be true or false.",
        ),
        (
            {"name": "lot", "type": "int", "required_on_offer": None, "required_on_bid": 0},
            "schema[1].required_on_offer must be true or false.",
        ),
        (
            {"name": "lot", "type": "int", "required_on_bid": 1},
            "schema[1].required_on_bid must be true or false.",
        ),
        (
            {"name": "lot", "type": "int", "required_on_bid": "yes", "label": 5},
            "schema[1].required_on_bid must be true or false.",
        ),
        ({"name": "lot", "type": "int", "label": 5}, "schema[1].label must be a string."),
        ({"name": "lot", "type": "int", "label": None}, "schema[1].label must be a string."),
        (
            {"name": "lot", "type": "int", "label": ["a"], "unit": 5},
            "schema[1].label must be a string.",
        ),
        ({"name": "lot", "type": "int", "unit": 5}, "schema[1].unit must be a string."),
        (
            {"name": "lot", "type": "int", "label": "L" * 101, "unit": 5},
            "schema[1].label is 101 characters long; at most 100.",
        ),
    ],
)
def test_each_field_of_an_attribute_is_checked_in_order(attribute, message):
    assert refusal([PRICE, attribute]) == message


def test_the_first_attribute_with_a_problem_is_the_one_named():
    lot = {"name": "lot", "type": "int"}
    assert refusal([PRICE, lot, {"name": "x", "type": "money"}, {"name": "a b"}]) == (
        "schema[2].type must be one of int, decimal, float, date, timestamp, string, point, box."
    )
    assert refusal([PRICE, lot, {"name": "lot", "type": "int"}, 5]) == (
        "schema[2]: the attribute lot appears twice."
    )
    # an attribute's problem comes before the roles across the list
    assert refusal([lot, {"name": "x", "type": "money"}]) == (
        "schema[1].type must be one of int, decimal, float, date, timestamp, string, point, box."
    )


@pytest.mark.parametrize(
    "raw, message",
    [
        ([{"name": "lot", "type": "int"}], ONE_PRICE),
        ([{"name": "price", "type": "int", "role": "price"}], ONE_PRICE),
        ([PRICE, {"name": "ask", "type": "decimal", "role": "price"}], ONE_PRICE),
        ([{"name": "lot", "type": "int", "role": "quantity"}], ONE_PRICE),
        (
            [
                PRICE,
                {"name": "lot", "type": "int", "role": "quantity"},
                {"name": "n", "type": "int", "role": "quantity"},
            ],
            ONE_QUANTITY,
        ),
        ([PRICE, {"name": "lot", "type": "string", "role": "quantity"}], ONE_QUANTITY),
        ([PRICE, {"name": "lot", "type": "float", "role": "quantity"}], ONE_QUANTITY),
    ],
)
def test_the_roles_across_the_list(raw, message):
    assert refusal(raw) == message


def test_an_accepted_schema_is_typed_with_its_defaults():
    schema = schema_parse(
        [
            {"name": "price", "type": "NUMERIC", "role": "price", "unit": "EUR"},
            {
                "name": "delivery_date",
                "type": "Date",
                "required_on_offer": True,
                "required_on_bid": False,
                "role": None,
                "comment": "keys a schema does not know are left out",
            },
            {"name": "lot", "type": "integer", "role": "quantity", "label": "  Lot size "},
            {"name": "grade", "type": "text", "label": "", "unit": ""},
        ]
    )

    assert schema == MarketSchema(
        (
            SchemaAttribute("price", Type.DECIMAL, "price", "EUR", False, False, "price"),
            SchemaAttribute("delivery_date", Type.DATE, "delivery date", "", True, False, None),
            SchemaAttribute("lot", Type.INT, "  Lot size ", "", False, False, "quantity"),
            SchemaAttribute("grade", Type.STRING, "grade", "", False, False, None),
        )
    )


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("label", "a\x00b", "schema[1].label must not contain a NUL character."),
        ("unit", "\x00", "schema[1].unit must not contain a NUL character."),
        (
            "label",
            "a\ud800",
            "schema[1].label must not contain a lone surrogate (an unpaired \\ud800-\\udfff).",
        ),
    ],
)
def test_a_text_postgresql_cannot_store_is_refused(field, text, message):
    # A NUL in a label was a 500 when the market was saved (the cleanup's probe, issue 38)
    assert refusal([PRICE, {"name": "lot", "type": "int", field: text}]) == message


@pytest.mark.django_db
def test_a_nul_in_a_schema_is_a_400_over_the_api_and_nothing_is_stored():
    response = client_for(StaffFactory()).post(
        "/api/v1/markets/",
        {
            "subject": "office.nul",
            "title": "Nul",
            "schema": [PRICE, {"name": "lot", "type": "int", "label": "a\x00b"}],
        },
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "schema[1].label must not contain a NUL character."
    )
    assert not Market.objects.filter(subject="office.nul").exists()
