"""Subscriptions over REST (SPEC 8.3): register, list, show, end, and read the outbox.

``POST /api/v1/subscriptions/`` with ``{"query", "name"?}``; ``GET`` lists the caller's
own; ``GET``/``DELETE /api/v1/subscriptions/<id>/``; ``GET /api/v1/subscriptions/<id>/
notifications/?after=<n>`` pages the outbox by ``n``; ``POST /api/v1/subscriptions/<id>/
pause/`` and ``.../resume/`` stop and restart its advance (an ended one is a 409). Another
user's subscription is a 404, as if it did not exist.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import generics, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from exchange.api.parameters import KnownParameters
from exchange.api.serializers import ErrorSerializer
from exchange.errors import InvalidInput
from exchange.http import query_whole_number, whole_number
from exchange.models import Subscription
from exchange.selectors.subscriptions import (
    subscription_backtest,
    subscription_get,
    subscription_list,
    subscription_notifications,
    subscription_query_parsed,
)
from exchange.services.subscriptions import (
    MAX_NAME,
    stream_name,
    subscription_create,
    subscription_delete,
    subscription_pause,
    subscription_resume,
)
from matching.subscriptions import EventError, parse_timestamp, to_text
from matching.values import format_timestamp_body

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class SubscriptionSerializer(serializers.ModelSerializer):
    stream = serializers.SerializerMethodField()

    class Meta:
        model = Subscription
        fields = [
            *("id", "name", "kind", "query", "state", "reason", "created_at", "now"),
            *("last_n", "stream"),
        ]
        read_only_fields = fields

    def get_stream(self, subscription: Subscription) -> str:
        return stream_name(subscription.pk)


class BacktestRequest(serializers.Serializer):
    query = serializers.CharField(trim_whitespace=False)
    since = serializers.CharField(help_text="ISO 8601 time: the backtest registers there")
    until = serializers.CharField(
        required=False, help_text="ISO 8601 time, exclusive (default: now)"
    )


_NOTIFICATION: dict[str, serializers.Field] = {
    "n": serializers.IntegerField(),
    "seq": serializers.IntegerField(
        allow_null=True, help_text="null only for a watch's first answer without history"
    ),
    "data": serializers.DictField(),
}

BacktestResponse = inline_serializer(
    "SubscriptionBacktest",
    {
        "query": serializers.CharField(),
        "since": serializers.DateTimeField(),
        "until": serializers.DateTimeField(),
        "notifications": inline_serializer("BacktestNotification", _NOTIFICATION, many=True),
        "end": serializers.BooleanField(),
        "truncated": serializers.BooleanField(),
        "events_read": serializers.IntegerField(),
    },
)


class SubscriptionCreateRequest(serializers.Serializer):
    query = serializers.CharField(trim_whitespace=False)
    name = serializers.CharField(required=False, allow_blank=True, max_length=MAX_NAME)


NotificationPage = inline_serializer(
    "SubscriptionNotificationPage",
    {
        "results": inline_serializer("SubscriptionNotification", _NOTIFICATION, many=True),
        "next": serializers.CharField(allow_null=True),
    },
)


def _user(request: Request) -> User:
    """The caller, whom ``IsAuthenticated`` has already let in."""
    user = request.user
    assert isinstance(user, User)
    return user


def _own(request: Request, subscription_id: str) -> Subscription:
    number = whole_number(subscription_id)
    subscription = (
        None if number is None else subscription_get(owner=_user(request), subscription_id=number)
    )
    if subscription is None:
        raise Http404
    return subscription


class SubscriptionList(KnownParameters, generics.ListAPIView):
    """Your subscriptions, newest first; POST registers one (SPEC 8.3)."""

    serializer_class = SubscriptionSerializer
    permission_classes = [permissions.IsAuthenticated]

    def get_queryset(self):
        return subscription_list(owner=_user(self.request))

    @extend_schema(request=SubscriptionCreateRequest, responses={201: SubscriptionSerializer})
    def post(self, request: Request) -> Response:
        serializer = SubscriptionCreateRequest(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        subscription = subscription_create(
            owner=_user(request), query=data["query"], name=data.get("name", "")
        )
        return Response(SubscriptionSerializer(subscription).data, status=status.HTTP_201_CREATED)


class SubscriptionDetail(KnownParameters, APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=SubscriptionSerializer)
    def get(self, request: Request, subscription_id: str) -> Response:
        return Response(SubscriptionSerializer(_own(request, subscription_id)).data)

    @extend_schema(request=None, responses=SubscriptionSerializer)
    def delete(self, request: Request, subscription_id: str) -> Response:
        """End the subscription: it becomes ``done`` and sends nothing more."""
        subscription = subscription_delete(
            owner=_user(request), subscription_id=_own(request, subscription_id).pk
        )
        return Response(SubscriptionSerializer(subscription).data)


ENDED = OpenApiResponse(
    ErrorSerializer,
    description="`subscription_done` or `subscription_suspended`: it has ended and cannot be "
    "paused or resumed; nothing changed.",
)


class _StateMove(KnownParameters, APIView):
    """A POST that moves the caller's subscription with ``move`` (a service)."""

    permission_classes = [permissions.IsAuthenticated]
    move = staticmethod(subscription_pause)

    @extend_schema(request=None, responses={200: SubscriptionSerializer, 409: ENDED})
    def post(self, request: Request, subscription_id: str) -> Response:
        subscription = self.move(
            owner=_user(request), subscription_id=_own(request, subscription_id).pk
        )
        return Response(SubscriptionSerializer(subscription).data)


class SubscriptionPause(_StateMove):
    """Pause the subscription: it keeps its place in the log and sends nothing until it is
    resumed. 409 (``subscription_done``, ``subscription_suspended``) once it has ended."""

    move = staticmethod(subscription_pause)


class SubscriptionResume(_StateMove):
    """Resume a paused subscription: it reads on from where it stopped, so the events of
    the pause arrive then, each once, numbered on. 409 as for pause once it has ended."""

    move = staticmethod(subscription_resume)


class SubscriptionNotifications(KnownParameters, APIView):
    """The subscription's notifications after ``n`` = ``after``, in ``n`` order; ``next``
    repeats the query after the page's last ``n``."""

    permission_classes = [permissions.IsAuthenticated]
    query_parameters = (
        OpenApiParameter("after", int, description="only notifications with a greater n"),
        OpenApiParameter("limit", int, description=f"page size, at most {MAX_LIMIT}"),
    )

    @extend_schema(responses=NotificationPage)
    def get(self, request: Request, subscription_id: str) -> Response:
        subscription = _own(request, subscription_id)
        params = request.query_params
        after = query_whole_number(params, "after", default=0)
        limit = max(1, min(query_whole_number(params, "limit", default=DEFAULT_LIMIT), MAX_LIMIT))
        page = subscription_notifications(subscription_id=subscription.pk, after=after, limit=limit)
        following = None
        if len(page) == limit:
            query = params.copy()
            query["after"] = str(page[-1]["n"])
            following = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        return Response({"results": page, "next": following})


def _time(data: dict, name: str, default: dt.datetime | None = None) -> dt.datetime:
    raw = data.get(name)
    if raw is None and default is not None:
        return default
    try:
        return parse_timestamp(raw, name)
    except EventError as exc:
        raise InvalidInput(f"invalid_{name}", exc.message, field=name) from None


class SubscriptionBacktest(KnownParameters, APIView):
    """Run a query over history only and return what it would have sent (SPEC 8.3): as if
    registered at ``since``, over the events you may see before ``until``; bounded in
    events read, notifications and time (``truncated`` says it stopped early)."""

    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "backtest"

    @extend_schema(request=BacktestRequest, responses=BacktestResponse)
    def post(self, request: Request) -> Response:
        serializer = BacktestRequest(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        query = subscription_query_parsed(text=data["query"])
        since = _time(data, "since")
        until = _time(data, "until", default=timezone.now())
        if until <= since:
            raise InvalidInput("invalid_range", "until must be later than since.", field="until")
        result = subscription_backtest(user=_user(request), query=query, since=since, until=until)
        return Response(
            {
                "query": to_text(query),
                "since": format_timestamp_body(since),
                "until": format_timestamp_body(until),
                "notifications": result.notifications,
                "end": result.end,
                "truncated": result.truncated,
                "events_read": result.events_read,
            }
        )
