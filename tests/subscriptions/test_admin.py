"""Staff see live subscriptions in the console, read-only."""

from __future__ import annotations

import pytest

from exchange.services.subscriptions import subscription_create
from tests.factories import StaffFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_staff_list_and_open_subscriptions_but_cannot_change_them(client):
    sub = subscription_create(
        owner=UserFactory(username="alice"), query="SELECT price", name="cheap"
    )
    client.force_login(StaffFactory(is_superuser=True))

    listing = client.get("/admin/exchange/subscription/")
    page = client.get(f"/admin/exchange/subscription/{sub.pk}/change/")

    assert listing.status_code == 200 and "cheap" in listing.content.decode()
    assert page.status_code == 200 and "SELECT price" in page.content.decode()
    assert client.get("/admin/exchange/subscription/add/").status_code == 403
    deleted = client.post(f"/admin/exchange/subscription/{sub.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    sub.refresh_from_db()
    assert sub.state == "active"
