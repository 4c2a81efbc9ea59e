"""The REST API for trading bots and the browser (SPEC 6.2, 6.5): thin views over the
services and selectors."""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import NotAuthenticated, Throttled
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from exchange.errors import InvalidInput
from exchange.http import whole_number
from exchange.models import Market, Offer
from exchange.selectors import orders as order_selectors
from exchange.selectors.lookups import market_by_subject
from exchange.selectors.markets import constraint_check, market_list
from exchange.selectors.presence import presence_who
from exchange.services import closing, markets, orders
from exchange.services.tokens import token_issue
from exchange.throttling import LoginFailures

from . import hot
from . import serializers as s
from .idempotency import idempotent
from .parameters import KnownParameters, QueryParameters, WholeNumberParameter
from .schema import IDEMPOTENT_CREATE


def _valid(serializer_class, request: Request):
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _market(subject: str) -> Market:
    market = market_by_subject(subject=subject)
    if market is None:
        raise InvalidInput("unknown_market", f"There is no market {subject}.", field="market")
    return market


def _order_id(value: str) -> int:
    number = whole_number(value)
    if number is None:
        raise Http404
    return number


def _pattern_parameter() -> serializers.CharField:
    # Taken as sent (an empty one too): the selector reading it says what is wrong with it.
    return serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="a market subject or a subject pattern (SPEC 8.2): office.>, *.tools.*; "
        "a malformed pattern is a 400 invalid_pattern with the position",
    )


class _SubjectQuery(QueryParameters):
    subject = _pattern_parameter()


class _MarketQuery(QueryParameters):
    market = _pattern_parameter()


class _OfferQuery(_MarketQuery):
    state = serializers.ChoiceField(
        choices=Offer.State.values,
        required=False,
        error_messages={"invalid_choice": f"state is one of {', '.join(Offer.State.values)}."},
    )


class _NotificationQuery(QueryParameters):
    after = WholeNumberParameter(required=False, help_text="resume after this id")


class IsStaff(permissions.BasePermission):
    message = "Only staff can do this."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_staff)


class TokenView(KnownParameters, APIView):
    """Trade a username and password for an API token (``Authorization: Token <token>``).

    Throttled per client (scope ``auth``, every attempt) and per account name tried from that
    client (``login_account``, failed attempts only, the same counter as the login pages')."""

    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []
    throttle_scope = "auth"

    @extend_schema(request=s.TokenRequest, responses={200: s.TokenResponse})
    def post(self, request):
        data = _valid(s.TokenRequest, request)
        failures = LoginFailures(request, data["username"])
        wait = failures.wait()
        if wait is not None:
            raise Throttled(wait=wait, detail="Too many failed attempts for this account.")
        user = authenticate(request, username=data["username"], password=data["password"])
        if user is None or not user.is_active:
            failures.record()
            raise InvalidInput("invalid_credentials", "Unknown username or wrong password.")
        return Response({"token": token_issue(user=user).key})


class MarketList(KnownParameters, generics.ListAPIView):
    """Markets with their schemas; staff create markets here."""

    serializer_class = s.MarketSerializer
    permission_classes = [permissions.AllowAny]
    query_serializer = _SubjectQuery

    def get_queryset(self):
        return market_list(subject=self.query(self.request).get("subject"))

    def get_permissions(self):
        return [IsStaff()] if self.request.method == "POST" else super().get_permissions()

    @extend_schema(request=s.MarketCreateRequest, responses={201: s.MarketSerializer})
    def post(self, request):
        data = _valid(s.MarketCreateRequest, request)
        market = markets.market_create(**data)
        return Response(s.MarketSerializer(market).data, status=status.HTTP_201_CREATED)


class MarketDetail(KnownParameters, APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=s.MarketSerializer)
    def get(self, request, subject: str):
        market = market_by_subject(subject=subject)
        if market is None:
            raise Http404
        return Response(s.MarketSerializer(market).data)


class MarketCheck(KnownParameters, APIView):
    """Apply a market's rules to a constraint without posting it: the canonical text, or the
    error with its position (what posting would answer).

    Posting and this check share one rule, ``exchange.selectors.markets.constraint_check``
    (market rules, then the store's limits). The UI keeps its own URL over the same selector
    (``frontend.views.markets.market_check``) because its answer adds readable tiers that
    only ``frontend`` can write, and the API may not import ``frontend``; this one is the
    versioned, documented contract for bots (JSON form included, DRF throttles and errors).
    """

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        request=s.CheckRequest,
        responses=s.CheckResponse,
        # The docstring is for maintainers; clients read only what the check answers.
        description="Apply a market's rules to a constraint without posting it: the "
        "canonical text, or the error with its position (what posting would answer).",
    )
    def post(self, request, subject: str):
        market = market_by_subject(subject=subject)
        if market is None:
            raise Http404
        data = _valid(s.CheckRequest, request)
        rules = constraint_check(market=market, side=data["side"], source=data["constraint"])
        return Response({"constraint": rules.text, "constraint_json": rules.json})


class OfferList(KnownParameters, generics.ListAPIView):
    """Open offers are public: their constraint, best value and number of matching bids."""

    serializer_class = s.OfferSerializer
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    query_serializer = _OfferQuery

    def get_queryset(self):
        query = self.query(self.request)
        return order_selectors.offer_list(market=query.get("market"), state=query.get("state"))

    @extend_schema(
        request=s.OfferCreateRequest,
        responses={201: s.OfferSerializer},
        parameters=IDEMPOTENT_CREATE,
    )
    def post(self, request):
        def create():
            data = _valid(s.OfferCreateRequest, request)
            offer = orders.offer_publish(
                seller=request.user,
                market=_market(data["market"]),
                constraint=data["constraint"],
                closes_at=data.get("closes_at"),
            )
            return Response(_offer_data(request, offer.pk), status=201)

        return idempotent(request, "offers", create)


def _offer_data(request: Request, offer_id: int) -> dict:
    """The offer as the API shows it after a read or a write; 404 if there is no such offer."""
    offer = order_selectors.offer_get(offer_id=offer_id)
    if offer is None:
        raise Http404
    return s.OfferSerializer(offer, context={"request": request}).data


class OfferCancel(KnownParameters, APIView):
    permission_classes = [IsStaff]

    @extend_schema(request=None, responses=s.OfferSerializer)
    def post(self, request, offer_id: str):
        pk = _order_id(offer_id)
        orders.offer_cancel(staff=request.user, offer_id=pk)
        return Response(_offer_data(request, pk))


class OfferClose(KnownParameters, APIView):
    permission_classes = [IsStaff]

    @extend_schema(request=None, responses=s.CloseResponse)
    def post(self, request, offer_id: str):
        result = closing.offer_close(offer_id=_order_id(offer_id), staff=request.user)
        trade = (
            None
            if result.trade is None
            else s.TradeSerializer(result.trade, context={"request": request}).data
        )
        return Response({"state": result.state, "trade": trade})


class BidList(KnownParameters, generics.ListAPIView):
    """Your own bids, each with the offers it matches and where it is best."""

    serializer_class = s.BidSerializer
    permission_classes = [permissions.IsAuthenticated]

    def get_queryset(self):
        return order_selectors.bid_list(user=self.request.user)

    def get_serializer_context(self):
        context = super().get_serializer_context()
        page = getattr(self, "_page", None)
        if page is not None:
            context["standings"] = order_selectors.bid_standings(bids=page)
            context["outcomes"] = order_selectors.bid_outcomes(bids=page)
        return context

    def paginate_queryset(self, queryset):
        self._page = super().paginate_queryset(queryset)
        return self._page

    @extend_schema(
        request=s.BidCreateRequest, responses={201: s.BidSerializer}, parameters=IDEMPOTENT_CREATE
    )
    def post(self, request):
        def create():
            data = _valid(s.BidCreateRequest, request)
            bid = orders.bid_place(
                buyer=request.user, market=_market(data["market"]), constraint=data["constraint"]
            )
            # A bid is matched after its transaction commits, so it has no standings yet.
            body = s.BidSerializer(bid, context={"request": request, "standings": {}}).data
            return Response(body, status=201)

        return idempotent(request, "bids", create)


def _bid_data(request: Request, bid_id: int) -> dict:
    bid = order_selectors.bid_get(user=request.user, bid_id=bid_id)
    if bid is None:
        raise Http404
    context = {
        "request": request,
        "standings": order_selectors.bid_standings(bids=[bid]),
        "outcomes": order_selectors.bid_outcomes(bids=[bid]),
    }
    return s.BidSerializer(bid, context=context).data


class _OrderView(KnownParameters, APIView):
    # The offer and bid routes share the views below, each route naming its side with
    # as_view(kind="offer") or as_view(kind="bid"); the URL names the order by the keyword
    # its services take (offer_id, bid_id). A comment, not a docstring: drf-spectacular would
    # publish a docstring as the description of every operation.

    kind = ""  # "offer" or "bid", given by every route

    def get_serializer_class(self) -> type[serializers.Serializer]:
        """What drf-spectacular documents each answer as."""
        return s.OfferSerializer if self.kind == "offer" else s.BidSerializer

    def _url_id(self, url: dict[str, str]) -> int:
        return _order_id(url[f"{self.kind}_id"])

    def _shown(self, request: Request, pk: int) -> dict:
        return _offer_data(request, pk) if self.kind == "offer" else _bid_data(request, pk)

    def _changeable_id(self, request: Request, url: dict[str, str]) -> int:
        """The order to change; another buyer's bid does not exist for the caller, so
        changing it is a 404 as reading it is, never the services' 403 (offers are public)."""
        pk = self._url_id(url)
        if self.kind == "bid" and order_selectors.bid_get(user=request.user, bid_id=pk) is None:
            raise Http404
        return pk


class OrderDetail(_OrderView):
    def get_permissions(self) -> list[permissions.BasePermission]:
        # Offers are public; bids are seen only by their buyer.
        if self.kind == "offer":
            return [permissions.IsAuthenticatedOrReadOnly()]
        return [permissions.IsAuthenticated()]

    def get(self, request, **url: str) -> Response:
        return Response(self._shown(request, self._url_id(url)))

    @extend_schema(request=s.AmendRequest)
    def patch(self, request, **url: str) -> Response:
        pk = self._changeable_id(request, url)
        data = _valid(s.AmendRequest, request)
        change = {"constraint": data["constraint"], "version": data["version"]}
        if self.kind == "offer":
            orders.offer_amend(seller=request.user, offer_id=pk, **change)
        else:
            orders.bid_amend(buyer=request.user, bid_id=pk, **change)
        return Response(self._shown(request, pk))


class OrderWithdraw(_OrderView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None)
    def post(self, request, **url: str) -> Response:
        pk = self._changeable_id(request, url)
        if self.kind == "offer":
            orders.offer_withdraw(seller=request.user, offer_id=pk)
        else:
            orders.bid_withdraw(buyer=request.user, bid_id=pk)
        return Response(self._shown(request, pk))


class _PublicMarketList(KnownParameters, generics.ListAPIView):
    # A list anyone may read, narrowed by ?market=<subject or pattern>. (A comment: a
    # docstring would be inherited as the operations' description.)

    permission_classes = [permissions.AllowAny]
    query_serializer = _MarketQuery

    def _market_pattern(self) -> str | None:
        return self.query(self.request).get("market")


class BestOfferList(_PublicMarketList):
    """The best-offer table: for every open offer its best value and matching bids."""

    serializer_class = s.OfferSerializer

    def get_queryset(self):
        return order_selectors.offer_list(market=self._market_pattern(), state=Offer.State.OPEN)

    def list(self, request, *args, **kwargs):
        # The page from plain rows, as the serializer would write it, its statements compiled
        # once per ?market= value, the one filter (exchange/api/hot.py); its count from the
        # markets' maintained counts.
        return hot.offer_page(
            self,
            request,
            filters=request.query_params.get("market"),
            counted=lambda: order_selectors.open_offer_count(market=self._market_pattern()),
        )


class TradeList(_PublicMarketList):
    """Trades; the parties and staff also see the bid, the counterparty and the agreed constraint."""

    serializer_class = s.TradeSerializer

    def get_queryset(self):
        return order_selectors.trade_list(user=self.request.user, market=self._market_pattern())


class NotificationList(KnownParameters, generics.ListAPIView):
    """Your notifications after a sequence number (``?after=<id>``), oldest first."""

    serializer_class = s.NotificationSerializer
    permission_classes = [permissions.IsAuthenticated]
    query_serializer = _NotificationQuery

    def get_queryset(self):
        after = self.query(self.request).get("after", 0)
        if not self.request.user.is_authenticated:
            raise NotAuthenticated()
        return order_selectors.notification_list(user_id=self.request.user.pk, after=after)


class PresenceView(KnownParameters, APIView):
    """Discovery (SPEC 8.2): per market matching ``?subject=<pattern>``, the number of
    connected watchers and the names announced on it; what the WebSocket ``who`` frame
    answers."""

    permission_classes = [permissions.AllowAny]
    query_serializer = _SubjectQuery

    @extend_schema(responses=s.PresenceResponse)
    def get(self, request):
        return Response(presence_who(pattern=self.query(request).get("subject")))
