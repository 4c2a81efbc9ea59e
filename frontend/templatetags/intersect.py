"""Template helpers of the web UI."""

from __future__ import annotations

import json
import re
from decimal import Decimal

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from exchange.numbers import grouped_text, price_text, tick_text

register = template.Library()
WORD_RE = re.compile(r"[A-Za-z0-9_.]+")


@register.filter
def mark_at(text: str | None, position: int | None) -> SafeString:
    """``text`` escaped, with the word (or character) at ``position`` wrapped in ``<mark>``
    (a marked space past the end, e.g. for a missing value)."""
    text = text or ""
    if position is None or position < 0:
        return mark_safe(escape(text))
    position = min(position, len(text))
    word = WORD_RE.match(text, position)
    end = word.end() if word else position + (1 if text[position : position + 1] != "\n" else 0)
    inside = text[position:end] or " "
    marked = f'<mark class="err">{escape(inside)}</mark>'
    return mark_safe(escape(text[:position]) + marked + escape(text[end:]))


@register.filter
def line_col(text: str | None, position: int | None) -> str:
    """ "line 2, column 5" for a 0-based character position in ``text``."""
    if position is None:
        return ""
    before = (text or "")[:position]
    line = before.count("\n") + 1
    column = position - (before.rfind("\n") + 1) + 1
    return f"line {line}, column {column}"


@register.filter
def json_attr(value) -> str:
    """A value as JSON for a data-* attribute (the template escapes it as an attribute)."""
    return json.dumps(value, separators=(",", ":"))


@register.filter
def price(value, market) -> str:
    """A price with the market's number of places (1.2 at a tick of 0.01 shows as 1.20)."""
    return price_text(value, market.tick) or "—"


@register.filter
def grouped(value) -> str:
    return grouped_text(value)


@register.filter
def tick(value) -> str:
    """A tick as people (and an input's ``step``) write it: 0.01, 1, 10."""
    return tick_text(Decimal(value))
