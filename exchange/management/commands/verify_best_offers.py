"""``manage.py verify_best_offers``: the best-offer table against a from-scratch recomputation.

Exit status 0 when they agree, 1 on any difference, 3 while changes are still pending.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from exchange.services.verification import best_offers_verify


class Command(BaseCommand):
    help = "Check that the best-offer table equals a recomputation from scratch (SPEC 5.3)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--strategy", choices=["range", "paper"], help="recompute with this strategy"
        )

    def handle(self, *args, **options):
        result = best_offers_verify(strategy=options.get("strategy"))
        for diff in result.differences[:50]:
            self.stderr.write(
                f"offer {diff.offer_id}: table has bid/value/count {diff.table}, "
                f"recomputation gives {diff.recomputed}"
            )
        if result.match_differences:
            self.stderr.write(
                f"{result.match_differences} matching pair(s) differ from a recomputation"
            )
        if result.pending_changes:
            self.stderr.write(
                f"{result.pending_changes} change(s) are still pending: the table is not settled yet"
            )
        if result.differences or result.match_differences:
            self.stderr.write(f"best-offer table: {len(result.differences)} difference(s)")
            sys.exit(1)
        if result.pending_changes:
            sys.exit(3)
        self.stdout.write(f"best-offer table is correct for {result.offers} open offer(s)")
