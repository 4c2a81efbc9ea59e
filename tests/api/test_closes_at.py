"""``closes_at`` on the API: a value without a time zone is refused by the service's rule
(SPEC 9, issue 15), not silently read as the server's zone."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from exchange.models import BestOffer, Notification, Offer, OrderChange

pytestmark = pytest.mark.django_db

CONSTRAINT = "lot BETWEEN 1 AND 5 AND price >= 2.00"


def _rows() -> tuple[int, int, int, int]:
    return (
        Offer.objects.count(),
        BestOffer.objects.count(),
        OrderChange.objects.count(),
        Notification.objects.count(),
    )


@pytest.mark.parametrize(
    "closes_at", ["2099-12-01T12:00:00", "2099-12-01T12:00", "2099-12-01 12:00"]
)
def test_a_naive_closes_at_is_refused_and_nothing_is_written(world, closes_at):
    before = _rows()
    response = world["clients"]["seller"].post(
        "/api/v1/offers/",
        {"market": "office.supplies.pencils", "constraint": CONSTRAINT, "closes_at": closes_at},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "invalid_closes_at",
            "message": "closes_at needs a time zone, e.g. 2026-12-01T12:00:00Z.",
            "field": "closes_at",
        }
    }
    assert _rows() == before


@pytest.mark.parametrize(
    ("closes_at", "stored"),
    [
        ("2099-12-01T12:00:00Z", dt.datetime(2099, 12, 1, 12, 0, tzinfo=dt.UTC)),
        ("2099-12-01T14:00:00+02:00", dt.datetime(2099, 12, 1, 12, 0, tzinfo=dt.UTC)),
    ],
)
def test_a_closes_at_with_a_zone_is_stored_as_that_instant(world, closes_at, stored):
    response = world["clients"]["seller"].post(
        "/api/v1/offers/",
        {"market": "office.supplies.pencils", "constraint": CONSTRAINT, "closes_at": closes_at},
        format="json",
    )
    assert response.status_code == 201
    offer = Offer.objects.get(pk=response.json()["id"])
    assert offer.closes_at == stored
    assert timezone.is_aware(offer.closes_at)


def test_a_closes_at_that_is_not_a_date_keeps_drfs_type_error(world):
    before = _rows()
    response = world["clients"]["seller"].post(
        "/api/v1/offers/",
        {"market": "office.supplies.pencils", "constraint": CONSTRAINT, "closes_at": "soon"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert response.json()["error"]["field"] == "closes_at"
    assert _rows() == before
