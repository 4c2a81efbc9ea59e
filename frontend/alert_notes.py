"""A subscription's notification as a feed row and as one line of text (issue 39): the time
of the event that caused it, its market, and each value with its unit, numbers written as
``exchange.numbers`` writes them for people ("#4 · Nov 28, 12:03:05 UTC · Pencils · offer
72 · value 1.20 EUR").

A value gets a unit when its name (the attribute, or an aggregate's argument, after any
alias) is the market's own attribute with a unit, or one of the names the event log gives a
price (``price``, ``limit``, ``best_value``, ...) or a quantity (``quantity``, ``lot``, ...).
The page, the live feed (``/alerts/<id>/notes/``), the header's toasts and the account's
list all draw rows here, so they say the same.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.contrib.auth.models import User

from exchange.market_rules import MarketSchema
from exchange.models import Market
from exchange.numbers import PLAIN_NUMBER, grouped_text
from exchange.selectors import ui
from exchange.selectors.markets import market_schema

# Names the event log (SPEC 8.1) gives a price and a quantity, whatever the market's schema.
PRICE_NAMES = frozenset(
    {"price", "limit", "value", "best_value", "ask", "reserve", "bid_value", "total"}
)
QUANTITY_NAMES = frozenset({"quantity", "quantity_min", "quantity_max", "lot", "matched_quantity"})
# An aggregate's argument (``AVG(price, 10)``, ``MIN(a.ask)``).
AGGREGATE = re.compile(r"^\w+\(\s*([\w.]+)")


def _base_name(key: str) -> str:
    match = AGGREGATE.match(key)
    name = match.group(1) if match else key
    return name.rsplit(".", 1)[-1].lower()


def _units(schema: MarketSchema | None) -> dict[str, str]:
    """A value's name -> its unit in this market ("" where none)."""
    if schema is None:
        return {}
    units = {a.name.lower(): a.unit for a in schema.attributes if a.unit}
    price = schema.price.unit
    quantity = schema.by_role("quantity")
    for name in PRICE_NAMES:
        units.setdefault(name, price)
    for name in QUANTITY_NAMES:
        units.setdefault(name, quantity.unit if quantity is not None else "")
    return units


def _value_text(key: str, value: Any, units: dict[str, str]) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    unit = units.get(_base_name(key), "")
    if unit and isinstance(value, (int, float, str)) and PLAIN_NUMBER.fullmatch(text):
        return f"{grouped_text(text)} {unit}"
    return text


def data_items(data: Any, units: dict[str, str], prefix: str = "") -> list[tuple[str, str]]:
    """A notification's ``data`` as (key, value text) pairs, keys in order, a nested
    alias's attributes (form 2) as ``alias.attr``."""
    if not isinstance(data, dict):
        return [(prefix or "value", _value_text(prefix or "value", data, units))]
    items: list[tuple[str, str]] = []
    for key in sorted(data):
        value = data[key]
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            items.extend(data_items(value, units, f"{name}."))
        else:
            items.append((name, _value_text(name, value, units)))
    return items


def time_text(time: dt.datetime) -> str:
    """``Nov 28, 12:03:05 UTC``: the event's second, as the site writes times."""
    utc = time.astimezone(dt.UTC)
    return f"{utc:%b} {utc.day}, {utc:%H:%M:%S} UTC"


def notes_presented(*, user: User, notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each of ``notes`` (``{"n", "seq", "data"}``) with ``time`` (the event's, None for a
    watch's first answer without history), ``market``, ``items``, ``tone`` and ``text``
    (the row as one line)."""
    places = ui.alerts_event_places(
        user=user, seqs=[note["seq"] for note in notes if note["seq"] is not None]
    )
    markets = ui.alerts_markets(subjects={subject for _, subject in places.values()})
    schemas: dict[str, MarketSchema] = {}
    out = []
    for note in notes:
        time, subject = places.get(note["seq"], (None, None))
        market: Market | None = markets.get(subject) if subject else None
        if market is not None and market.subject not in schemas:
            schemas[market.subject] = market_schema(market=market)
        schema = schemas.get(market.subject) if market is not None else None
        data = note["data"]
        failed = isinstance(data, dict) and "error" in data
        items = data_items(data, _units(schema))
        parts = [f"#{note['n']}"]
        if time is not None:
            parts.append(time_text(time))
        if market is not None:
            parts.append(market.title)
        parts += [f"{key} {value}" for key, value in items]
        out.append(
            {
                **note,
                "time": time,
                "time_text": time_text(time) if time is not None else "",
                "market": market,
                "items": items,
                "tone": "bad" if failed else "info",
                "text": " · ".join(parts),
            }
        )
    return out
