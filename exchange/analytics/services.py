"""Running the nightly analytics for a day and writing its ``MarketDay`` rows."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.utils import timezone

from exchange.analytics.job import JdbcSource, market_day_metrics
from exchange.models import BestOfferChange, Bid, Market, MarketDay, Offer, Trade
from matching.spark import spark_session

# Key of the advisory lock that serializes two runs for the same day (with the day's ordinal).
ANALYTICS_LOCK = 0x5A4C


def yesterday() -> dt.date:
    """The last complete UTC day: what the nightly run computes."""
    return timezone.now().astimezone(dt.UTC).date() - dt.timedelta(days=1)


def jdbc_source() -> JdbcSource:
    """Django's default database (the test database under pytest) for Spark's JDBC reader."""
    db = connection.settings_dict
    host = db.get("HOST") or "localhost"
    if host.startswith("/"):
        raise ImproperlyConfigured(
            "spark_analytics reads PostgreSQL over JDBC, which needs a TCP host, "
            f"not the socket directory {host}"
        )
    port = db.get("PORT") or 5432
    return JdbcSource(
        url=f"jdbc:postgresql://{host}:{port}/{quote(db['NAME'], safe='')}",
        user=db.get("USER") or "",
        password=db.get("PASSWORD") or "",
        tables={
            "market": Market._meta.db_table,
            "offer": Offer._meta.db_table,
            "bid": Bid._meta.db_table,
            "trade": Trade._meta.db_table,
            "best_offer_change": BestOfferChange._meta.db_table,
        },
    )


def market_days_refresh(*, day: dt.date) -> list[MarketDay]:
    """Compute the day's figures with Spark and replace the day's rows with them.

    Idempotent: the day's rows are deleted and written again in one transaction, under a
    lock per day, so a rerun (or two runs at once) leaves exactly one row per market.
    The result is small (one row per market), so it comes back to the driver and is
    written through the ORM rather than by Spark's JDBC writer, which cannot delete the
    day's old rows in the same transaction.
    """
    spark = spark_session(settings.SPARK_MASTER, app_name="intersect-analytics")
    metrics = market_day_metrics(spark, source=jdbc_source(), day=day)
    computed_at = timezone.now()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [ANALYTICS_LOCK, day.toordinal()]
            )
        # A market deleted since Spark read the rows has no row to describe.
        live = set(
            Market.objects.filter(id__in=[m["market_id"] for m in metrics]).values_list(
                "id", flat=True
            )
        )
        MarketDay.objects.filter(day=day).delete()
        return MarketDay.objects.bulk_create(
            MarketDay(day=day, computed_at=computed_at, **m)
            for m in metrics
            if m["market_id"] in live
        )
