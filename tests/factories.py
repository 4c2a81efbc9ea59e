"""factory_boy factories for the exchange's models (orders go through the services)."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from exchange.services.markets import market_create

PENCILS_SCHEMA = [
    {
        "name": "lot",
        "type": "int",
        "label": "Lot size",
        "unit": "pencils",
        "required_on_offer": True,
        "required_on_bid": False,
        "role": "quantity",
    },
    {
        "name": "price",
        "type": "decimal",
        "label": "Price",
        "unit": "EUR",
        "required_on_offer": True,
        "required_on_bid": True,
        "role": "price",
    },
]


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"trader{n}")
    password = factory.django.Password("pw-for-tests-1")


class StaffFactory(UserFactory):
    username = factory.Sequence(lambda n: f"staff{n}")
    is_staff = True


def pencils_market(
    *, subject: str = "office.supplies.pencils", pricing: str = "first", tick: str = "0.01"
):
    return market_create(
        subject=subject, title="Pencils", schema=PENCILS_SCHEMA, tick=tick, pricing=pricing
    )
