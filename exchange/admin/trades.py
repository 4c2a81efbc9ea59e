from __future__ import annotations

from django.contrib import admin

from exchange.models import MatchingCycle, Notification, Trade


@admin.register(Trade)
class TradeAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "market",
        "offer",
        "bid",
        "seller",
        "buyer",
        "price",
        "quantity",
        "pricing",
        "closed_at",
    ]
    list_filter = ["market", "pricing", ("closed_at", admin.DateFieldListFilter)]
    search_fields = ["id", "seller__username", "buyer__username", "agreed_constraint"]
    list_select_related = ["market", "seller", "buyer"]
    date_hierarchy = "closed_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(MatchingCycle)
class MatchingCycleAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["id", "type", "market", "offer", "recipient", "created_at", "delivered_at"]
    list_filter = ["type", "market", ("delivered_at", admin.EmptyFieldListFilter)]
    search_fields = ["recipient__username"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
