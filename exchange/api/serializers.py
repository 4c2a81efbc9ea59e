"""Request and response shapes of the API (SPEC 6.5). Input serializers only check types;
the services apply the business rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from exchange.models import Bid, Market, Notification, Offer, Trade
from exchange.numbers import number_text, price_text, tick_text
from exchange.selectors.orders import trade_party


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "object"}]})
class ConstraintField(serializers.Field):
    """A constraint in the text syntax (a string) or the JSON form (an object)."""

    default_error_messages = {"invalid": "A constraint is text or a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, (str, dict)):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class TokenRequest(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=200, trim_whitespace=False)


class TokenResponse(serializers.Serializer):
    token = serializers.CharField()


class SchemaAttributeSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    # A field named like Field.label (the schema attribute's label), which the stubs type as str.
    label = serializers.CharField(required=False, allow_blank=True)  # type: ignore[assignment]
    unit = serializers.CharField(required=False, allow_blank=True)
    required_on_offer = serializers.BooleanField(required=False)
    required_on_bid = serializers.BooleanField(required=False)
    role = serializers.CharField(required=False, allow_null=True)


class MarketSerializer(serializers.ModelSerializer):
    schema = SchemaAttributeSerializer(many=True)
    tick = serializers.SerializerMethodField()

    class Meta:
        model = Market
        fields = [
            "subject",
            "title",
            "description",
            "schema",
            "tick",
            "pricing",
            "created_at",
            "updated_at",
        ]

    def get_tick(self, market: Market) -> str:
        return tick_text(market.tick)


class MarketCreateRequest(serializers.Serializer):
    subject = serializers.CharField(max_length=200)
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    schema = serializers.ListField(child=serializers.DictField(), allow_empty=False, max_length=100)
    tick = serializers.CharField(required=False, default="0.01", max_length=40)
    pricing = serializers.ChoiceField(
        choices=Market.Pricing.choices, required=False, default="first"
    )


class CheckRequest(serializers.Serializer):
    side = serializers.ChoiceField(choices=["offer", "bid"])
    constraint = ConstraintField()


class CheckResponse(serializers.Serializer):
    constraint = serializers.CharField()
    constraint_json = serializers.JSONField()


class PresenceMarket(serializers.Serializer):
    subject = serializers.CharField()
    watchers = serializers.IntegerField(help_text="connections following or announced on it")
    names = serializers.ListField(child=serializers.CharField(), help_text="announced names")


class PresenceResponse(serializers.Serializer):
    subject = serializers.CharField(help_text="the pattern asked about")
    markets = PresenceMarket(many=True)
    truncated = serializers.BooleanField(help_text="more markets matched than are listed")


class ZoneKeepingDateTimeField(serializers.DateTimeField):
    """A date and time passed on with the time zone the client wrote, or with none.

    DRF's field would make a naive value aware in the server's zone, so the service (which
    refuses naive values with ``invalid_closes_at``) would never see one; keeping it naive
    leaves that rule in its one home."""

    def enforce_timezone(self, value: dt.datetime) -> dt.datetime:
        return value if timezone.is_naive(value) else super().enforce_timezone(value)


class OfferCreateRequest(serializers.Serializer):
    market = serializers.CharField(max_length=200)
    constraint = ConstraintField()
    closes_at = ZoneKeepingDateTimeField(required=False, allow_null=True)


class BidCreateRequest(serializers.Serializer):
    market = serializers.CharField(max_length=200)
    constraint = ConstraintField()


class AmendRequest(serializers.Serializer):
    constraint = ConstraintField()
    version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)


@extend_schema_field(OpenApiTypes.STR)
class SetAsideReasonField(serializers.Field):
    """Why the engine left an order out of matching, or null while it takes part (the model
    stores a blank reason then)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(read_only=True, allow_null=True, **kwargs)

    def to_representation(self, value: str) -> str | None:
        return value or None


# What a trade shows only to its seller, its buyer and staff (SPEC 5.6).
PARTIES_ONLY = "null unless you are the seller, the buyer or staff"


class _PartiesOnly(serializers.Field):
    """A trade's field that only its seller, its buyer and staff see (SPEC 5.6): null for
    anyone else, whose answer never reads the value (nor its related rows). The schema of
    each kind below says so."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(read_only=True, **kwargs)

    def get_attribute(self, instance: Trade) -> Any:
        request = self.context.get("request")
        if request is None or not trade_party(instance, request.user):
            return None
        return super().get_attribute(instance)


@extend_schema_field(serializers.IntegerField(allow_null=True, help_text=PARTIES_ONLY))
class _PartiesOnlyInteger(_PartiesOnly, serializers.IntegerField):
    pass


@extend_schema_field(serializers.CharField(allow_null=True, help_text=PARTIES_ONLY))
class _PartiesOnlyText(_PartiesOnly, serializers.CharField):
    pass


class TradeSerializer(serializers.ModelSerializer):
    market = serializers.CharField(source="market.subject")
    price = serializers.SerializerMethodField()
    quantity = serializers.SerializerMethodField()
    bid = _PartiesOnlyInteger(source="bid_id")
    agreed_constraint = _PartiesOnlyText()
    seller = _PartiesOnlyText(source="seller.get_username")
    buyer = _PartiesOnlyText(source="buyer.get_username")

    class Meta:
        model = Trade
        fields = [
            "id",
            "market",
            "offer",
            "bid",
            "price",
            "quantity",
            "pricing",
            "agreed_constraint",
            "closed_at",
            "seller",
            "buyer",
        ]

    @extend_schema_field(serializers.CharField(help_text="on the market's tick: 1.10"))
    def get_price(self, trade: Trade) -> str | None:
        return price_text(trade.price, trade.market.tick)

    @extend_schema_field(
        serializers.CharField(allow_null=True, help_text="null when the market has no quantity")
    )
    def get_quantity(self, trade: Trade) -> str | None:
        return number_text(trade.quantity)


# The fields an offer and a bid show alike; each subclass names its model and lists its own
# fields after ORDER_FIELDS. A comment, not a docstring: drf-spectacular would publish a docstring
# as the description of both schema components.
#
# Offers and bids are what the busiest endpoints return (each POST's 201, the best-offer
# table's pages), and DRF builds and binds every field of a ModelSerializer again for each
# serializer object: 0.7 ms for one bid, a third of the best-offer page's time (issue 17).
# So ``to_representation`` writes the declared fields out by hand; the fields stay declared
# for validation and the OpenAPI schema, and tests/api/test_order_representation.py checks
# that the two give the same answer, key order included, for orders in every state.
_TIME = serializers.DateTimeField()
_ISO_8601 = str(api_settings.DATETIME_FORMAT).lower() == ISO_8601


def time_text(value: dt.datetime | None, zone: dt.tzinfo) -> str | None:
    """What DRF's ``DateTimeField`` writes for a stored (aware) ``value`` in the current
    time zone ``zone``: ISO 8601, with "Z" for UTC. DRF looks the zone up for every value,
    which was a third of the best-offer page's CPU once the fields were written out, so the
    caller looks it up once per order."""
    if value is None:
        return None
    if not _ISO_8601:
        return _TIME.to_representation(value)
    text = value.astimezone(zone).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


class _OrderSerializer(serializers.ModelSerializer):
    ORDER_FIELDS = ["id", "market", "version", "state", "constraint", "constraint_json"]

    market = serializers.CharField(source="market.subject")
    constraint = serializers.CharField(source="constraint_text")
    set_aside_reason = SetAsideReasonField()

    def _order_fields(self, order: Offer | Bid) -> dict[str, Any]:
        return {
            "id": order.pk,
            "market": order.market.subject,
            "version": order.version,
            "state": str(order.state),
            "constraint": order.constraint_text,
            "constraint_json": order.constraint_json,
        }


def _best(offer: Offer) -> Any:
    """The best bid the selector attached to an open offer, or None (closed or no bid)."""
    return getattr(offer, "best", None) if offer.state == Offer.State.OPEN else None


class OfferSerializer(_OrderSerializer):
    best_value = serializers.SerializerMethodField()
    matching_bids = serializers.SerializerMethodField()
    mine = serializers.SerializerMethodField()
    trade = serializers.SerializerMethodField()

    class Meta:
        model = Offer
        fields = [
            *_OrderSerializer.ORDER_FIELDS,
            "closes_at",
            "created_at",
            "updated_at",
            "best_value",
            "matching_bids",
            "mine",
            "trade",
            "set_aside_reason",
        ]

    def get_best_value(self, offer: Offer) -> str | None:
        best = _best(offer)
        return None if best is None else price_text(best.value, offer.market.tick)

    def get_matching_bids(self, offer: Offer) -> int:
        best = _best(offer)
        return 0 if best is None else best.matching_bids

    def get_mine(self, offer: Offer) -> bool:
        request = self.context.get("request")
        return bool(
            request and request.user.is_authenticated and offer.seller_id == request.user.pk
        )

    @extend_schema_field(TradeSerializer(allow_null=True))
    def get_trade(self, offer: Offer) -> dict | None:
        trade = getattr(offer, "trade", None) if offer.state == Offer.State.CLOSED else None
        return None if trade is None else TradeSerializer(trade, context=self.context).data

    def to_representation(self, offer: Offer) -> dict[str, Any]:
        zone = timezone.get_current_timezone()
        return {
            **self._order_fields(offer),
            "closes_at": time_text(offer.closes_at, zone),
            "created_at": time_text(offer.created_at, zone),
            "updated_at": time_text(offer.updated_at, zone),
            "best_value": self.get_best_value(offer),
            "matching_bids": self.get_matching_bids(offer),
            "mine": self.get_mine(offer),
            "trade": self.get_trade(offer),
            "set_aside_reason": offer.set_aside_reason or None,
        }


class StandingSerializer(serializers.Serializer):
    offer = serializers.IntegerField()
    value = serializers.DecimalField(max_digits=30, decimal_places=10, coerce_to_string=True)
    best = serializers.BooleanField()
    behind_own = serializers.BooleanField(
        help_text="not best, but only because another bid of yours is ahead"
    )
    min_next = serializers.DecimalField(
        max_digits=30,
        decimal_places=10,
        coerce_to_string=True,
        allow_null=True,
        help_text="the least price that would lead this offer now (the best value plus a "
        "tick); null when this bid is best or only your own bid is ahead",
    )


class OutcomeSerializer(serializers.Serializer):
    offer = serializers.IntegerField()
    result = serializers.ChoiceField(
        choices=["won", "lost", "over_limit"],
        help_text="won; lost to a better bid; over_limit: passed over at closing because the "
        "award would have gone past your spending limit",
    )
    price = serializers.DecimalField(
        max_digits=30,
        decimal_places=10,
        coerce_to_string=True,
        allow_null=True,
        help_text="the winning price (null: the auction closed unsold)",
    )
    at = serializers.DateTimeField()


class BidSerializer(_OrderSerializer):
    matches = serializers.SerializerMethodField()
    largest_award = serializers.SerializerMethodField()
    outcomes = serializers.SerializerMethodField()

    class Meta:
        model = Bid
        fields = [
            *_OrderSerializer.ORDER_FIELDS,
            "created_at",
            "updated_at",
            "matches",
            "set_aside_reason",
            "largest_award",
            "outcomes",
        ]

    @extend_schema_field(StandingSerializer(many=True))
    def get_matches(self, bid: Bid) -> list[dict]:
        standings = self.context.get("standings", {}).get(bid.pk, [])
        tick = bid.market.tick
        return [
            {
                "offer": s["offer"],
                "value": price_text(s["value"], tick),
                "best": s["best"],
                "behind_own": s["behind_own"],
                "min_next": price_text(s["min_next"], tick),
            }
            for s in standings
        ]

    @extend_schema_field(
        serializers.CharField(
            allow_null=True,
            help_text="the most this bid could cost (a decimal string in the market's price "
            "places), as committed against your spending limit when it was placed or last "
            "amended (docs/api.md, Spending limits); null for bids placed before limits",
        )
    )
    def get_largest_award(self, bid: Bid) -> str | None:
        return price_text(bid.largest_award, bid.market.tick)

    @extend_schema_field(OutcomeSerializer(many=True))
    def get_outcomes(self, bid: Bid) -> list[dict]:
        zone = timezone.get_current_timezone()
        return [
            {
                "offer": o.offer_id,
                "result": o.result,
                "price": price_text(o.price, bid.market.tick),
                "at": time_text(o.at, zone),
            }
            for o in self.context.get("outcomes", {}).get(bid.pk, [])
        ]

    def to_representation(self, bid: Bid) -> dict[str, Any]:
        zone = timezone.get_current_timezone()
        return {
            **self._order_fields(bid),
            "created_at": time_text(bid.created_at, zone),
            "updated_at": time_text(bid.updated_at, zone),
            "matches": self.get_matches(bid),
            "set_aside_reason": bid.set_aside_reason or None,
            "largest_award": self.get_largest_award(bid),
            "outcomes": self.get_outcomes(bid),
        }


class CloseResponse(serializers.Serializer):
    state = serializers.CharField()
    trade = TradeSerializer(allow_null=True)


class NotificationSerializer(serializers.ModelSerializer):
    market = serializers.CharField(source="market.subject")
    seq = serializers.IntegerField(source="id")

    class Meta:
        model = Notification
        fields = ["id", "seq", "type", "market", "offer", "data", "created_at"]


class LimitDetailSerializer(serializers.Serializer):
    """The numbers of a refused bid's spending-limit check (docs/api.md, Spending limits),
    decimal strings in the market's price places."""

    limit = serializers.CharField(help_text="your spending limit")
    committed = serializers.CharField(help_text="what your other active bids could cost")
    remaining = serializers.CharField(help_text="limit minus committed")
    largest_award = serializers.CharField(
        allow_null=True, help_text="the most this bid could cost (null: unbounded)"
    )
    largest_lot = serializers.CharField(
        allow_null=True, help_text="the lot that award is for (null: unbounded)"
    )
    price = serializers.CharField(help_text="the price that award is at")


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="stable for programs: off_tick, stale_version, ...")
    message = serializers.CharField(help_text="for people: what is wrong and how to fix it")
    field = serializers.CharField(
        required=False,
        help_text="the input at fault: a body field, a query parameter, a header, or a path "
        "inside a JSON constraint (constraint/any_of/0/price)",
    )
    position = serializers.IntegerField(
        required=False, min_value=0, help_text="0-based character offset into the sent text"
    )
    limit = LimitDetailSerializer(
        required=False, help_text="on over_limit: the numbers of the spending-limit check"
    )
    retry_after = serializers.IntegerField(
        required=False, min_value=0, help_text="on a 429: seconds to wait (as Retry-After)"
    )


class ErrorSerializer(serializers.Serializer):
    """The one error shape of every API answer that is not a success (SPEC 6.2)."""

    error = ErrorDetailSerializer()
