"""``manage.py subscription_engine [--name NAME]``: one subscription engine process
(``exchange/subscription_engine``), running until SIGTERM or SIGINT."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from exchange.subscription_engine.runner import engine_run


class Command(BaseCommand):
    help = "Run one subscription engine process (live subscriptions, SPEC 8.3)."

    def add_arguments(self, parser):
        parser.add_argument("--name", default=None, help="the process's lease name")

    def handle(self, *args, **options):
        engine_run(name=options["name"])
