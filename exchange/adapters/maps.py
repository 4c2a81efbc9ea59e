"""The map file of an adapter import (``docs/adapters.md``): which column feeds which
attribute of the market's schema, and with which operator.

A map is JSON::

    {"format": "csv", "delimiter": ",", "ref": "sku",
     "attributes": {"lot": {"between": ["lot_min", "lot_max"]}, "price": "list_price"},
     "tiers": [{"lot": {"between": ["tier2_min", "lot_max"]}, "price": "tier2_price"}]}

An attribute is fed by a column name (its default operator: ``=``, except the price of a bid,
``<=``), by ``{"column": NAME, "op": OP}`` with OP one of ``= != < <= > >=``, or by
``{"between": [LOW, HIGH]}``. ``attributes`` make the row's first disjunct; each tier is one
more disjunct, the first one with the tier's attributes in place of the first's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exchange.errors import ExchangeError
from exchange.http import json_bounded
from exchange.market_rules import MarketSchema, SchemaAttribute, Side
from matching import Type

FORMATS = ("csv", "jsonl")
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
BETWEEN = "between"
DEFAULT_REF_COLUMN = "ref"
# A map is a few dozen lines; anything larger is not one.
MAX_MAP_BYTES = 64 * 1024
MAX_MAP_DEPTH = 5  # the map, tiers, one tier, one feed, a between pair
_MAP_KEYS = {"format", "delimiter", "ref", "attributes", "tiers"}
_ORDERED = {Type.INT, Type.DECIMAL, Type.FLOAT, Type.DATE, Type.TIMESTAMP, Type.STRING}


class MapError(Exception):
    """A map that cannot be used; ``where`` is the place in the map (``attributes.lot``)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message


@dataclass(frozen=True)
class Feed:
    """How one attribute is fed: ``op`` is one of ``OPERATORS`` with one column, or
    ``between`` with two (low, high)."""

    attribute: SchemaAttribute
    op: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class FeedMap:
    base: tuple[Feed, ...]
    tiers: tuple[tuple[Feed, ...], ...]
    ref: str
    format: str | None
    delimiter: str
    # False for ``map_default``: its columns are the ones a feed may have, not must.
    explicit: bool = True

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the map reads (the ref's included), in the order first named."""
        named = [self.ref]
        for feeds in (self.base, *self.tiers):
            for feed in feeds:
                named.extend(feed.columns)
        return tuple(dict.fromkeys(named))


def default_operator(attribute: SchemaAttribute, side: Side) -> str:
    """``=``, except for the price of a bid, which bounds what the buyer pays: ``<=``."""
    return "<=" if attribute.role == "price" and side == "bid" else "="


def map_default(schema: MarketSchema) -> FeedMap:
    """The map used without a map file: a column named like an attribute is an equality
    (SPEC 8.2), for bids too, and ``ref`` is the ref column."""
    feeds = tuple(Feed(a, "=", (a.name,)) for a in schema.attributes)
    return FeedMap(feeds, (), DEFAULT_REF_COLUMN, None, ",", explicit=False)


def map_load(text: str | bytes, *, schema: MarketSchema, side: Side) -> FeedMap:
    """A map file's text as a ``FeedMap`` for ``side`` of a market with ``schema``;
    ``MapError`` names the first problem and where it is."""
    try:
        raw = json_bounded(text, max_bytes=MAX_MAP_BYTES, max_depth=MAX_MAP_DEPTH, what="The map")
    except ExchangeError as exc:
        raise MapError("", exc.message) from None
    return map_parse(raw, schema=schema, side=side)


def map_parse(raw: Any, *, schema: MarketSchema, side: Side) -> FeedMap:
    """A decoded map as a ``FeedMap`` (see the module docstring for the format)."""
    if not isinstance(raw, dict):
        raise MapError("", "a map is a JSON object with attributes (and format, ref, tiers)")
    unknown = sorted(set(raw) - _MAP_KEYS)
    if unknown:
        raise MapError(unknown[0], f"not a map key; a map has {', '.join(sorted(_MAP_KEYS))}")
    fmt = raw.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise MapError("format", f"must be {' or '.join(FORMATS)}")
    delimiter = raw.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise MapError("delimiter", "must be one character (not a quote or a line break)")
    ref = raw.get("ref", DEFAULT_REF_COLUMN)
    _column(ref, "ref")
    if "attributes" not in raw:
        raise MapError("attributes", "missing: name the column that feeds each attribute")
    base = _feeds(raw["attributes"], "attributes", schema, side)
    if not base:
        raise MapError("attributes", "name at least one attribute")
    tiers_raw = raw.get("tiers", [])
    if not isinstance(tiers_raw, list):
        raise MapError("tiers", "must be a list of objects like attributes")
    tiers = []
    for index, tier in enumerate(tiers_raw):
        where = f"tiers[{index}]"
        feeds = _feeds(tier, where, schema, side)
        if not feeds:
            raise MapError(where, "name at least one attribute")
        tiers.append(feeds)
    return FeedMap(base, tuple(tiers), ref, fmt, delimiter)


def _column(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MapError(where, "must be a column name (a non-empty string)")
    return value


def _feeds(raw: Any, where: str, schema: MarketSchema, side: Side) -> tuple[Feed, ...]:
    if not isinstance(raw, dict):
        raise MapError(where, "must be an object from attribute names to columns")
    by_name = {a.name: a for a in schema.attributes}
    feeds = []
    for name, spec in raw.items():
        here = f"{where}.{name}"
        attribute = by_name.get(name)
        if attribute is None:
            raise MapError(here, f"this market has no such attribute; it has {', '.join(by_name)}")
        feeds.append(_feed(attribute, spec, here, side))
    return tuple(feeds)


def _feed(attribute: SchemaAttribute, spec: Any, where: str, side: Side) -> Feed:
    if isinstance(spec, str):
        return Feed(attribute, default_operator(attribute, side), (_column(spec, where),))
    if not isinstance(spec, dict):
        raise MapError(
            where, 'must be a column name, {"column": NAME, "op": OP} or {"between": [LOW, HIGH]}'
        )
    if set(spec) == {BETWEEN}:
        pair = spec[BETWEEN]
        if not isinstance(pair, list) or len(pair) != 2:
            raise MapError(f"{where}.between", "must be a list of two column names [LOW, HIGH]")
        if attribute.type not in _ORDERED:
            raise MapError(where, f"a {attribute.type.value} attribute has no range")
        columns = tuple(_column(c, f"{where}.between[{i}]") for i, c in enumerate(pair))
        return Feed(attribute, BETWEEN, columns)
    if "column" not in spec or not set(spec) <= {"column", "op"}:
        raise MapError(
            where, 'must be a column name, {"column": NAME, "op": OP} or {"between": [LOW, HIGH]}'
        )
    column = _column(spec["column"], f"{where}.column")
    op = spec.get("op", default_operator(attribute, side))
    if op not in OPERATORS:
        raise MapError(f"{where}.op", f"must be one of {' '.join(OPERATORS)}")
    if op != "=" and attribute.type not in _ORDERED:
        raise MapError(f"{where}.op", f"a {attribute.type.value} attribute takes only =")
    return Feed(attribute, op, (column,))
