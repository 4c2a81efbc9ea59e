"""Middleware at the door: NUL characters refused before any view or query, and the UI's
Content-Security-Policy."""

from __future__ import annotations

import secrets
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse

from exchange.http import error_body


class RejectNulMiddleware:
    """PostgreSQL text cannot hold NUL, so a NUL in the path or the query string would only
    surface as a database error deep inside a view; answer 400 at the door instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "\x00" in unquote(raw):
            message = "The address contains a NUL character."
            if request.path.startswith("/api/"):
                return JsonResponse(error_body("bad_request", message), status=400)
            return HttpResponseBadRequest(message)
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """A Content-Security-Policy on the UI's pages: scripts, styles, images, fonts and
    connections (the WebSocket included) only from the site itself; the one inline script
    (the import map) carries the request's nonce, ``request.csp_nonce``.

    The admin, the staff pages and the API's docs are left out (``CSP_EXEMPT_PREFIXES``): they
    are Django's and drf-spectacular's pages, with inline scripts and styles of their own."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.csp_nonce = secrets.token_urlsafe(16)
        response = self.get_response(request)
        exempt = request.path.startswith(settings.CSP_EXEMPT_PREFIXES)
        if not exempt and response.get("Content-Type", "").startswith("text/html"):
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY.format(
                nonce=request.csp_nonce
            )
        return response
