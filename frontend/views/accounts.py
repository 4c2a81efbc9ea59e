"""Registering, logging in and out, and the "My account" page with its API token."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from exchange.notification_texts import note_text
from exchange.numbers import grouped_text, money_text
from exchange.selectors import ui
from exchange.selectors.limits import buyer_room
from exchange.selectors.markets import market_schema
from exchange.selectors.tokens import token_get
from exchange.services.tokens import token_regenerate, token_revoke
from exchange.throttling import login_throttled

from .common import (
    AuthenticatedRequest,
    is_htmx,
    live_context,
    login_required,
    offer_row,
    terms,
    trade_row,
)


def _next(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    # A path of this site only: ``redirect`` takes a bare word (``0``) for a view's name
    # and failed to reverse it (a 500)
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}
    ):
        return target
    return "/"


@login_throttled(field="username")
def register(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("frontend:account")
    form: UserCreationForm = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}. Your account is ready.")
        return redirect(_next(request))
    return render(
        request,
        "frontend/register.html",
        {"form": form, "next": _next(request), **live_context(request, [])},
        status=400 if form.errors else 200,
    )


@method_decorator(login_throttled(field="username"), name="dispatch")
class LoginView(auth_views.LoginView):
    template_name = "frontend/login.html"
    redirect_authenticated_user = True
    next_page = "frontend:home"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **live_context(self.request, [])}


class LogoutView(auth_views.LogoutView):
    next_page = "/"


@login_required
def account(request: AuthenticatedRequest, new_token: str | None = None) -> HttpResponse:
    user = request.user
    open_offers = ui.user_open_offer_ids(user=user)
    live = live_context(request, [f"offer:{pk}" for pk in open_offers])  # before the data
    offers = ui.user_offers(user=user)
    bids = ui.user_bids(user=user)
    notes = []
    for note in ui.user_notifications(user=user):
        text, tone = note_text(note.type, note.data)
        notes.append({"note": note, "text": text, "tone": tone})
    context = {
        "offers": [{**offer_row(o, request), "trade": getattr(o, "trade", None)} for o in offers],
        "bids": [
            {
                **b,
                "terms": terms(b["bid"].constraint_text, b["bid"].market),
                "next_price": (
                    ui.bid_next_price(
                        bid=b["bid"],
                        schema=market_schema(market=b["bid"].market),
                        standings=b["standings"],
                    )
                    if b["bid"].state == "active"
                    else None
                ),
            }
            for b in bids
        ],
        "exposure": ui.user_exposure(user=user),
        "room": _room(user.pk),
        "trades": [trade_row(t, request) for t in ui.user_trades(user=user)],
        "notes": notes,
        "token": token_get(user=user),
        "new_token": new_token,
        **live,
    }
    return render(request, "frontend/account.html", context)


def _room(user_id: int) -> dict[str, str]:
    """The buyer's spending limit, what its active bids commit and what is left, as read."""
    room = buyer_room(buyer_id=user_id)
    return {
        "limit": grouped_text(money_text(room.limit)),
        "committed": grouped_text(money_text(room.committed)),
        "remaining": grouped_text(money_text(room.remaining)),
    }


@require_POST
@login_required
def token_create(request: AuthenticatedRequest) -> HttpResponse:
    token = token_regenerate(user=request.user)
    if not is_htmx(request):
        messages.success(request, "A new API token is ready; the old one no longer works.")
    return account(request, new_token=token.key)


@require_POST
@login_required
def token_delete(request: AuthenticatedRequest) -> HttpResponse:
    revoked = token_revoke(user=request.user)
    if is_htmx(request):
        return account(request)
    if revoked:
        messages.success(request, "Your API token is revoked: requests with it are refused.")
    return redirect("/account/#token")
