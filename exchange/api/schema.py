"""The OpenAPI schema tells the truth about every answer (issue 22): drf-spectacular's
``AutoSchema`` plus what it cannot see by itself.

* Every operation lists the error statuses it can answer, each with the one error body
  (``ErrorSerializer``) and the headers clients rely on (``Retry-After`` on 429 and 503,
  ``WWW-Authenticate`` on 401). Which statuses apply follows from the view (its
  authentication, permissions, path, body, throttles), so a new endpoint is documented the
  same way without writing anything.
* A read documents the query parameters ``exchange.api.parameters`` accepts for it: the
  view's ``query_parameters``, pagination and ``format``.
* A create that takes an ``Idempotency-Key`` (declared with ``IDEMPOTENT_CREATE``) documents
  the header, the 422 of a key reused with another body and ``Idempotent-Replay``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import permissions
from rest_framework.settings import api_settings

from .parameters import KnownParameters, own_parameters
from .serializers import ErrorSerializer

ERRORS = {
    "400": "Invalid input: the body, a query parameter (`unknown_parameter` names one this "
    "endpoint does not take) or the constraint; `field` and `position` say where.",
    "401": "No token or a bad one where one is needed (`WWW-Authenticate: Token`).",
    "403": "Not allowed: not your order, staff only, or a session request without its CSRF token.",
    "404": "No such market, offer or bid (or a bid that is not yours); on a read that does "
    "not check its parameters, also a `format` other than json.",
    "409": "`stale_version`: the order was amended since the version sent; nothing changed.",
    "413": "`too_large`: the body is larger than 256 KiB.",
    "415": "The body is not `application/json`.",
    "422": "`idempotency_key_reused`: this Idempotency-Key came with another body.",
    "429": "Throttled: retry after `Retry-After` seconds (also `error.retry_after`).",
    "503": "`unavailable`: the database is briefly unreachable; retry after `Retry-After` seconds.",
}
RESPONSE_HEADERS = [
    OpenApiParameter(
        "Retry-After",
        int,
        OpenApiParameter.HEADER,
        response=[429, 503],
        description="seconds to wait before retrying",
    ),
    OpenApiParameter(
        "WWW-Authenticate",
        str,
        OpenApiParameter.HEADER,
        response=[401],
        description="`Token`: send `Authorization: Token <token>`",
    ),
]
IDEMPOTENCY_KEY = "Idempotency-Key"
IDEMPOTENT_CREATE = [
    OpenApiParameter(
        IDEMPOTENCY_KEY,
        str,
        OpenApiParameter.HEADER,
        description="1 to 255 printable characters of your choice: a repeat with the same key "
        "and body answers with the first response and creates nothing",
    ),
    OpenApiParameter(
        "Idempotent-Replay",
        str,
        OpenApiParameter.HEADER,
        response=[201],
        enum=["true"],
        description="present on the answer to a repeat: this is the first request's response",
    ),
]
# Permissions that refuse no signed-in user: with only these, a read has no 403.
NEVER_FORBID = (
    permissions.AllowAny,
    permissions.IsAuthenticated,
    permissions.IsAuthenticatedOrReadOnly,
)


class ExchangeSchema(AutoSchema):
    def get_override_parameters(self) -> list[Any]:
        parameters = [*super().get_override_parameters(), *RESPONSE_HEADERS]
        if self.method == "GET":
            own = own_parameters(self.view)
            parameters += own
            fmt = api_settings.URL_FORMAT_OVERRIDE
            # a view that reads ``format`` itself (events: csv, jsonl) documents its values
            if fmt and fmt not in {p.name for p in own}:
                formats = [r.format for r in self.view.get_renderers()]
                parameters.append(
                    OpenApiParameter(fmt, str, enum=formats, description="the answer's format")
                )
        return parameters

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        # drf-spectacular's hook for the responses of one operation; the documented statuses
        # of the view (from @extend_schema) stay as they are, the errors are added.
        responses = super()._get_response_bodies(direction)
        for status in self._error_statuses():
            body = OpenApiResponse(ErrorSerializer, description=ERRORS[status])
            responses.setdefault(status, self._get_response_for_code(body, status))
        return responses

    def _error_statuses(self) -> list[str]:
        view = self.view
        unsafe = self.method not in permissions.SAFE_METHODS
        authenticates = bool(getattr(view, "authentication_classes", ()))
        forbids = any(not isinstance(p, NEVER_FORBID) for p in view.get_permissions())
        headers = {
            p.name for p in self.get_override_parameters() if isinstance(p, OpenApiParameter)
        }
        statuses = ["400"]
        if authenticates:
            statuses.append("401")
        if forbids or (unsafe and authenticates):  # session writes also need their CSRF token
            statuses.append("403")
        # DRF answers an unknown ?format= with a 404 where KnownParameters does not make it a 400.
        negotiates = self.method == "GET" and not isinstance(view, KnownParameters)
        if "{" in self.path or negotiates:
            statuses.append("404")
        if self.method == "PATCH":  # every amendment carries the version it was based on
            statuses.append("409")
        if unsafe and self.get_request_serializer() is not None:
            statuses += ["413", "415"]
        if IDEMPOTENCY_KEY in headers:
            statuses.append("422")
        if view.get_throttles():
            statuses.append("429")
        statuses.append("503")  # any request may find the database restarting
        return statuses


def shared_error_responses(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: each error status's response (the same body,
    description and headers on every operation) is written once under
    ``components/responses`` as ``Error<status>`` and referenced from the operations, so the
    committed schema does not repeat it a hundred times. A response a view declared itself
    for such a status is left where it is."""
    shared: dict[str, Any] = {}
    for item in result.get("paths", {}).values():
        for operation in item.values():
            responses = operation.get("responses", {}) if isinstance(operation, dict) else {}
            for status, response in responses.items():
                if response.get("description") != ERRORS.get(status):
                    continue
                name = f"Error{status}"
                if shared.setdefault(name, response) == response:
                    responses[status] = {"$ref": f"#/components/responses/{name}"}
    if shared:
        result.setdefault("components", {})["responses"] = dict(sorted(shared.items()))
    return result
