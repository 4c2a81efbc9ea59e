"""One row as an order's constraint: the JSON form of SPEC 2.5, built from the row's cells as
the map says, with a note of which column each value came from so that an error found later
(by the market's rules, in the order service) is reported at its column.

Values are handed to the language as the text they were in the feed, keyed by the attribute's
schema type (``"int lot"``), so the language itself reads and checks every number, date and
timestamp; only points and boxes are read here, with the language's own literal parser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matching
from exchange.errors import InvalidInput
from exchange.market_rules import MarketSchema, Side
from matching import Box, Point, Type
from matching.jsonform import attribute_key, escape

from .feeds import WHOLE_ROW, Row, RowError
from .maps import BETWEEN, Feed, FeedMap

_JSON_OPERATORS = {"=": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
# Market-rule errors about the price that carry no position in a JSON-form constraint.
_PRICE_CODES = {"off_tick", "negative_price", "missing_price_bound", "unsatisfiable"}


@dataclass(frozen=True)
class RowOrder:
    """A row's constraint (``source``), where each value came from (JSON pointer -> column),
    and the columns that fed each attribute of each disjunct."""

    source: dict[str, Any]
    where: dict[str, str]
    disjunct_columns: tuple[dict[str, tuple[str, ...]], ...]


class RowRefused(Exception):
    def __init__(self, error: RowError) -> None:
        super().__init__(error.message)
        self.error = error


def row_order(row: Row, feed_map: FeedMap) -> RowOrder:
    """``row``'s constraint as the map says; ``RowRefused`` for a row that feeds no attribute
    or a point or box that does not read (everything else is read by the language when the
    order is checked)."""
    disjuncts: list[dict[str, Any]] = []
    where: dict[str, str] = {}
    columns: list[dict[str, tuple[str, ...]]] = []
    base_columns = {c for feed in feed_map.base for c in feed.columns}
    layers: list[tuple[Feed, ...]] = [feed_map.base]
    for tier in feed_map.tiers:
        own = {c for feed in tier for c in feed.columns} - base_columns
        # A tier whose own columns are all empty in this row is not offered by it.
        if any(row.cells.get(c) for c in own):
            replaced = {feed.attribute.name for feed in tier}
            layers.append((*(f for f in feed_map.base if f.attribute.name not in replaced), *tier))
    for feeds in layers:
        index = len(disjuncts)
        disjunct: dict[str, Any] = {}
        used: dict[str, tuple[str, ...]] = {}
        for feed in feeds:
            predicate = _predicate(row, feed, f"/any_of/{index}", where)
            if predicate is not None:
                key, condition, fed_by = predicate
                disjunct[key] = condition
                used[feed.attribute.name] = fed_by
        if not disjunct:
            # Only the first disjunct can be empty: a tier is left out when its cells are.
            raise RowRefused(
                RowError(WHOLE_ROW, "empty_row", "none of the columns the map reads has a value")
            )
        disjuncts.append(disjunct)
        columns.append(used)
    return RowOrder({"any_of": disjuncts}, where, tuple(columns))


def _predicate(
    row: Row, feed: Feed, prefix: str, where: dict[str, str]
) -> tuple[str, dict[str, Any], tuple[str, ...]] | None:
    """The JSON-form condition ``feed`` makes of ``row`` (None if its cells are empty)."""
    attribute = feed.attribute
    key = attribute_key(attribute.attribute)
    path = f"{prefix}/{escape(key)}"
    if feed.op == BETWEEN:
        low_column, high_column = feed.columns
        low, high = row.cells.get(low_column), row.cells.get(high_column)
        if low is not None and high is not None:
            where[f"{path}/between/0"] = low_column
            where[f"{path}/between/1"] = high_column
            value = [
                _value(low, attribute.type, low_column),
                _value(high, attribute.type, high_column),
            ]
            return key, {"between": value}, feed.columns
        # One end given: a half-line from it; neither: no condition.
        if low is not None:
            where[f"{path}/ge"] = low_column
            return key, {"ge": _value(low, attribute.type, low_column)}, (low_column,)
        if high is not None:
            where[f"{path}/le"] = high_column
            return key, {"le": _value(high, attribute.type, high_column)}, (high_column,)
        return None
    (column,) = feed.columns
    cell = row.cells.get(column)
    if cell is None:
        return None
    op = _JSON_OPERATORS[feed.op]
    where[f"{path}/{op}"] = column
    return key, {op: _value(cell, attribute.type, column)}, feed.columns


def _value(cell: str, type_: Type, column: str) -> Any:
    """A cell as a JSON-form value of ``type_``: the text itself, except a point or a box."""
    if type_ not in (Type.POINT, Type.BOX):
        return cell
    try:
        value = matching.parse_literal(cell, type_)
    except matching.ConstraintError as exc:
        raise RowRefused(RowError(column, exc.code, exc.message)) from None
    if isinstance(value, Point):
        return {"point": [value.x, value.y]}
    assert isinstance(value, Box)
    return {"box": [value.x1, value.y1, value.x2, value.y2]}


def error_column(
    error: InvalidInput,
    order: RowOrder,
    *,
    schema: MarketSchema,
    side: Side,
    feed_map: FeedMap,
    check: Callable[[dict[str, Any]], object],
) -> str:
    """The column an error of the market's rules about ``order`` concerns (``WHOLE_ROW`` when
    it concerns no one column).

    An error of the language points into the constraint (its field is ``constraint/...``),
    which ``order.where`` maps back to a column. The market's rules name no place in a JSON
    form: a price error is placed on the price column of the first disjunct that fails
    alone (``check`` is the rule that failed), a missing attribute on the column that would
    have fed it.
    """
    field = error.field or ""
    if field.startswith("constraint/"):
        pointer = field.removeprefix("constraint")
        found = [p for p in order.where if pointer == p or pointer.startswith(p + "/")]
        return order.where[max(found, key=len)] if found else WHOLE_ROW
    price = schema.price.name
    if error.code in _PRICE_CODES:
        disjuncts = order.source["any_of"]
        for index, disjunct in enumerate(disjuncts):
            if len(disjuncts) > 1:
                try:
                    check({"any_of": [disjunct]})
                    continue
                except InvalidInput as alone:
                    if alone.code != error.code:
                        continue
            fed_by = order.disjunct_columns[index].get(price)
            return fed_by[0] if fed_by else _mapped_column(feed_map, price)
        return _mapped_column(feed_map, price)
    if error.code == "missing_attribute":
        for spec in schema.attributes:
            required = spec.required_on_offer if side == "offer" else spec.required_on_bid
            if required and any(spec.name not in used for used in order.disjunct_columns):
                return _mapped_column(feed_map, spec.name)
    return WHOLE_ROW


def _mapped_column(feed_map: FeedMap, attribute: str) -> str:
    """The first column the map reads for ``attribute`` (its name if the map has none)."""
    for feed in feed_map.base:
        if feed.attribute.name == attribute:
            return feed.columns[0]
    return attribute
