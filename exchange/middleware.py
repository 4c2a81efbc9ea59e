"""Middleware at the door: NUL characters and oversize bodies refused before any view or
query, the UI's Content-Security-Policy, and messages for the pages only."""

from __future__ import annotations

import secrets
from urllib.parse import unquote

from django.conf import settings
from django.contrib.messages.middleware import MessageMiddleware
from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse

from exchange.admission import BODY_TOO_LARGE
from exchange.http import error_body, is_api, wants_json


class RejectNulMiddleware:
    """PostgreSQL text cannot hold NUL, so a NUL in the path or the query string would only
    surface as a database error deep inside a view; answer 400 at the door instead."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "\x00" in unquote(raw):
            message = "The address contains a NUL character."
            if wants_json(request):
                return JsonResponse(error_body("bad_request", message), status=400)
            return HttpResponseBadRequest(message)
        return self.get_response(request)


class RefusedBodyMiddleware:
    """A body the web tier's door stopped reading (``exchange.admission``: longer than any
    the exchange takes) is answered 413 here, before sessions, CSRF or any view: what was
    read of it is never parsed. A body of a declared length is left to the HTTP server,
    which drops the rest of it once the answer is out and keeps the connection (closing it
    with bytes unread would reset it, and a client still sending would never read the 413);
    one of no declared length has no end to wait for, so its connection is closed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = getattr(request, "scope", {}).get(BODY_TOO_LARGE)
        if limit is None:
            return self.get_response(request)
        message = f"The body is limited to {limit} bytes."
        response: HttpResponse
        if wants_json(request):
            response = JsonResponse(error_body("too_large", message), status=413)
        else:
            response = HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        if not request.META.get("CONTENT_LENGTH"):
            response["Connection"] = "close"
        return response


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


class PageMessageMiddleware(MessageMiddleware):
    """Django's messages for the pages and the staff console only: an API answer never shows
    one and no API view adds one, so an ``/api/`` request is given no message storage (two
    storage backends and a cookie signer made and dropped per request: 1.2% of a bid's CPU,
    py-spy on ``ops/bench_live.py --request-costs``). Messages a page left for the browser
    stay where they are for its next page."""

    def process_request(self, request):
        if not is_api(request):
            super().process_request(request)
