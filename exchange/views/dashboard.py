from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render

from exchange.market_rules import price_text
from exchange.selectors.dashboard import cycle_health, offers_closing_soon
from exchange.services.closing import offer_close_preview


@staff_member_required
def dashboard(request):
    previews = []
    for offer in offers_closing_soon():
        preview = offer_close_preview(offer_id=offer.pk)
        previews.append(
            {
                "offer": offer,
                "bid": preview.bid,
                "buyer": preview.bid.buyer.get_username() if preview.bid else None,
                "value": price_text(preview.value, offer.market.tick),
                "price": price_text(preview.price, offer.market.tick),
                "quantity": preview.quantity,
            }
        )
    return render(request, "staff/dashboard.html", {"health": cycle_health(), "closing": previews})
