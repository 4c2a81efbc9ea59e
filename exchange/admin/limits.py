"""Buyers' spending limits in the staff console (issue 39): staff set one per buyer; a buyer
without one has the default (the setting ``SPENDING_LIMIT_DEFAULT``)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest

from exchange.models import SpendingLimit
from exchange.numbers import grouped_text, money_text
from exchange.selectors.limits import buyer_committed
from exchange.services.limits import spending_limit_set


class SpendingLimitForm(forms.ModelForm):
    class Meta:
        model = SpendingLimit
        fields = ["user", "amount"]
        help_texts = {
            "amount": "What this buyer's active bids may cost together, in the markets' "
            "currency. Without a row here a buyer has the default.",
        }


@admin.register(SpendingLimit)
class SpendingLimitAdmin(admin.ModelAdmin):
    form = SpendingLimitForm
    list_display = ["user", "amount_shown", "committed", "updated_at"]
    search_fields = ["user__username"]
    raw_id_fields = ["user"]
    list_select_related = ["user"]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> Any:
        default = grouped_text(money_text(settings.SPENDING_LIMIT_DEFAULT))
        extra = {**(extra_context or {}), "subtitle": f"Default for everyone else: {default}"}
        return super().changelist_view(request, extra_context=extra)

    @admin.display(description="limit", ordering="amount")
    def amount_shown(self, row: SpendingLimit) -> str:
        return grouped_text(money_text(row.amount))

    @admin.display(description="committed by active bids")
    def committed(self, row: SpendingLimit) -> str:
        return grouped_text(money_text(buyer_committed(buyer_id=row.user_id)))

    def save_model(self, request: HttpRequest, obj: SpendingLimit, form: Any, change: bool) -> None:
        staff = request.user
        assert staff.is_authenticated  # the admin site lets only staff in
        obj.pk = spending_limit_set(staff=staff, user=obj.user, amount=obj.amount).pk
