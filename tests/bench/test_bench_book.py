"""``manage.py bench_book``: the live benchmark's book, built with the product's rules."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from exchange.models import BestOffer, Bid, Market, Offer

pytestmark = pytest.mark.django_db


def test_builds_the_book_the_load_relies_on() -> None:
    out = StringIO()
    call_command("bench_book", "--offers", "3", "--bids", "40", "--seed", "1", stdout=out)

    market = Market.objects.get()
    assert market.subject == "office.supplies.pencils"
    assert market.tick == Decimal("0.01")
    users = set(get_user_model().objects.values_list("username", flat=True))
    assert users == {f"seller{i}" for i in range(20)} | {f"buyer{i}" for i in range(50)}
    assert get_user_model().objects.get(username="buyer49").check_password("bench-pass-1")
    offers = list(Offer.objects.order_by("pk"))
    assert [o.state for o in offers] == ["open"] * 3
    # consecutive ids, offer i selling lots 100 i + 1 to 100 i + 50 (ops/benchmarks/live/load.py)
    assert [o.pk - offers[0].pk for o in offers] == [0, 1, 2]
    assert [o.constraint_text for o in offers] == [
        "lot BETWEEN 1 AND 50 AND price >= 1.00",
        "lot BETWEEN 101 AND 150 AND price >= 1.00",
        "lot BETWEEN 201 AND 250 AND price >= 1.00",
    ]
    assert Bid.objects.filter(state="active").count() == 40
    assert BestOffer.objects.count() == 3  # engine_rebuild computed every best offer
    assert (
        out.getvalue().splitlines()[0] == "office.supplies.pencils: 3 open offers, 40 active bids"
    )
    call_command("verify_best_offers", stdout=(check := StringIO()))
    assert "correct" in check.getvalue()


def test_refuses_a_database_in_use_and_changes_nothing() -> None:
    get_user_model().objects.create_user("someone", password="x")

    with pytest.raises(CommandError, match="holds users already"):
        call_command("bench_book", "--offers", "2", "--bids", "2", stdout=StringIO())

    assert get_user_model().objects.count() == 1
    assert not Market.objects.exists() and not Offer.objects.exists() and not Bid.objects.exists()


def test_rejects_an_empty_book() -> None:
    with pytest.raises(CommandError, match="--offers must be at least 1"):
        call_command("bench_book", "--offers", "0", "--bids", "2", stdout=StringIO())

    assert not Market.objects.exists()
