"""Market subjects follow the one rule of ``matching.subjects`` (SPEC 5.1, 8.2): the service
answers a bad subject with the rule's message and position and writes nothing, and the
database's check constraint is built from the same rule."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from exchange.errors import InvalidInput
from exchange.models import Market
from exchange.services.markets import market_create
from matching.subjects import SUBJECT_MAX_LENGTH, SubjectError, validate_subject
from tests.factories import PENCILS_SCHEMA, pencils_market

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "subject",
    ["office.", "office..pens", "office.*", "office.>", "Office", "office.pen s", "office\n", ""]
    + ["a" * (SUBJECT_MAX_LENGTH + 1)],
)
def test_the_service_refuses_what_the_rule_refuses_with_its_message_and_position(subject):
    with pytest.raises(SubjectError) as rule:
        validate_subject(subject)
    with pytest.raises(InvalidInput) as info:
        market_create(subject=subject, title="Pens", schema=PENCILS_SCHEMA)
    assert info.value.as_dict() == {
        "code": "invalid_subject",
        "message": f"The subject is not valid: {rule.value.message}.",
        "field": "subject",
        "position": rule.value.position,
    }
    assert Market.objects.count() == 0


def test_a_subject_that_is_not_text_is_refused_and_nothing_is_written():
    with pytest.raises(InvalidInput) as info:
        market_create(subject=["office"], title="Pens", schema=PENCILS_SCHEMA)  # type: ignore[arg-type]  # a list where text belongs: the error under test
    assert info.value.code == "invalid_subject"
    assert info.value.field == "subject"
    assert Market.objects.count() == 0


def test_a_subject_at_the_length_limit_is_accepted():
    subject = "a" * SUBJECT_MAX_LENGTH
    market = market_create(subject=subject, title="Long", schema=PENCILS_SCHEMA)
    assert Market.objects.get(pk=market.pk).subject == subject


@pytest.mark.parametrize("subject", ["office.", "office\n", "office.*"])
def test_postgres_refuses_what_the_rule_refuses(subject):
    market = pencils_market()
    with pytest.raises(IntegrityError), transaction.atomic():
        Market.objects.filter(pk=market.pk).update(subject=subject)
    assert Market.objects.get(pk=market.pk).subject == market.subject
