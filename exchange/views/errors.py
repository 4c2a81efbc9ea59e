"""Error pages: JSON under /api/, HTML elsewhere."""

from __future__ import annotations

from django.views import defaults

from exchange.api.errors import not_found as api_not_found
from exchange.api.errors import server_error as api_server_error


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return api_not_found(request)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if request.path.startswith("/api/"):
        return api_server_error(request)
    return defaults.server_error(request)
