from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerView

from . import events, imports, views
from .schema_view import SchemaView
from .subscriptions import (
    SubscriptionBacktest,
    SubscriptionCheck,
    SubscriptionDetail,
    SubscriptionList,
    SubscriptionNotifications,
    SubscriptionPause,
    SubscriptionResume,
    WebhookSecretView,
)

app_name = "api"

# The routes below one market, order or subscription; each is included under its prefix.
_market = [
    path("", views.MarketDetail.as_view(), name="market"),
    path("check/", views.MarketCheck.as_view(), name="market-check"),
    path("import/", imports.MarketImport.as_view(), name="market-import"),
]
_offer = [
    path("", views.OrderDetail.as_view(kind="offer"), name="offer"),
    path("withdraw/", views.OrderWithdraw.as_view(kind="offer"), name="offer-withdraw"),
    path("cancel/", views.OfferCancel.as_view(), name="offer-cancel"),
    path("close/", views.OfferClose.as_view(), name="offer-close"),
]
_bid = [
    path("", views.OrderDetail.as_view(kind="bid"), name="bid"),
    path("withdraw/", views.OrderWithdraw.as_view(kind="bid"), name="bid-withdraw"),
]
_subscription = [
    path("", SubscriptionDetail.as_view(), name="subscription"),
    path("pause/", SubscriptionPause.as_view(), name="subscription-pause"),
    path("resume/", SubscriptionResume.as_view(), name="subscription-resume"),
    path("notifications/", SubscriptionNotifications.as_view(), name="subscription-notifications"),
]
urlpatterns = [
    path("auth/token/", views.TokenView.as_view(), name="token"),
    path("markets/", views.MarketList.as_view(), name="markets"),
    path("markets/<str:subject>/", include(_market)),
    path("offers/", views.OfferList.as_view(), name="offers"),
    path("offers/<str:offer_id>/", include(_offer)),
    path("bids/", views.BidList.as_view(), name="bids"),
    path("bids/<str:bid_id>/", include(_bid)),
    path("best-offers/", views.BestOfferList.as_view(), name="best-offers"),
    path("trades/", views.TradeList.as_view(), name="trades"),
    path("notifications/", views.NotificationList.as_view(), name="notifications"),
    path("presence/", views.PresenceView.as_view(), name="presence"),
    path("events/", events.EventList.as_view(), name="events"),
    path("events/types/", events.EventTypes.as_view(), name="event-types"),
    path("subscriptions/", SubscriptionList.as_view(), name="subscriptions"),
    path("subscriptions/test/", SubscriptionBacktest.as_view(), name="subscription-backtest"),
    path("subscriptions/check/", SubscriptionCheck.as_view(), name="subscription-check"),
    path("subscriptions/<str:subscription_id>/", include(_subscription)),
    path("webhook-secret/", WebhookSecretView.as_view(), name="webhook-secret"),
    path("schema/", SchemaView.as_view(api_version="v1"), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]
