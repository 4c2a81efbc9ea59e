"""The staff dashboard at ``/staff/``: cycle health, orders set aside, auctions closing soon."""

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from exchange.selectors.dashboard import cycle_health, offers_closing_soon, orders_set_aside
from exchange.services.closing import offer_close_preview


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    previews = [offer_close_preview(offer_id=offer.pk) for offer in offers_closing_soon()]
    return render(
        request,
        "staff/dashboard.html",
        {"health": cycle_health(), "set_aside": orders_set_aside(), "closing": previews},
    )
