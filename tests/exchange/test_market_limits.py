"""Every text staff type into a market has a length limit: a clear error from the schema
validation and the services, and a constraint in PostgreSQL behind them (issue 15)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from exchange.errors import InvalidInput
from exchange.market_rules import schema_parse
from exchange.models import Market
from exchange.services.markets import market_create, market_update
from tests.factories import PENCILS_SCHEMA, pencils_market

PRICE = {"name": "price", "type": "decimal", "role": "price"}


@pytest.mark.parametrize(
    "attribute, message",
    [
        ({"name": "x" * 64, "type": "int"}, "schema[1].name is 64 characters long; at most 63."),
        (
            {"name": "lot", "type": "int", "label": "L" * 101},
            "schema[1].label is 101 characters long; at most 100.",
        ),
        (
            {"name": "lot", "type": "int", "unit": "u" * 41},
            "schema[1].unit is 41 characters long; at most 40.",
        ),
    ],
)
def test_schema_texts_over_their_limit_are_refused(attribute, message):
    with pytest.raises(InvalidInput) as raised:
        schema_parse([PRICE, attribute])
    assert (raised.value.code, raised.value.message, raised.value.field) == (
        "invalid_schema",
        message,
        "schema",
    )


def test_schema_texts_at_their_limit_are_accepted():
    schema = schema_parse(
        [PRICE, {"name": "x" * 63, "type": "int", "label": "L" * 100, "unit": "u" * 40}]
    )
    assert [a.name for a in schema.attributes] == ["price", "x" * 63]


def test_a_schema_has_at_most_fifty_attributes():
    many = [PRICE, *({"name": f"a{i}", "type": "int"} for i in range(50))]
    with pytest.raises(InvalidInput) as raised:
        schema_parse(many)
    assert raised.value.message == "A schema has at most 50 attributes; this one has 51."


@pytest.mark.django_db
def test_the_description_limit_is_a_clear_error_and_changes_nothing():
    market = pencils_market()
    with pytest.raises(InvalidInput) as raised:
        market_update(market_id=market.pk, description="d" * 5001)
    assert (raised.value.code, raised.value.field) == ("invalid_description", "description")
    market.refresh_from_db()
    assert market.description == ""
    with pytest.raises(InvalidInput):
        market_create(subject="too.long", title="t" * 201, schema=PENCILS_SCHEMA)
    assert not Market.objects.filter(subject="too.long").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change",
    [
        {"description": "d" * 5001},
        {"schema": [{**PENCILS_SCHEMA[0], "label": "L" * 101}, PENCILS_SCHEMA[1]]},
        {"schema": [{**PENCILS_SCHEMA[0], "unit": "u" * 41}, PENCILS_SCHEMA[1]]},
        {"schema": [{**PENCILS_SCHEMA[0], "name": "n" * 64}, PENCILS_SCHEMA[1]]},
        {"schema": [PENCILS_SCHEMA[1]] * 51},
        {"schema": {"not": "a list"}},
    ],
)
def test_postgres_refuses_staff_texts_over_their_limit(change):
    # Behind the services' back the database still holds the limits.
    market = pencils_market()
    with pytest.raises(IntegrityError), transaction.atomic():
        Market.objects.filter(pk=market.pk).update(**change)
    market.refresh_from_db()
    assert (market.description, market.schema) == ("", schema_parse(PENCILS_SCHEMA).as_list())


@pytest.mark.django_db
def test_a_newline_counts_towards_the_database_limit():
    market = pencils_market()
    label = "L\n" * 50 + "L"  # 101 characters
    with pytest.raises(IntegrityError), transaction.atomic():
        Market.objects.filter(pk=market.pk).update(
            schema=[{**PENCILS_SCHEMA[0], "label": label}, PENCILS_SCHEMA[1]]
        )
