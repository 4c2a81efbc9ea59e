"""``spark_analytics``: the figures of a hand-made day, computed by hand, and reruns.

The day's rows are written straight through the ORM with controlled timestamps and
committed (``transactional_db``), since Spark reads them over JDBC on its own connection.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exchange.analytics.tasks import spark_analytics
from exchange.models import BestOfferChange, Bid, Market, MarketDay, Offer, Trade
from tests.factories import UserFactory, pencils_market
from tests.spark.market_days import QUIET

UTC = dt.UTC
DAY = dt.date(2026, 3, 10)


def at(day_offset: int, hh: int, mm: int = 0, ss: int = 0) -> dt.datetime:
    """A time on DAY (+ ``day_offset`` days), UTC."""
    return dt.datetime.combine(DAY + dt.timedelta(days=day_offset), dt.time(hh, mm, ss), tzinfo=UTC)


class Day:
    """Builds rows with chosen timestamps (``auto_now`` fields are overwritten after saving)."""

    def __init__(self) -> None:
        self.seller = UserFactory()
        self.buyer = UserFactory()

    def market(self, subject: str, created: dt.datetime) -> Market:
        market = pencils_market(subject=subject)
        Market.objects.filter(pk=market.pk).update(created_at=created)
        return market

    def offer(
        self,
        market: Market,
        created: dt.datetime,
        *,
        state: str = "open",
        updated: dt.datetime | None = None,
        history: Sequence[tuple[dt.datetime, int, str | None]] = (),
    ) -> Offer:
        offer = Offer.objects.create(
            market=market,
            seller=self.seller,
            constraint_text="lot = 1000 AND price >= 0.50",
            constraint_json={},
            state=state,
        )
        Offer.objects.filter(pk=offer.pk).update(created_at=created, updated_at=updated or created)
        for when, matching_bids, value in history:
            BestOfferChange.objects.create(
                offer=offer,
                matching_bids=matching_bids,
                value=None if value is None else Decimal(value),
                at=when,
            )
        return offer

    def bid(self, market: Market, created: dt.datetime, *, state: str = "active") -> Bid:
        bid = Bid.objects.create(
            market=market,
            buyer=self.buyer,
            constraint_text="price <= 2.00",
            constraint_json={},
            state=state,
        )
        Bid.objects.filter(pk=bid.pk).update(created_at=created, updated_at=created)
        return bid

    def trade(
        self, offer: Offer, bid: Bid, price: str, quantity: str | None, closed: dt.datetime
    ) -> Trade:
        return Trade.objects.create(
            offer=offer,
            bid=bid,
            market=offer.market,
            seller=self.seller,
            buyer=self.buyer,
            price=Decimal(price),
            quantity=None if quantity is None else Decimal(quantity),
            pricing="first",
            agreed_constraint="price = " + price,
            agreed_constraint_json={},
            closed_at=closed,
        )


def build_day() -> dict[str, Any]:
    d = Day()
    pencils = d.market("office.supplies.pencils", at(-30, 8))
    erasers = d.market("office.supplies.erasers", at(-30, 8))
    d.market("office.supplies.rulers", at(1, 8))  # created after the day: no row

    # Offers posted during the day. Seconds from creation to the first matching bid:
    # o1 10, o2 30, o3 60, o9 20; o4 never matched; o5 only after the day ended.
    o1 = d.offer(
        pencils,
        at(0, 9),
        state="closed",
        updated=at(0, 12),
        history=[(at(0, 9, 0, 10), 1, "1.05"), (at(0, 12), 0, None)],
    )
    d.offer(pencils, at(0, 10), history=[(at(0, 10, 0, 30), 1, "1.00"), (at(0, 11), 2, "1.20")])
    o3 = d.offer(
        pencils,
        at(0, 11),
        state="closed",
        updated=at(0, 15),
        history=[(at(0, 11, 1), 1, "0.95"), (at(0, 15), 0, None)],
    )
    # o4: closed unsold
    d.offer(pencils, at(0, 13), state="closed", updated=at(0, 20))
    # o5
    d.offer(pencils, at(0, 23, 59), history=[(at(1, 0, 0, 30), 1, "1.40")])
    # o9: withdrawn during the day
    d.offer(
        pencils,
        at(0, 14),
        state="withdrawn",
        updated=at(0, 16),
        history=[(at(0, 14, 0, 20), 1, "1.50"), (at(0, 16, 0, 1), 0, None)],
    )

    # Offers from before the day.
    # o6: open; two history rows at one instant, the later id is the latest
    d.offer(pencils, at(-1, 9), history=[(at(-1, 10), 1, "0.80"), (at(-1, 10), 1, "0.90")])
    # o7: closed before the day began
    d.offer(
        pencils,
        at(-2, 9),
        state="closed",
        updated=at(-1, 12),
        history=[(at(-2, 10), 1, "3.00"), (at(-1, 12), 0, None)],
    )
    # o8: withdrawn after the day, so open at its end
    d.offer(
        pencils,
        at(-1, 9),
        state="withdrawn",
        updated=at(1, 5),
        history=[(at(-1, 9, 30), 1, "1.10"), (at(1, 5, 0, 1), 0, None)],
    )
    # o10, o11, o12: sold during the day, the day before and the day after
    o10 = d.offer(
        pencils,
        at(-1, 8),
        state="closed",
        updated=at(0, 15),
        history=[(at(-1, 8, 5), 1, "1.10"), (at(0, 15), 0, None)],
    )
    o11 = d.offer(pencils, at(-2, 8), state="closed", updated=at(-1, 18))
    o12 = d.offer(pencils, at(-1, 8), state="closed", updated=at(1, 0))

    # Bids: three posted during the day.
    b1, b2 = d.bid(pencils, at(0, 8), state="filled"), d.bid(pencils, at(0, 9, 30), state="filled")
    d.bid(pencils, at(0, 18))
    b3 = d.bid(pencils, at(-1, 10), state="filled")
    b0 = d.bid(pencils, at(-2, 10), state="filled")
    b4 = d.bid(pencils, at(1, 0), state="filled")  # on the next day at 00:00

    # Trades: three during the day; the last two at one instant (then by id).
    d.trade(o11, b0, "7.00", "9", at(-1, 18))
    d.trade(o1, b1, "1.05", "1000", at(0, 12))
    d.trade(o3, b2, "0.95", "3000", at(0, 15))
    d.trade(o10, b3, "1.10", "500", at(0, 15))
    d.trade(o12, b4, "9.00", "1", at(1, 0))
    return {"pencils": pencils, "erasers": erasers, "d": d}


PENCILS = {
    "trades": 3,
    "volume": Decimal("4500"),  # 1000 + 3000 + 500
    "notional": Decimal("4450"),  # 1050 + 2850 + 550
    "vwap": Decimal("0.9888888889"),  # 4450 / 4500, to 10 places
    "open": Decimal("1.05"),
    "high": Decimal("1.10"),
    "low": Decimal("0.95"),
    "close": Decimal("1.10"),  # 15:00 twice: the higher trade id closes
    "offers_posted": 6,  # o1 o2 o3 o4 o5 o9
    "offers_sold": 3,
    "offers_unsold": 1,  # o4
    "bids_posted": 3,
    "offers_matched": 4,  # o1 o2 o3 o9
    "match_rate": 4 / 6,
    "first_match_median_seconds": 25.0,  # of 10, 20, 30, 60
    "best_value_offers": 3,  # o2 1.20, o6 0.90, o8 1.10 at the end of the day
    "best_value_high": Decimal("1.20"),
    "best_value_low": Decimal("0.90"),
    "best_value_spread": Decimal("0.30"),
}


def figures(row: MarketDay) -> dict[str, Any]:
    return {name: getattr(row, name) for name in PENCILS}


def day_rows() -> dict[str, MarketDay]:
    return {r.market.subject: r for r in MarketDay.objects.filter(day=DAY).select_related("market")}


@pytest.mark.usefixtures("spark")
def test_a_hand_made_day_and_its_rerun(transactional_db: Any) -> None:
    # Given a day of trades, offers, bids and best-offer history in two markets, and a
    # row of another day that must stay as it is
    built = build_day()
    other_day = MarketDay.objects.create(
        market=built["erasers"], day=DAY - dt.timedelta(days=1), computed_at=at(0, 1), **QUIET
    )

    # When the analytics run for the day
    out = io.StringIO()
    call_command("spark_analytics", "--date", DAY.isoformat(), stdout=out)

    # Then each market that existed has one row with the figures computed by hand
    assert out.getvalue() == "2026-03-10: 2 market(s), 3 trade(s)\n"
    rows = day_rows()
    assert set(rows) == {"office.supplies.pencils", "office.supplies.erasers"}
    assert figures(rows["office.supplies.pencils"]) == PENCILS
    assert figures(rows["office.supplies.erasers"]) == QUIET
    first_ids = {r.pk for r in rows.values()}

    # When the day changes (a trade in the quiet market) and the nightly task runs it again
    d = built["d"]
    offer = d.offer(built["erasers"], at(0, 9), state="closed", updated=at(0, 10))
    d.trade(offer, d.bid(built["erasers"], at(0, 9, 30), state="filled"), "2.00", None, at(0, 10))

    assert spark_analytics.run(DAY.isoformat()) == 2

    # Then the day's rows are replaced, not added to, and other days are untouched
    rows = day_rows()
    assert len(rows) == 2 and MarketDay.objects.count() == 3
    assert not first_ids & {r.pk for r in rows.values()}
    assert figures(rows["office.supplies.pencils"]) == PENCILS
    assert figures(rows["office.supplies.erasers"]) == {
        **QUIET,
        # a trade without a quantity: counted, priced, but no volume and so no VWAP
        "trades": 1,
        "open": Decimal("2.00"),
        "high": Decimal("2.00"),
        "low": Decimal("2.00"),
        "close": Decimal("2.00"),
        "offers_posted": 1,
        "offers_sold": 1,
        "bids_posted": 1,
        "offers_matched": 0,
        "match_rate": 0.0,
    }
    assert MarketDay.objects.get(pk=other_day.pk).computed_at == at(0, 1)


def test_a_bad_date_is_refused_before_spark_starts(db: Any) -> None:
    with pytest.raises(CommandError, match="--date takes a date such as 2026-11-20"):
        call_command("spark_analytics", "--date", "10/03/2026")
