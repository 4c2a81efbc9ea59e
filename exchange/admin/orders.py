from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from exchange.errors import ExchangeError
from exchange.models import Bid, Offer
from exchange.numbers import counted
from exchange.selectors.ui.staff import market_numbers
from exchange.services.closing import offer_close, offer_close_previews
from exchange.services.orders import offer_cancel

T = TypeVar("T")


@dataclass(frozen=True)
class Confirmation:
    """The words of an offer action's confirmation page."""

    title: str
    intro: str
    verb: str
    noun: str


_CONFIRMATIONS = {
    "close_auctions": Confirmation(
        title="Close auctions",
        intro=(
            "Closing is final. Each auction below closes into a trade with its best bid at the "
            "moment of closing (pending changes are taken in first), or unsold when no bid "
            "matches."
        ),
        verb="close",
        noun="auction",
    ),
    "cancel_offers": Confirmation(
        title="Cancel offers",
        intro=(
            "Cancelling is final. Each offer below ends without a trade, whatever its best bid; "
            "its bids stay active for other offers."
        ),
        verb="cancel",
        noun="offer",
    ),
}


def _confirmed_first(action: Callable[[OfferAdmin, HttpRequest, QuerySet[Offer]], None]):
    """An offer action that first answers with its confirmation page (``_confirm``: the open
    offers, each with its winner-to-be) and runs only when that page posts it again with
    ``confirm=yes``. The page names the action by the method's name."""

    @functools.wraps(action)
    def confirmed(
        admin_: OfferAdmin, request: HttpRequest, queryset: QuerySet[Offer]
    ) -> TemplateResponse | None:
        if request.POST.get("confirm") != "yes":
            return admin_._confirm(request, queryset, action=action.__name__)
        action(admin_, request, queryset)
        return None

    return confirmed


class ReadOnlyOrderAdmin(admin.ModelAdmin):
    """Orders change only through their owners' services; staff act through the actions.
    Every field is read-only, so the change page offers no Save buttons either."""

    def has_add_permission(self, request):
        return False

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        no_saving = {
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
        }
        return super().changeform_view(
            request, object_id, form_url, {**(extra_context or {}), **no_saving}
        )

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

    change_form_template = "admin/exchange/offer/change_form.html"

    @admin.display(description="best value")
    def best_value(self, offer):
        best = getattr(offer, "best", None)
        value = best.value if best else None
        return market_numbers(market=offer.market).price(value)

    @admin.display(description="matching bids")
    def matching_bids(self, offer):
        best = getattr(offer, "best", None)
        return best.matching_bids if best else 0

    def _confirm(self, request, queryset, *, action: str):
        """The confirmation page of ``action`` over the open offers of ``queryset``: each
        with its winner-to-be, numbers as its market writes them. Its form posts the same
        action again with ``confirm=yes``."""
        offers = list(
            queryset.filter(state=Offer.State.OPEN).select_related("market").order_by("pk")
        )
        rows = []
        for preview in offer_close_previews(offers=offers):
            numbers = market_numbers(market=preview.offer.market)
            rows.append(
                {
                    "offer": preview.offer,
                    "bid": preview.bid,
                    "buyer": preview.bid.buyer if preview.bid else None,
                    "value": numbers.price(preview.value),
                    "price": numbers.price(preview.price),
                    "quantity": numbers.quantity(preview.quantity),
                    "agreed": preview.agreed_constraint,
                    "unusable": preview.unusable,
                    "over_limit": preview.over_limit,
                }
            )
        words = _CONFIRMATIONS[action]
        return TemplateResponse(
            request,
            "admin/exchange/close_confirmation.html",
            {
                **self.admin_site.each_context(request),
                "title": words.title,
                "intro": words.intro,
                "verb": words.verb,
                "confirm_label": f"Yes, {words.verb} {counted(len(rows), words.noun)}",
                "previews": rows,
                "skipped": queryset.exclude(state=Offer.State.OPEN).count(),
                "queryset": queryset,
                "action": action,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )

    def _each_open(self, request, queryset, act: Callable[[int], T]) -> list[T]:
        """``act`` on each open offer of ``queryset`` by id, in id order; a refusal is
        reported against its offer and the others go on. The results of those it did."""
        done = []
        for offer_id in (
            queryset.filter(state=Offer.State.OPEN).order_by("pk").values_list("pk", flat=True)
        ):
            try:
                done.append(act(offer_id))
            except ExchangeError as exc:
                self.message_user(request, f"Offer {offer_id}: {exc.message}", messages.ERROR)
        return done

    @admin.action(description="Close the selected auctions…")
    @_confirmed_first
    def close_auctions(self, request, queryset):
        results = self._each_open(
            request, queryset, lambda pk: offer_close(offer_id=pk, staff=request.user)
        )
        sold = sum(result.trade is not None for result in results)
        self.message_user(
            request,
            f"Closed {counted(len(results), 'auction')}: {sold} sold, {len(results) - sold} unsold.",
        )

    @admin.action(description="Cancel the selected offers…")
    @_confirmed_first
    def cancel_offers(self, request, queryset):
        done = self._each_open(
            request, queryset, lambda pk: offer_cancel(staff=request.user, offer_id=pk)
        )
        self.message_user(request, f"Cancelled {counted(len(done), 'offer')}.")


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
