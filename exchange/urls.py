from django.contrib import admin
from django.urls import include, path

from exchange.views.analytics import analytics_dashboard
from exchange.views.dashboard import dashboard
from exchange.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("staff/", dashboard, name="staff-dashboard"),
    path("staff/analytics/", analytics_dashboard, name="staff-analytics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("exchange.api.urls")),
    path("", include("frontend.urls")),
]

handler404 = "exchange.views.errors.not_found"
handler500 = "exchange.views.errors.server_error"
