from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import events, imports, subscriptions, views

app_name = "api"
urlpatterns = [
    path("auth/token/", views.TokenView.as_view(), name="token"),
    path("markets/", views.MarketList.as_view(), name="markets"),
    path("markets/<str:subject>/", views.MarketDetail.as_view(), name="market"),
    path("markets/<str:subject>/check/", views.MarketCheck.as_view(), name="market-check"),
    path("markets/<str:subject>/import/", imports.MarketImport.as_view(), name="market-import"),
    path("offers/", views.OfferList.as_view(), name="offers"),
    path("offers/<str:offer_id>/", views.OfferDetail.as_view(), name="offer"),
    path("offers/<str:offer_id>/withdraw/", views.OfferWithdraw.as_view(), name="offer-withdraw"),
    path("offers/<str:offer_id>/cancel/", views.OfferCancel.as_view(), name="offer-cancel"),
    path("offers/<str:offer_id>/close/", views.OfferClose.as_view(), name="offer-close"),
    path("bids/", views.BidList.as_view(), name="bids"),
    path("bids/<str:bid_id>/", views.BidDetail.as_view(), name="bid"),
    path("bids/<str:bid_id>/withdraw/", views.BidWithdraw.as_view(), name="bid-withdraw"),
    path("best-offers/", views.BestOfferList.as_view(), name="best-offers"),
    path("trades/", views.TradeList.as_view(), name="trades"),
    path("notifications/", views.NotificationList.as_view(), name="notifications"),
    path("presence/", views.PresenceView.as_view(), name="presence"),
    path("events/", events.EventList.as_view(), name="events"),
    path("events/types/", events.EventTypes.as_view(), name="event-types"),
    path("subscriptions/", subscriptions.SubscriptionList.as_view(), name="subscriptions"),
    path(
        "subscriptions/test/",
        subscriptions.SubscriptionBacktest.as_view(),
        name="subscription-backtest",
    ),
    path(
        "subscriptions/<str:subscription_id>/",
        subscriptions.SubscriptionDetail.as_view(),
        name="subscription",
    ),
    path(
        "subscriptions/<str:subscription_id>/pause/",
        subscriptions.SubscriptionPause.as_view(),
        name="subscription-pause",
    ),
    path(
        "subscriptions/<str:subscription_id>/resume/",
        subscriptions.SubscriptionResume.as_view(),
        name="subscription-resume",
    ),
    path(
        "subscriptions/<str:subscription_id>/notifications/",
        subscriptions.SubscriptionNotifications.as_view(),
        name="subscription-notifications",
    ),
    path("schema/", SpectacularAPIView.as_view(api_version="v1"), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]
