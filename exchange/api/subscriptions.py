"""Subscriptions over REST (SPEC 8.3): register, list, show, end, and read the outbox.

``POST /api/v1/subscriptions/`` with ``{"query", "name"?, "webhook_url"?}``; ``GET`` lists
the caller's own; ``GET``/``PATCH`` (``{"webhook_url"}``)/``DELETE
/api/v1/subscriptions/<id>/``; ``POST /api/v1/webhook-secret/`` makes or rotates the caller's
signing secret (shown once), ``GET`` says whether there is one; ``GET /api/v1/subscriptions/<id>/
notifications/?after=<n>`` pages the outbox by ``n``; ``POST /api/v1/subscriptions/<id>/
pause/`` and ``.../resume/`` stop and restart its advance (an ended one is a 409). Another
user's subscription is a 404, as if it did not exist.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
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
from exchange.models import Subscription, SubscriptionWebhook
from exchange.selectors.subscription_lag import subscription_behind_events
from exchange.selectors.subscriptions import (
    subscription_backtest,
    subscription_get,
    subscription_list,
    subscription_notifications,
    subscription_query_parsed,
    subscription_query_warnings,
)
from exchange.selectors.webhooks import webhook_secret_created
from exchange.services.subscriptions import (
    MAX_NAME,
    stream_name,
    subscription_create,
    subscription_delete,
    subscription_pause,
    subscription_resume,
)
from exchange.services.webhooks import (
    subscription_webhook_set,
    webhook_secret_required,
    webhook_secret_rotate,
    webhook_url_checked,
)
from matching.subscriptions import EventError, parse_timestamp, to_text
from matching.values import format_timestamp_body

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class WebhookSerializer(serializers.ModelSerializer):
    """A subscription's webhook and its delivery state (docs/api.md, "Webhooks")."""

    class Meta:
        model = SubscriptionWebhook
        fields = [
            *("url", "delivered_n", "attempts", "last_error", "last_attempt_at"),
            *("next_retry_at", "stopped"),
        ]
        read_only_fields = fields
        extra_kwargs = {
            "delivered_n": {"help_text": "the last n the receiver acknowledged (2xx)"},
            "attempts": {"help_text": "failed tries of delivered_n + 1 in a row"},
            "next_retry_at": {"help_text": "when a failed notification is tried again"},
            "stopped": {"help_text": "gave up after too many failures; set the URL again"},
        }


class SubscriptionSerializer(serializers.ModelSerializer):
    stream = serializers.SerializerMethodField()
    webhook = serializers.SerializerMethodField()

    class Meta:
        model = Subscription
        fields = [
            *("id", "name", "kind", "query", "state", "reason", "created_at", "now"),
            *("last_n", "stream", "webhook"),
        ]
        read_only_fields = fields

    def get_stream(self, subscription: Subscription) -> str:
        return stream_name(subscription.pk)

    @extend_schema_field(WebhookSerializer(allow_null=True))
    def get_webhook(self, subscription: Subscription) -> dict | None:
        try:
            webhook = subscription.webhook
        except SubscriptionWebhook.DoesNotExist:
            return None
        return WebhookSerializer(webhook).data


class SubscriptionDetailSerializer(SubscriptionSerializer):
    """One subscription as ``GET /subscriptions/<id>/`` shows it: with how far it is
    behind the log."""

    behind_events = serializers.SerializerMethodField(
        help_text="events of the log it has still to read (0 when it is at the end); null "
        "unless it is active"
    )

    class Meta(SubscriptionSerializer.Meta):
        fields = [*SubscriptionSerializer.Meta.fields, "behind_events"]
        read_only_fields = fields

    def get_behind_events(self, subscription: Subscription) -> int | None:
        return subscription_behind_events(subscription)


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


class SubscriptionCheckRequest(serializers.Serializer):
    query = serializers.CharField(trim_whitespace=False)


SubscriptionCheckResponse = inline_serializer(
    "SubscriptionCheck",
    {
        "query": serializers.CharField(help_text="the canonical text it would be saved as"),
        "kind": serializers.CharField(help_text="events, composite, pattern or state"),
        "warnings": inline_serializer(
            "SubscriptionWarning",
            {
                "code": serializers.CharField(help_text="no_market"),
                "message": serializers.CharField(),
                "position": serializers.IntegerField(
                    required=False, help_text="0-based, where the quoted subject is"
                ),
            },
            many=True,
            help_text="what is doubtful but allowed: a subject pattern no market matches yet",
        ),
    },
)


WEBHOOK_URL_HELP = (
    "http or https URL each notification is POSTed to, signed (docs/api.md, Webhooks); "
    "needs your webhook secret"
)


class SubscriptionCreateRequest(serializers.Serializer):
    query = serializers.CharField(trim_whitespace=False)
    name = serializers.CharField(required=False, allow_blank=True, max_length=MAX_NAME)
    webhook_url = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, help_text=WEBHOOK_URL_HELP
    )


class SubscriptionUpdateRequest(serializers.Serializer):
    webhook_url = serializers.CharField(
        allow_blank=True, allow_null=True, help_text=WEBHOOK_URL_HELP + "; null or '' removes it"
    )


WebhookSecretState = inline_serializer(
    "WebhookSecretState",
    {
        "exists": serializers.BooleanField(),
        "created_at": serializers.DateTimeField(allow_null=True),
    },
)
WebhookSecretCreated = inline_serializer(
    "WebhookSecretCreated",
    {
        "secret": serializers.CharField(help_text="shown this once; keep it"),
        "created_at": serializers.DateTimeField(),
    },
)


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
        return subscription_list(owner=_user(self.request)).select_related("webhook")

    @extend_schema(request=SubscriptionCreateRequest, responses={201: SubscriptionSerializer})
    def post(self, request: Request) -> Response:
        serializer = SubscriptionCreateRequest(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        owner = _user(request)
        url = data.get("webhook_url") or ""
        if url:  # refused before anything is registered
            webhook_url_checked(url)
            webhook_secret_required(owner=owner)
        with transaction.atomic():
            subscription = subscription_create(
                owner=owner, query=data["query"], name=data.get("name", "")
            )
            if url:
                subscription_webhook_set(
                    owner=owner, subscription_id=subscription.pk, url=url, from_start=True
                )
        return Response(
            SubscriptionSerializer(_own(request, str(subscription.pk))).data,
            status=status.HTTP_201_CREATED,
        )


class SubscriptionDetail(KnownParameters, APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=SubscriptionDetailSerializer)
    def get(self, request: Request, subscription_id: str) -> Response:
        return Response(SubscriptionDetailSerializer(_own(request, subscription_id)).data)

    @extend_schema(request=SubscriptionUpdateRequest, responses=SubscriptionSerializer)
    def patch(self, request: Request, subscription_id: str) -> Response:
        """Set, change or remove (null or "") the subscription's webhook. A new one sends
        the notifications after the current ``last_n``; setting it again restarts a
        stopped one."""
        subscription = _own(request, subscription_id)
        serializer = SubscriptionUpdateRequest(data=request.data)
        serializer.is_valid(raise_exception=True)
        subscription_webhook_set(
            owner=_user(request),
            subscription_id=subscription.pk,
            url=serializer.validated_data["webhook_url"] or None,
        )
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


class SubscriptionCheck(KnownParameters, APIView):
    """Check a query without registering it: its canonical text and form, and warnings
    (``no_market``: a subject or pattern it requires that no market matches yet; it may be
    registered all the same), or the error registering it would get. Nothing is written."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        request=SubscriptionCheckRequest,
        responses=SubscriptionCheckResponse,
        description="Check a query without registering it: its canonical text and form, "
        "and warnings (no_market: a subject or pattern it requires that no market matches "
        "yet; it may be registered all the same), or the error registering it would get.",
    )
    def post(self, request: Request) -> Response:
        serializer = SubscriptionCheckRequest(data=request.data)
        serializer.is_valid(raise_exception=True)
        text = serializer.validated_data["query"]
        query = subscription_query_parsed(text=text)
        warnings = subscription_query_warnings(query=query, text=text)
        return Response({"query": to_text(query), "kind": query.kind.value, "warnings": warnings})


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


class WebhookSecretView(KnownParameters, APIView):
    """Your webhook signing secret: ``GET`` says whether you have one; ``POST`` makes one,
    or replaces it at once (rotation), and is the only answer that shows it."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=WebhookSecretState)
    def get(self, request: Request) -> Response:
        created = webhook_secret_created(owner=_user(request))
        return Response({"exists": created is not None, "created_at": created})

    @extend_schema(request=None, responses={201: WebhookSecretCreated})
    def post(self, request: Request) -> Response:
        owner = _user(request)
        secret = webhook_secret_rotate(owner=owner)
        return Response(
            {"secret": secret, "created_at": webhook_secret_created(owner=owner)},
            status=status.HTTP_201_CREATED,
        )
