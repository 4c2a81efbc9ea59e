"""Plain lookups by a public name, for the edges (API views) that must not query themselves."""

from __future__ import annotations

from exchange.models import Market


def market_by_subject(*, subject: str) -> Market | None:
    """The market named ``subject`` (no counts annotated: cheaper than ``ui.market_get``)."""
    return Market.objects.filter(subject=subject).first()
