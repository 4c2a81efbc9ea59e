"""The Spark job behind ``spark_analytics``: per market, the figures of one UTC day.

No Django here: the job gets a SparkSession, where PostgreSQL is (``JdbcSource``) and the
day, reads the rows it needs over JDBC (the PostgreSQL driver jar on ``spark.jars``), and
returns one small dict per market to the driver. Each read pushes its day filter down into
its query, so PostgreSQL sends only the rows of interest.

Definitions, for market M and day D (``[D 00:00, D+1 00:00)`` UTC; "by the end of D" means
before D+1 00:00):

trades, volume, notional
    the trades of M closed during D; volume is the sum of their quantities, notional the sum
    of price * quantity (trades without a quantity count as trades but add nothing).
vwap
    notional / volume; null when the volume is 0.
open, high, low, close
    the price of the first trade by (closed_at, id), the highest and lowest price, the price
    of the last trade by (closed_at, id); null without trades.
offers_posted, bids_posted
    offers and bids of M created during D (amendments are not new postings).
offers_sold, offers_unsold
    offers of M closed during D with a trade (the day's trades: one per sold offer) and
    without one. An offer's closing time is its ``updated_at``: closing is the last change
    an offer ever gets.
offers_matched, match_rate
    of the offers posted during D, those with a best-offer history row with at least one
    matching bid by the end of D; the rate is offers_matched / offers_posted, null when no
    offer was posted. Counting only up to the end of D makes a rerun give the same figures.
first_match_median_seconds
    over the matched offers, the median of the seconds from the offer's creation to its
    first history row with a matching bid (the mean of the middle two for an even count).
best_value_offers, best_value_high, best_value_low, best_value_spread
    a snapshot at the end of D: the offers of M open at that moment whose latest best-offer
    history row before it has a best bid; their number, the highest and lowest of those
    best values, and high - low (null when no offer had a best bid). An offer is open at
    the end of D when it was created before then and is still open, or left its open state
    (closed, withdrawn, cancelled: all final) after then.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

JDBC_DRIVER = "org.postgresql.Driver"
PRICE_PLACES = Decimal("0.0000000001")  # the exchange's decimal places for prices


@dataclass(frozen=True)
class JdbcSource:
    """Where the exchange's tables are, as Spark's JDBC reader needs it."""

    url: str  # jdbc:postgresql://host:port/database
    user: str
    password: str = field(repr=False)
    # Logical name (market, offer, bid, trade, best_offer_change) -> table name.
    tables: Mapping[str, str] = field(default_factory=dict)

    def table(self, name: str) -> str:
        return '"' + self.tables[name].replace('"', '""') + '"'


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """The UTC day as ``[start, end)``."""
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return start, start + dt.timedelta(days=1)


def _ts(value: dt.datetime) -> str:
    return f"TIMESTAMPTZ '{value.isoformat()}'"


def jdbc_read(spark: SparkSession, source: JdbcSource, query: str) -> DataFrame:
    """The rows of ``query`` on the exchange's database, read over JDBC."""
    return (
        spark.read.format("jdbc")
        .option("url", source.url)
        .option("driver", JDBC_DRIVER)
        .option("user", source.user)
        .option("password", source.password)
        .option("query", query)
        .load()
    )


def read_day(spark: SparkSession, source: JdbcSource, day: dt.date) -> dict[str, DataFrame]:
    """The rows the day's figures need, one DataFrame per source table."""
    start, end = (_ts(t) for t in day_bounds(day))
    market, offer, bid = source.table("market"), source.table("offer"), source.table("bid")
    trade, change = source.table("trade"), source.table("best_offer_change")
    in_day = "{column} >= " + start + " AND {column} < " + end
    return {
        "markets": jdbc_read(
            spark, source, f"SELECT id AS market_id FROM {market} WHERE created_at < {end}"
        ),
        "trades": jdbc_read(
            spark,
            source,
            f"SELECT id, market_id, price, quantity, closed_at FROM {trade}"
            f" WHERE {in_day.format(column='closed_at')}",
        ),
        # Offers posted during the day, and offers closed during it (with whether they sold).
        "offers": jdbc_read(
            spark,
            source,
            f"SELECT o.id, o.market_id, o.state, o.created_at, o.updated_at,"
            f" EXISTS (SELECT 1 FROM {trade} t WHERE t.offer_id = o.id) AS has_trade"
            f" FROM {offer} o WHERE ({in_day.format(column='o.created_at')})"
            f" OR (o.state = 'closed' AND {in_day.format(column='o.updated_at')})",
        ),
        "bids": jdbc_read(
            spark,
            source,
            f"SELECT id, market_id FROM {bid} WHERE {in_day.format(column='created_at')}",
        ),
        # Best-offer history up to the end of the day, of the offers that may still have
        # been open during it (an offer that left its open state before the day began has
        # no part in the day's figures).
        "changes": jdbc_read(
            spark,
            source,
            f"SELECT c.id, c.offer_id, c.matching_bids, c.value, c.at, o.market_id,"
            f" o.state, o.created_at AS offer_created_at, o.updated_at AS offer_updated_at"
            f" FROM {change} c JOIN {offer} o ON o.id = c.offer_id"
            f" WHERE c.at < {end} AND o.created_at < {end}"
            f" AND (o.state = 'open' OR o.updated_at >= {start})",
        ),
    }


def compute(frames: Mapping[str, DataFrame], day: dt.date) -> DataFrame:
    """One row per market with the raw aggregates (see the module doc for their meaning)."""
    # pyspark only when a job runs: it takes a quarter of a second to import, and the web
    # and worker processes that import this module for its types never need it.
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    start, end = day_bounds(day)
    start_lit, end_lit = F.lit(start), F.lit(end)  # aware: the instants, whatever the zone

    def during(column: str) -> Any:
        return (F.col(column) >= start_lit) & (F.col(column) < end_lit)

    trades = (
        frames["trades"]
        .groupBy("market_id")
        .agg(
            F.count(F.lit(1)).alias("trades"),
            F.sum("quantity").alias("volume"),
            F.sum(F.col("price") * F.col("quantity")).alias("notional"),
            F.max("price").alias("high"),
            F.min("price").alias("low"),
            F.min_by("price", F.struct("closed_at", "id")).alias("open"),
            F.max_by("price", F.struct("closed_at", "id")).alias("close"),
        )
    )

    offers = frames["offers"]
    posted = offers.where(during("created_at"))
    unsold = offers.where((F.col("state") == "closed") & during("updated_at") & ~F.col("has_trade"))
    offer_counts = (
        posted.groupBy("market_id")
        .agg(F.count(F.lit(1)).alias("offers_posted"))
        .join(
            unsold.groupBy("market_id").agg(F.count(F.lit(1)).alias("offers_unsold")),
            "market_id",
            "full",
        )
    )
    bids = frames["bids"].groupBy("market_id").agg(F.count(F.lit(1)).alias("bids_posted"))

    changes = frames["changes"]
    first_match = (
        changes.where(F.col("matching_bids") > 0)
        .groupBy("offer_id")
        .agg(F.min("at").alias("first_at"))
    )
    matched = (
        posted.select(F.col("id").alias("offer_id"), "market_id", "created_at")
        .join(first_match, "offer_id")
        .select(
            "market_id",
            ((F.unix_micros("first_at") - F.unix_micros("created_at")) / F.lit(1_000_000.0)).alias(
                "seconds"
            ),
        )
        .groupBy("market_id")
        .agg(
            F.count(F.lit(1)).alias("offers_matched"),
            F.expr("percentile(seconds, 0.5)").alias("first_match_median_seconds"),
        )
    )

    latest = Window.partitionBy("offer_id").orderBy(F.col("at").desc(), F.col("id").desc())
    open_at_end = (F.col("state") == "open") | (F.col("offer_updated_at") >= end_lit)
    snapshot = (
        changes.where(open_at_end)
        .withColumn("rank", F.row_number().over(latest))
        .where((F.col("rank") == 1) & (F.col("matching_bids") > 0))
        .groupBy("market_id")
        .agg(
            F.count(F.lit(1)).alias("best_value_offers"),
            F.max("value").alias("best_value_high"),
            F.min("value").alias("best_value_low"),
        )
    )

    result = frames["markets"]
    for part in (trades, offer_counts, bids, matched, snapshot):
        result = result.join(part, "market_id", "left")
    return result


def _ratio(numerator: Decimal, denominator: Decimal) -> Decimal:
    """``numerator / denominator`` to the exchange's 10 places, half-even, at any size."""
    with localcontext() as context:
        context.prec = 100  # beyond numeric(38, 10) sums: the quotient is rounded once
        return (numerator / denominator).quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN)


def finish(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``MarketDay`` fields of one market from its raw aggregates."""
    trades = row["trades"] or 0
    volume = row["volume"] if row["volume"] is not None else Decimal(0)
    notional = row["notional"] if row["notional"] is not None else Decimal(0)
    posted = row["offers_posted"] or 0
    matched = row["offers_matched"] or 0
    high, low = row["best_value_high"], row["best_value_low"]
    return {
        "market_id": row["market_id"],
        "trades": trades,
        "volume": volume,
        "notional": notional,
        "vwap": _ratio(notional, volume) if volume else None,
        "open": row["open"],
        "high": row["high"],
        "low": row["low"],
        "close": row["close"],
        "offers_posted": posted,
        "offers_sold": trades,
        "offers_unsold": row["offers_unsold"] or 0,
        "bids_posted": row["bids_posted"] or 0,
        "offers_matched": matched,
        "match_rate": matched / posted if posted else None,
        "first_match_median_seconds": row["first_match_median_seconds"],
        "best_value_offers": row["best_value_offers"] or 0,
        "best_value_high": high,
        "best_value_low": low,
        "best_value_spread": None if high is None else high - low,
    }


def market_day_metrics(
    spark: SparkSession, *, source: JdbcSource, day: dt.date
) -> list[dict[str, Any]]:
    """The day's figures of every market that existed by the end of the day."""
    rows = compute(read_day(spark, source, day), day).collect()
    return sorted((finish(row.asDict()) for row in rows), key=lambda r: r["market_id"])
