"""Every API error has one shape: ``{"error": {"code", "message", "field"?, "position"?}}``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from exchange.errors import ExchangeError
from exchange.http import error_body


def _first_error(detail: Any, path: str = "") -> tuple[str | None, str, str]:
    """The first (field, message, code) in a DRF validation error's nested detail."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            field = key if key != "non_field_errors" else ""
            found = _first_error(value, f"{path}.{field}" if path and field else (field or path))
            return found
    if isinstance(detail, list) and detail:
        return _first_error(detail[0], path)
    code = getattr(detail, "code", None) or "invalid"
    return (path or None, str(detail), str(code))


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ExchangeError):
        return Response({"error": exc.as_dict()}, status=exc.status)
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The database is unreachable (restarting, say): a clear, retryable answer, not a 500.
        return Response(
            error_body("unavailable", "The exchange's database is unavailable; retry shortly."),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        field, message, code = _first_error(exc.detail)
        response.data = error_body(code, message, field=field)
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "error"
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        response.data = error_body(str(code), str(message))
        wait = getattr(exc, "wait", None)  # Throttled's (the stubs do not declare it)
        if isinstance(exc, exceptions.Throttled) and wait is not None:
            response.data["error"]["retry_after"] = int(wait)
    return response
