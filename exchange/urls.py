from django.contrib import admin
from django.urls import include, path

from exchange.throttling import login_throttled
from exchange.views.analytics import analytics_dashboard
from exchange.views.dashboard import dashboard
from exchange.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("staff/", dashboard, name="staff-dashboard"),
    path("staff/analytics/", analytics_dashboard, name="staff-analytics"),
    # The admin's own login, throttled, ahead of the admin's URLs that would otherwise answer it.
    path("admin/login/", login_throttled(field="username")(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/v1/", include("exchange.api.urls")),
    path("", include("frontend.urls")),
]

handler400 = "exchange.views.errors.bad_request"
handler404 = "exchange.views.errors.not_found"
handler500 = "exchange.views.errors.server_error"
