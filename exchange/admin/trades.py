from __future__ import annotations

from django.contrib import admin

from exchange.admin.readonly import RecordAdmin, ViewOnlyAdmin
from exchange.models import MatchingCycle, Notification, Trade
from exchange.selectors.ui.staff import market_numbers

# What the trade list and a trade's page both show, in this order.
_TRADE_COLUMNS = (
    "market",
    "offer",
    "bid",
    "seller",
    "buyer",
    "price_shown",
    "quantity_shown",
    "pricing",
)


@admin.register(Trade)
class TradeAdmin(RecordAdmin):
    """Trades are read-only; their price and quantity are written as the market writes them
    (``1.18 EUR``, ``8000 pencils``), not as stored (``1.1800000000``)."""

    list_display = ("id", *_TRADE_COLUMNS, "closed_at")
    list_filter = ["market", "pricing", ("closed_at", admin.DateFieldListFilter)]
    search_fields = ["id", "seller__username", "buyer__username", "agreed_constraint"]
    list_select_related = ["market", "seller", "buyer"]
    date_hierarchy = "closed_at"
    fields = readonly_fields = (
        *_TRADE_COLUMNS,
        "agreed_constraint",
        "agreed_constraint_json",
        "closed_at",
    )

    @admin.display(description="price", ordering="price")
    def price_shown(self, trade: Trade) -> str:
        return market_numbers(market=trade.market).price(trade.price)

    @admin.display(description="quantity", ordering="quantity")
    def quantity_shown(self, trade: Trade) -> str:
        return market_numbers(market=trade.market).quantity(trade.quantity)


@admin.register(MatchingCycle)
class MatchingCycleAdmin(RecordAdmin):
    list_display = [
        "id",
        "started_at",
        "duration",
        "changes",
        "offers_touched",
        "notifications",
        "strategy",
    ]

    @admin.display(description="duration (ms)")
    def duration(self, cycle):
        return f"{cycle.duration_ms:.1f}"


@admin.register(Notification)
class NotificationAdmin(ViewOnlyAdmin):
    list_display = ["id", "type", "market", "offer", "recipient", "created_at", "delivered_at"]
    list_filter = ["type", "market", ("delivered_at", admin.EmptyFieldListFilter)]
    search_fields = ["recipient__username"]
