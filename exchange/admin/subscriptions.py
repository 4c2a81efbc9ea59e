"""Live subscriptions in the staff console (SPEC 8.3, 8.4): read-only. A subscription is
written by its owner's API calls and the advance task only, so that its outbox and cursor
always move together."""

from __future__ import annotations

from django.contrib import admin

from exchange.admin.readonly import RecordAdmin
from exchange.models import Subscription

_COLUMNS = ("owner", "name", "kind", "state", "reason", "created_at", "now", "seam", "cursor")


@admin.register(Subscription)
class SubscriptionAdmin(RecordAdmin):
    list_display = ("id", *_COLUMNS, "last_n")
    list_filter = ["kind", "state", "reason"]
    search_fields = ["id", "owner__username", "name", "query"]
    list_select_related = ["owner"]
    fields = readonly_fields = (*_COLUMNS, "last_n", "query")
