"""``manage.py bench_book --offers N --bids M [--seed S]``: the live benchmark's book (SPEC 9).

One pencils market (``office.supplies.pencils``: ``lot`` int, ``price`` decimal), 20 sellers
and 50 buyers (``seller<i>`` / ``buyer<i>``, password ``bench-pass-1``), ``N`` open offers
(offer ``i`` sells lots ``100 i + 1`` to ``100 i + 50`` at a price of at least 1.00) and ``M``
active bids (one random lot each, a price bound from 1.00 to 1.49), then the engine's store
rebuilt and every best offer computed from it (``engine_rebuild``).

The market goes through ``market_create`` and every constraint through the market's rules
(``order_constraint``), as an order placed over the API would; the rows are then written in
bulk rather than one ``offer_publish``/``bid_place`` each, because 110,000 single placements
would each wake a matching cycle and the book would take an hour to build. The store and
the best-offer table come from the product's own bulk path (``engine_rebuild_run``). It
refuses to run on a database that holds users already: it is meant for a fresh bench
database (``ops/bench_live.py`` creates one).
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from exchange.market_rules import Side, order_constraint
from exchange.models import BestOffer, Bid, Offer, SpendingLimit
from exchange.selectors.markets import market_schema
from exchange.services.markets import market_create

# Benchmarks measure matching, not risk: their buyers may commit any amount (the most the
# limit's column holds).
BENCH_SPENDING_LIMIT = Decimal(10) ** 19

SUBJECT = "office.supplies.pencils"
PASSWORD = "bench-pass-1"
SELLERS = 20
BUYERS = 50
SCHEMA = [
    {"name": "lot", "type": "int", "label": "Lot", "unit": "", "role": "quantity",
     "required_on_offer": True, "required_on_bid": False},
    {"name": "price", "type": "decimal", "label": "Price", "unit": "", "role": "price",
     "required_on_offer": True, "required_on_bid": True},
]  # fmt: skip
BATCH = 5000


def offer_text(index: int) -> str:
    """Offer ``index`` sells 50 lots of its own hundred, so each bid meets one offer."""
    lot = index * 100 + 1
    return f"lot BETWEEN {lot} AND {lot + 49} AND price >= 1.00"


def bid_text(rng: random.Random, offers: int) -> str:
    """A bid for one lot of some offer's hundred, at a price bound from 1.00 to 1.49."""
    return f"lot = {rng.randrange(1, offers * 100)} AND price <= 1.{rng.randrange(0, 50):02d}"


class Command(BaseCommand):
    help = "Build the live benchmark's book (one market, N open offers, M active bids)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--offers", type=int, default=10_000)
        parser.add_argument("--bids", type=int, default=100_000)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **options: Any) -> None:
        offers, bids, seed = options["offers"], options["bids"], options["seed"]
        if offers < 1 or bids < 0:
            raise CommandError(
                f"--offers must be at least 1 and --bids at least 0, not {offers} and {bids}"
            )
        User = get_user_model()
        if User.objects.exists():
            raise CommandError("this database holds users already: bench_book needs a fresh one")
        rng = random.Random(seed)
        market = market_create(subject=SUBJECT, title="Pencils", tick="0.01", schema=SCHEMA)
        schema = market_schema(market=market)

        def rules(side: Side, text: str) -> dict[str, Any]:
            """The order's constraint fields, as the market's rules write them."""
            r = order_constraint(schema=schema, tick=market.tick, side=side, source=text)
            return {"constraint_text": r.text, "constraint_json": r.json}

        with transaction.atomic():
            # One hash for all 70 users: hashing is deliberately slow, and 70 of them under a
            # busy CPU took minutes.
            password = make_password(PASSWORD)
            names = [f"seller{i}" for i in range(SELLERS)] + [f"buyer{i}" for i in range(BUYERS)]
            users = User.objects.bulk_create([User(username=n, password=password) for n in names])
            sellers, buyers = users[:SELLERS], users[SELLERS:]
            SpendingLimit.objects.bulk_create(
                [SpendingLimit(user=b, amount=BENCH_SPENDING_LIMIT) for b in buyers]
            )
            offer_rows = [
                Offer(market=market, seller=sellers[i % SELLERS], **rules("offer", offer_text(i)))
                for i in range(offers)
            ]
            Offer.objects.bulk_create(offer_rows, batch_size=BATCH)
            # Each open offer gets an empty best-offer row that the rebuild fills in. Needed on
            # this branch, where best_offers_refresh only updates rows that exist; redundant
            # (harmless) once the engine branch's fix, which creates missing rows, is merged.
            now = timezone.now()
            BestOffer.objects.bulk_create(
                [BestOffer(offer=o, changed_at=now) for o in offer_rows], batch_size=BATCH
            )
            bid_rows = [
                Bid(market=market, buyer=buyers[i % BUYERS], **rules("bid", bid_text(rng, offers)))
                for i in range(bids)
            ]
            Bid.objects.bulk_create(bid_rows, batch_size=BATCH)
        self.stdout.write(f"{SUBJECT}: {offers:,} open offers, {bids:,} active bids")
        call_command("engine_rebuild", stdout=self.stdout)
