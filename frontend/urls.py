from django.urls import path

from .views import accounts, alerts, amend, award, guide, markets, orders, shortcuts

app_name = "frontend"
urlpatterns = [
    path("", markets.home, name="home"),
    path("register/", accounts.register, name="register"),
    path("docs/api/", guide.api_guide, name="api-guide"),
    path("login/", accounts.LoginView.as_view(), name="login"),
    path("logout/", accounts.LogoutView.as_view(), name="logout"),
    path("account/", accounts.account, name="account"),
    path("account/token/", accounts.token_create, name="token-create"),
    path("account/token/revoke/", accounts.token_delete, name="token-revoke"),
    path("alerts/", alerts.alerts, name="alerts"),
    path("alerts/check/", alerts.alerts_check, name="alerts-check"),
    path("alerts/backtest/", alerts.alerts_backtest, name="alerts-backtest"),
    path("alerts/<str:subscription_id>/notes/", alerts.alert_notes, name="alert-notes"),
    path("alerts/<str:subscription_id>/webhook/", alerts.alert_webhook, name="alert-webhook"),
    path("alerts/webhook-secret/", alerts.alerts_webhook_secret, name="alerts-webhook-secret"),
    path("markets/<str:subject>/", markets.market_detail, name="market"),
    path("markets/<str:subject>/post/", markets.market_post, name="market-post"),
    path("markets/<str:subject>/check/", markets.market_check, name="market-check"),
    path("markets/<str:subject>/preview/", markets.market_preview, name="market-preview"),
    path("markets/<str:subject>/award/", award.market_award, name="market-award"),
    path("markets/<str:subject>/alert/", shortcuts.market_alert, name="market-alert"),
    path("offers/<str:offer_id>/", orders.offer_detail, name="offer"),
    path("offers/<str:offer_id>/alert/", shortcuts.offer_alert, name="offer-alert"),
    path("offers/<str:offer_id>/withdraw/", orders.offer_withdraw_view, name="offer-withdraw"),
    path("bids/<str:bid_id>/", orders.bid_detail, name="bid"),
    path("bids/<str:bid_id>/withdraw/", orders.bid_withdraw_view, name="bid-withdraw"),
    path("offers/<str:order_id>/edit/", amend.order_edit, {"kind": "offer"}, name="offer-edit"),
    path("bids/<str:order_id>/edit/", amend.order_edit, {"kind": "bid"}, name="bid-edit"),
    path("bids/<str:bid_id>/raise/", amend.bid_raise, name="bid-raise"),
    path(
        "markets/<str:subject>/bids/withdraw/",
        amend.market_bids_withdraw,
        name="market-bids-withdraw",
    ),
    # One alert's actions (pause, resume, ...): one view, told which by the route.
    *(
        path(
            f"alerts/<str:subscription_id>/{action}/",
            alerts.alert_action,
            {"action": action},
            name=f"alert-{action}",
        )
        for action in alerts.ACTIONS
    ),
]
