"""``manage.py engine_rebuild [--strategy S]``: rebuild the engine's constraint store from the
live orders and recompute every match and best offer (after a strategy switch or a change of
the store's layout)."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import transaction

from exchange import engine
from exchange.models import Bid, Offer, OfferBidMatch
from exchange.services.matching import apply_changes, cycle_lock


class Command(BaseCommand):
    help = "Rebuild the engine's constraint store and the best-offer table from the live orders."

    def add_arguments(self, parser):
        parser.add_argument("--strategy", choices=engine.STRATEGIES, default=None)

    def handle(self, *args, **options):
        name = options["strategy"] or engine.strategy()
        with transaction.atomic():
            cycle_lock()
            store = engine.store(name)
            store.drop()
            store.create()
            if name == engine.strategy():
                offers = set(
                    Offer.objects.filter(state=Offer.State.OPEN).values_list("pk", flat=True)
                )
                bids = set(Bid.objects.filter(state=Bid.State.ACTIVE).values_list("pk", flat=True))
                OfferBidMatch.objects.all().delete()
                touched, notes = apply_changes(offer_ids=offers, bid_ids=bids)
            else:
                # A store that is not in use stays empty until the setting points at it.
                touched, notes = 0, []
        self.stdout.write(
            f"engine_{name} rebuilt: {touched} offer(s) recomputed, {len(notes)} notification(s)"
        )
