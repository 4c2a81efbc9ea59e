"""Error pages: JSON under /api/ and on the UI's JSON endpoints, HTML elsewhere."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse
from django.views import csrf, defaults

from exchange.http import error_body, wants_json


def bad_request(request, exception=None):
    """Django's answer to a SuspiciousOperation, such as a body over
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (a 413 here) or a malformed Host header."""
    if wants_json(request):
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(
                error_body("too_large", "The request body is too large."), status=413
            )
        return JsonResponse(error_body("bad_request", "The request is malformed."), status=400)
    return defaults.bad_request(request, exception)


def csrf_failure(request, reason=""):
    """``CSRF_FAILURE_VIEW``: Django's page, or JSON on the JSON endpoints."""
    if wants_json(request):
        message = f"CSRF check failed ({reason}); reload the page."
        return JsonResponse(error_body("csrf_failed", message), status=403)
    return csrf.csrf_failure(request, reason)


def not_found(request, exception=None):
    """A 404 for an address nothing serves (or a page's ``Http404``). Django would also log
    it as a warning ("Not Found: /path"); the server's access log already has every request
    with its status, and that warning was a fifth of a 404's CPU in Django (issue 36), so
    the answer is marked as logged (``django.utils.log.log_response`` reads the mark)."""
    response: HttpResponse
    if wants_json(request):
        response = JsonResponse(
            error_body("not_found", "There is nothing at this address."), status=404
        )
    else:
        response = defaults.page_not_found(request, exception)
    response._has_been_logged = True  # type: ignore[union-attr]
    return response


def server_error(request):
    if wants_json(request):
        return JsonResponse(
            error_body("server_error", "Something went wrong on our side. Please try again."),
            status=500,
        )
    return defaults.server_error(request)
