from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.template.response import TemplateResponse

from exchange.errors import ExchangeError
from exchange.market_rules import price_text
from exchange.models import Bid, Offer
from exchange.services.closing import offer_close, offer_close_preview
from exchange.services.orders import offer_cancel


class ReadOnlyOrderAdmin(admin.ModelAdmin):
    """Orders change only through their owners' services; staff act through the actions."""

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]


@admin.register(Offer)
class OfferAdmin(ReadOnlyOrderAdmin):
    list_display = [
        "id",
        "market",
        "seller",
        "state",
        "best_value",
        "matching_bids",
        "closes_at",
        "set_aside_at",
        "created_at",
    ]
    list_filter = [
        "state",
        "market",
        ("closes_at", admin.DateFieldListFilter),
        ("set_aside_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["id", "constraint_text", "seller__username", "market__subject"]
    list_select_related = ["market", "seller", "best"]
    date_hierarchy = "created_at"
    actions = ["close_auctions", "cancel_offers"]

    @admin.display(description="best value")
    def best_value(self, offer):
        best = getattr(offer, "best", None)
        return price_text(best.value, offer.market.tick) if best and best.value is not None else "—"

    @admin.display(description="matching bids")
    def matching_bids(self, offer):
        best = getattr(offer, "best", None)
        return best.matching_bids if best else 0

    @admin.action(description="Close the selected auctions…")
    def close_auctions(self, request, queryset):
        offers = list(
            queryset.filter(state=Offer.State.OPEN).select_related("market").order_by("pk")
        )
        if request.POST.get("confirm") == "yes":
            closed = sold = 0
            for offer in offers:
                try:
                    result = offer_close(offer_id=offer.pk, staff=request.user)
                except ExchangeError as exc:
                    self.message_user(request, f"Offer {offer.pk}: {exc.message}", messages.ERROR)
                    continue
                closed += 1
                sold += result.trade is not None
            self.message_user(
                request, f"Closed {closed} auction(s): {sold} sold, {closed - sold} unsold."
            )
            return None
        previews = [offer_close_preview(offer_id=o.pk) for o in offers]
        return TemplateResponse(
            request,
            "admin/exchange/close_confirmation.html",
            {
                **self.admin_site.each_context(request),
                "title": "Close auctions",
                "previews": [
                    {
                        "offer": p.offer,
                        "bid": p.bid,
                        "buyer": p.bid.buyer if p.bid else None,
                        "value": p.value_text,
                        "price": p.price_text,
                        "quantity": p.quantity,
                        "agreed": p.agreed_constraint,
                    }
                    for p in previews
                ],
                "skipped": queryset.exclude(state=Offer.State.OPEN).count(),
                "queryset": queryset,
                "action": "close_auctions",
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )

    @admin.action(description="Cancel the selected offers")
    def cancel_offers(self, request, queryset):
        done = 0
        for offer in queryset.filter(state=Offer.State.OPEN).order_by("pk"):
            try:
                offer_cancel(staff=request.user, offer_id=offer.pk)
                done += 1
            except ExchangeError as exc:
                self.message_user(request, f"Offer {offer.pk}: {exc.message}", messages.ERROR)
        self.message_user(request, f"Cancelled {done} offer(s).")


@admin.register(Bid)
class BidAdmin(ReadOnlyOrderAdmin):
    list_display = [
        "id",
        "market",
        "buyer",
        "state",
        "version",
        "priority_at",
        "set_aside_at",
        "created_at",
    ]
    list_filter = ["state", "market", ("set_aside_at", admin.EmptyFieldListFilter)]
    search_fields = ["id", "constraint_text", "buyer__username", "market__subject"]
    list_select_related = ["market", "buyer"]
    date_hierarchy = "created_at"
