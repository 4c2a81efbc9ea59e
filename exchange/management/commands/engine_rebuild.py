"""``manage.py engine_rebuild [--strategy S]``: rebuild the engine's constraint store from the
live orders and recompute every match and best offer (after a strategy switch or a change of
the store's layout)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from exchange import engine
from exchange.services.matching import engine_rebuild_run


class Command(BaseCommand):
    help = "Rebuild the engine's constraint store and the best-offer table from the live orders."

    def add_arguments(self, parser):
        parser.add_argument("--strategy", choices=engine.STRATEGIES, default=None)

    def handle(self, *args, **options):
        name = options["strategy"] or engine.strategy()
        touched, notes = engine_rebuild_run(name)
        self.stdout.write(
            f"engine_{name} rebuilt: {touched} offer(s) recomputed, {len(notes)} notification(s)"
        )
