from __future__ import annotations

from decimal import Decimal

from django.core.validators import RegexValidator
from django.db import models
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual

from matching.subjects import SUBJECT_MAX_LENGTH, SUBJECT_REGEX

from .jsonb import jsonb_is, jsonb_matches_none

# Length limits of what staff type (SPEC 9: every staff text field has one), enforced by the
# schema validation and the services with a clear error, and here by PostgreSQL.
TITLE_LENGTH = 200
DESCRIPTION_LENGTH = 5000
MAX_ATTRIBUTES = 50
ATTRIBUTE_NAME_LENGTH = 63
LABEL_LENGTH = 100
UNIT_LENGTH = 40

# True when some attribute of the schema has a name, label or unit over its limit (jsonpath:
# a string of n+1 characters or more matches ``^.{n+1}``; the "s" flag counts newlines too).
_SCHEMA_TEXT_TOO_LONG = (
    f'$[*] ? (@.name like_regex "^.{{{ATTRIBUTE_NAME_LENGTH + 1}}}" flag "s" '
    f'|| @.label like_regex "^.{{{LABEL_LENGTH + 1}}}" flag "s" '
    f'|| @.unit like_regex "^.{{{UNIT_LENGTH + 1}}}" flag "s")'
)


class Market(models.Model):
    """A market: a hierarchical subject and a self-describing schema (SPEC 5.1).

    ``schema`` is a list of attribute descriptions, each
    ``{"name", "type", "label", "unit", "required_on_offer", "required_on_bid", "role"}``.
    """

    class Pricing(models.TextChoices):
        FIRST = "first", "First price"
        SECOND = "second", "Second price"

    subject = models.CharField(
        max_length=SUBJECT_MAX_LENGTH,
        unique=True,
        validators=[RegexValidator(SUBJECT_REGEX, "Dot-separated lower-case tokens.")],
    )
    title = models.CharField(max_length=TITLE_LENGTH)
    description = models.TextField(blank=True, max_length=DESCRIPTION_LENGTH)
    schema = models.JSONField(default=list)
    tick = models.DecimalField(max_digits=20, decimal_places=10, default=Decimal("0.01"))
    pricing = models.CharField(max_length=10, choices=Pricing.choices, default=Pricing.FIRST)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["subject"]
        constraints = [
            models.CheckConstraint(condition=models.Q(tick__gt=0), name="market_tick_positive"),
            models.CheckConstraint(
                condition=models.Q(pricing__in=["first", "second"]), name="market_pricing_known"
            ),
            models.CheckConstraint(
                condition=models.Q(subject__regex=SUBJECT_REGEX), name="market_subject_format"
            ),
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("description"), DESCRIPTION_LENGTH),
                name="market_description_length",
            ),
            models.CheckConstraint(
                condition=jsonb_is("schema", "array")
                & LessThanOrEqual(
                    models.Func(
                        models.F("schema"),
                        function="jsonb_array_length",
                        output_field=models.IntegerField(),
                    ),
                    MAX_ATTRIBUTES,
                ),
                name="market_schema_size",
            ),
            models.CheckConstraint(
                condition=jsonb_matches_none("schema", _SCHEMA_TEXT_TOO_LONG),
                name="market_schema_text_length",
            ),
        ]

    def __str__(self) -> str:
        return self.subject


class MarketOrderCount(models.Model):
    """A change of a market's number of open offers and active bids; the market's counts
    are the sums of its rows (``exchange.selectors.markets.market_list``).

    Triggers on the order tables write these rows (migration ``0012_live_market_counts``)
    whenever an order enters or leaves its live state, so no service can forget one. Writers
    only insert, so no order's transaction waits on another's count (one counter row per
    market would serialize every placement in it); ``market_counts_compact`` folds the rows
    into one per market now and then. Not tied to the market by a database constraint: a
    market deleted with its orders leaves rows that the next compaction drops.
    """

    market = models.ForeignKey(
        Market, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    offers = models.IntegerField()
    bids = models.IntegerField()

    def __str__(self) -> str:
        return f"market {self.market_id}: {self.offers:+d} offers, {self.bids:+d} bids"
