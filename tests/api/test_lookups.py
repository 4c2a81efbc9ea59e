"""The plain-statement lookups (exchange/selectors/lookups.py) load every field as the ORM
does, and token authentication answers as DRF's own class does."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db.models import Model
from rest_framework.authtoken.models import Token

from exchange.models import Market
from exchange.selectors.lookups import market_by_subject, token_with_user
from tests.api.conftest import client_for
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def _fields(instance: Model) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_a_market_loads_as_the_orm_loads_it():
    market = pencils_market()
    found = market_by_subject(subject=market.subject)
    assert isinstance(found, Market)
    assert _fields(found) == _fields(Market.objects.get(pk=market.pk))
    assert isinstance(found.schema, list) and found.schema  # JSON decoded, not text
    assert found._state.adding is False and found._state.db == "default"
    assert market_by_subject(subject="office.supplies.nothing") is None


def test_a_token_loads_with_its_user_as_the_orm_loads_them():
    user = UserFactory(username="tokened", first_name="T", email="t@example.com")
    key = Token.objects.create(user=user).key
    token = token_with_user(key=key)
    assert token is not None
    reference = Token.objects.select_related("user").get(key=key)
    assert _fields(token) == _fields(reference)
    assert _fields(token.user) == _fields(reference.user)
    assert isinstance(token.user, User) and token.user.is_authenticated
    assert token_with_user(key="0" * 40) is None


def test_token_authentication_answers_as_drfs_does():
    user = UserFactory(username="carol")
    client = client_for(user)
    assert client.get("/api/v1/bids/").status_code == 200
    bad = client_for(None)
    bad.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    refused = bad.get("/api/v1/bids/")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "Invalid token."
    User.objects.filter(pk=user.pk).update(is_active=False)
    inactive = client.get("/api/v1/bids/")
    assert inactive.status_code == 401
    assert inactive.json()["error"]["message"] == "User inactive or deleted."
