from django.shortcuts import render

from exchange.selectors.markets import market_list


def home(request):
    return render(request, "frontend/home.html", {"markets": market_list()})
