from __future__ import annotations

import json

import pytest

from exchange.market_rules import schema_parse
from exchange.models import Bid, ImportRef, Offer, OrderChange
from exchange.services.markets import market_create
from tests.factories import UserFactory
from tests.livestack import ROOT

LEGACY = ROOT / "fixtures" / "legacy"
DEMO = json.loads((ROOT / "fixtures" / "demo.json").read_text())
# The demo's pencils market: lot (int, required on offers), price (decimal, tick 0.01), grade.
PENCILS = next(m for m in DEMO["markets"] if m["subject"] == "office.supplies.pencils")
PENCILS_SCHEMA = schema_parse(PENCILS["schema"])


@pytest.fixture
def pencils(db):
    return market_create(
        subject=PENCILS["subject"], title="Pencils", schema=PENCILS["schema"], tick="0.01"
    )


@pytest.fixture
def seller(db):
    return UserFactory(username="seller1")


@pytest.fixture
def buyer(db):
    return UserFactory(username="buyer1")


def nothing_written() -> bool:
    return not (
        Offer.objects.exists()
        or Bid.objects.exists()
        or ImportRef.objects.exists()
        or OrderChange.objects.exists()
    )
