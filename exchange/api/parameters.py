"""Which query parameters an API read takes: declared once on the view, checked on every GET
and documented in the schema from that same declaration (issue 22).

A view lists its own parameters in ``query_parameters`` (OpenApiParameters) or declares them
as the fields of a ``QueryParameters`` serializer in ``query_serializer``, which also parses
them (``KnownParameters.query``). Pagination (``limit``, ``offset``)
and ``format`` are accepted wherever the view has them. A GET that names any other parameter
is a 400 ``unknown_parameter`` naming it, because a typo such as ``?markte=pencils`` would
otherwise be ignored and answer with every market's offers, which a bot cannot tell from a
right answer. ``exchange.api.schema`` documents the same list, so the schema and the check
cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.settings import api_settings

from exchange.errors import InvalidInput
from exchange.http import query_whole_number
from exchange.throttling import OneTripThrottles

CHECKED_METHODS = ("GET", "HEAD")


class QueryParameters(serializers.Serializer):
    """A read's own query parameters as the fields of a serializer: the one place they are
    declared. ``KnownParameters`` accepts their names, ``documented`` gives the schema's
    parameters and ``KnownParameters.query`` their values. A value is read as
    ``QueryDict.get`` reads it (the last of a repeated name), and an empty one is a value,
    not an absence; a refused one is a 400 ``invalid_<name>`` with the field's message."""

    @classmethod
    def documented(cls) -> list[OpenApiParameter]:
        parameters = []
        for name, field in cls().fields.items():
            choices = list(field.choices) if isinstance(field, serializers.ChoiceField) else None
            kind = int if isinstance(field, serializers.IntegerField) else str
            parameters.append(
                OpenApiParameter(name, kind, enum=choices, description=field.help_text or "")
            )
        return parameters


class WholeNumberParameter(serializers.IntegerField):
    """0, 1, 2, ... written with the digits 0-9 only; refused as ``query_whole_number``
    refuses it (DRF's IntegerField would also take "+1", " 1" and "1.0")."""

    def to_internal_value(self, data: Any) -> int:
        name = str(self.field_name)
        return query_whole_number({name: data}, name, default=0)


def own_parameters(view: Any) -> list[OpenApiParameter]:
    """The query parameters ``view`` declares for itself, from either declaration."""
    declared = getattr(view, "query_serializer", None)
    if declared is not None:
        return declared.documented()
    return list(getattr(view, "query_parameters", ()))


def accepted_parameters(view: Any) -> list[str]:
    """The query parameters ``view`` accepts on a read, in the order the schema lists them:
    its own, then pagination's and ``format``."""
    names = [p.name for p in own_parameters(view)]
    paginator = getattr(view, "paginator", None)
    for attribute in ("limit_query_param", "offset_query_param"):
        name = getattr(paginator, attribute, None)
        if name:
            names.append(name)
    if api_settings.URL_FORMAT_OVERRIDE:
        names.append(api_settings.URL_FORMAT_OVERRIDE)
    return list(dict.fromkeys(names))


_accepted: dict[tuple[type, str | None], frozenset[str]] = {}


# Every API view has this mixin, so it also brings the throttles' one round trip
# (``OneTripThrottles``). A comment: drf-spectacular publishes this docstring as the
# description of the operations of views that have none of their own.
class KnownParameters(OneTripThrottles):
    """Mix into an API view (before the DRF class) to refuse unknown query parameters.

    The check runs after authentication, permissions and throttling (``initial``), so an
    anonymous caller still gets its 401 first and a refused request still counts against
    the caller's rate.
    """

    query_parameters: ClassVar[Sequence[OpenApiParameter]] = ()
    query_serializer: ClassVar[type[QueryParameters] | None] = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # A mixin: super() is the DRF view after it in the MRO, which mypy does not know.
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        if request.method not in CHECKED_METHODS:
            return
        # What a view accepts is fixed by its class (its declarations and its paginator's):
        # worked out once, not per read (it builds the query serializer's fields; issue 36).
        key = (type(self), api_settings.URL_FORMAT_OVERRIDE)
        accepted = _accepted.get(key)
        if accepted is None:
            accepted = _accepted[key] = frozenset(accepted_parameters(self))
        unknown = [name for name in request.query_params if name not in accepted]
        if unknown:
            listed = ", ".join(accepted_parameters(self))
            raise InvalidInput(
                "unknown_parameter",
                f"This endpoint has no query parameter {unknown[0]!r}; it takes {listed}.",
                field=unknown[0],
            )

    def query(self, request: Request) -> dict[str, Any]:
        """The values of ``query_serializer``'s parameters that ``request`` gives."""
        assert self.query_serializer is not None
        parsed = self.query_serializer(data=request.query_params.dict())
        if not parsed.is_valid():
            name, (message, *_) = next(iter(parsed.errors.items()))
            raise InvalidInput(f"invalid_{name}", str(message), field=name)
        return dict(parsed.validated_data)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        """DRF answers an unknown ``?format=`` with a 404, as if the resource were missing;
        it is bad input, so a 400 saying which formats there are."""
        try:
            # The view's methods, which mypy does not see from a mixin (as in ``initial``).
            return super().perform_content_negotiation(request, force)  # type: ignore[misc]
        except Http404:
            formats = ", ".join(r.format for r in self.get_renderers())  # type: ignore[attr-defined]  # as above
            raise InvalidInput(
                "invalid_format",
                f"format is {formats} here.",
                field=api_settings.URL_FORMAT_OVERRIDE,
            ) from None
