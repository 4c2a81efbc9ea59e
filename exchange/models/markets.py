from __future__ import annotations

from decimal import Decimal

from django.core.validators import RegexValidator
from django.db import models

SUBJECT_PATTERN = r"^[a-z0-9]+(\.[a-z0-9]+)*$"


class Market(models.Model):
    """A market: a hierarchical subject and a self-describing schema (SPEC 5.1).

    ``schema`` is a list of attribute descriptions, each
    ``{"name", "type", "label", "unit", "required_on_offer", "required_on_bid", "role"}``.
    """

    class Pricing(models.TextChoices):
        FIRST = "first", "First price"
        SECOND = "second", "Second price"

    subject = models.CharField(
        max_length=200,
        unique=True,
        validators=[RegexValidator(SUBJECT_PATTERN, "Dot-separated lower-case tokens.")],
    )
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
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
                condition=models.Q(subject__regex=SUBJECT_PATTERN), name="market_subject_format"
            ),
        ]

    def __str__(self) -> str:
        return self.subject
