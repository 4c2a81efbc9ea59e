"""Refuse requests that carry NUL characters before they reach any view or query."""

from __future__ import annotations

from urllib.parse import unquote

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
