from django.contrib import admin
from django.urls import include, path

from exchange.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("", include("frontend.urls")),
]
