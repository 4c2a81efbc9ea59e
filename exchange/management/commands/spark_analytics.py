"""``manage.py spark_analytics [--date D]``: the nightly market analytics for one UTC day.

Computes every market's figures for the day with Spark (on ``SPARK_MASTER``) and replaces
the day's ``MarketDay`` rows with them; running it again for a day gives the same rows.
The day defaults to yesterday (UTC), which is what Celery beat runs each night.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from exchange.analytics.services import market_days_refresh, yesterday


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--date takes a date such as 2026-11-20, not {text!r}") from None


class Command(BaseCommand):
    help = "Compute the per-market analytics of one UTC day (default: yesterday) with Spark."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--date", help="the UTC day, YYYY-MM-DD (default: yesterday)")

    def handle(self, *args: Any, **options: Any) -> None:
        day = _date(options["date"]) if options["date"] else yesterday()
        rows = market_days_refresh(day=day)
        trades = sum(r.trades for r in rows)
        self.stdout.write(f"{day}: {len(rows)} market(s), {trades} trade(s)")
