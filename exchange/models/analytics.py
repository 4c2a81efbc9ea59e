"""Nightly market analytics (SPEC 7): one row per market and UTC day, written by Spark.

The definitions of the figures are in ``exchange/analytics/job.py`` and ``docs/spark.md``.
Rows are derived data: ``spark_analytics`` replaces a day's rows as a whole.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class MarketDay(models.Model):
    market = models.ForeignKey(
        "exchange.Market", on_delete=models.CASCADE, related_name="analytics_days"
    )
    day = models.DateField()

    trades = models.PositiveIntegerField()
    volume = models.DecimalField(max_digits=38, decimal_places=10)
    notional = models.DecimalField(max_digits=38, decimal_places=10)
    vwap = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    open = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    high = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    low = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    close = models.DecimalField(max_digits=30, decimal_places=10, null=True)

    offers_posted = models.PositiveIntegerField()
    offers_sold = models.PositiveIntegerField()
    offers_unsold = models.PositiveIntegerField()
    bids_posted = models.PositiveIntegerField()

    offers_matched = models.PositiveIntegerField()
    match_rate = models.FloatField(null=True)
    first_match_median_seconds = models.FloatField(null=True)

    best_value_offers = models.PositiveIntegerField()
    best_value_high = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    best_value_low = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    best_value_spread = models.DecimalField(max_digits=30, decimal_places=10, null=True)

    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["market_id", "day"]
        constraints = [
            models.UniqueConstraint(fields=["market", "day"], name="marketday_one_per_day"),
            models.CheckConstraint(
                condition=Q(match_rate__isnull=True) | Q(match_rate__gte=0, match_rate__lte=1),
                name="marketday_match_rate_is_a_share",
            ),
            models.CheckConstraint(
                condition=Q(offers_matched__lte=models.F("offers_posted")),
                name="marketday_matched_within_posted",
            ),
            models.CheckConstraint(
                condition=Q(trades=0, vwap__isnull=True, open__isnull=True)
                | Q(trades__gt=0, open__isnull=False, high__gte=models.F("low")),
                name="marketday_prices_agree_with_trades",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.market_id} on {self.day}: {self.trades} trade(s)"
