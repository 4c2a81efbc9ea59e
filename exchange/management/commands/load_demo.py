"""Load the demo data of fixtures/demo.json (idempotent: existing markets are left as they are)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from exchange.models import Market
from exchange.services.limits import spending_limit_set
from exchange.services.markets import market_create
from exchange.services.orders import bid_place, offer_publish

DEMO = Path(settings.BASE_DIR) / "fixtures" / "demo.json"


class Command(BaseCommand):
    help = "Load the demo markets, users, offers and bids; --print-logins shows the logins."

    def add_arguments(self, parser):
        parser.add_argument("--file", default=str(DEMO))
        parser.add_argument("--print-logins", action="store_true", help="only print the logins")

    def handle(self, *args, **options):
        data = json.loads(Path(options["file"]).read_text())
        if options["print_logins"]:
            self.stdout.write("Demo logins (user / password):")
            for user in data["users"]:
                self.stdout.write(f"  {user['role']:<7} {user['username']:<9} {user['password']}")
            return
        with transaction.atomic():
            users = self._users(data["users"])
            created = 0
            for spec in data["markets"]:
                if Market.objects.filter(subject=spec["subject"]).exists():
                    continue
                market = market_create(
                    subject=spec["subject"],
                    title=spec["title"],
                    description=spec.get("description", ""),
                    schema=spec["schema"],
                    tick=spec["tick"],
                    pricing=spec["pricing"],
                )
                for offer in spec.get("offers", []):
                    offer_publish(
                        seller=users[offer["seller"]], market=market, constraint=offer["constraint"]
                    )
                for bid in spec.get("bids", []):
                    bid_place(
                        buyer=users[bid["buyer"]], market=market, constraint=bid["constraint"]
                    )
                created += 1
        self.stdout.write(
            f"demo data: {created} market(s) created, {len(data['markets']) - created} already there"
        )

    def _users(self, specs):
        User = get_user_model()
        users = {}
        for spec in specs:
            user, made = User.objects.get_or_create(username=spec["username"])
            if made:
                user.set_password(spec["password"])
                user.is_staff = user.is_superuser = bool(spec.get("staff"))
                user.save()
                if spec.get("spending_limit"):
                    spending_limit_set(
                        staff=None, user=user, amount=Decimal(spec["spending_limit"])
                    )
            users[spec["username"]] = user
        return users
