"""An order's constraint as the engine uses it, checked before any use.

An order's ``constraint_text`` was accepted by the market rules, so it normally parses and
fits. But a row can be changed behind the services' back, and a rule can tighten after an
order was stored; the engine must then leave that one order out rather than fail the
whole matching cycle. ``usable_constraint`` is the one check every engine path goes
through: it parses the stored text, checks that each disjunct bounds the price as the
order's side requires, and that the store can hold the constraint.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.models import Field

import matching
from exchange.market_rules import MarketSchema, schema_parse, subject_attribute, with_subject
from exchange.memo import short_text_cache
from exchange.models import Bid, Market, Offer
from exchange.models.orders import OrderT
from matching.model import Attribute, Constraint, Interval
from matching.store import StoreLimitError, check_storable

# How many characters of an error a reason keeps (the model's field holds 500).
REASON_LENGTH = 400


class UnusableOrder(Exception):
    """The engine cannot use an order's stored constraint; ``reason`` says why, for people."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason[:REASON_LENGTH]


class UnusableOrders(Exception):
    """Orders found unusable while matching, by id, with their reasons.

    Raised from the middle of a cycle's work: the caller rolls that work back, sets the
    orders aside and runs it again without them.
    """

    def __init__(
        self,
        *,
        offers: dict[int, str],
        bids: dict[int, str],
        refused: dict[tuple[str, int], str] | None = None,
    ) -> None:
        super().__init__(f"{len(offers)} offers and {len(bids)} bids cannot be matched")
        self.offers = offers
        self.bids = bids
        # Orders whose constraint checks out but which the store's database refused, by
        # (``"offer"`` or ``"bid"``, id), with the stored text it refused: such an order is
        # set aside while its text is still that one (``orders_set_aside``).
        self.refused = refused or {}

    def refused_of(self, kind: str) -> dict[int, tuple[str, str]]:
        """The refused orders of one ``kind``: id to (the text refused, the reason)."""
        reasons = self.offers if kind == "offer" else self.bids
        return {pk: (text, reasons[pk]) for (k, pk), text in self.refused.items() if k == kind}


@short_text_cache(maxsize=200_000)
def _parsed(text: str) -> Constraint:
    # Stored texts are canonical, so they parse without the market's schema.
    return matching.parse(text)


def market_schema_of(market: Market) -> MarketSchema:
    """The typed schema of a market; roles (price, quantity) are looked up only through it.

    A cycle asks for it once per order, so the parsed schema is cached by its JSON text.
    """
    return _schema(json.dumps(market.schema, sort_keys=True))


@lru_cache(maxsize=1024)
def _schema(text: str) -> MarketSchema:
    return schema_parse(json.loads(text))


def usable_constraint(order: Offer | Bid, schema: MarketSchema | None = None) -> Constraint:
    """The constraint the engine stores for ``order`` (its own plus the market's subject).

    Raises ``UnusableOrder`` when the stored text does not parse, names the subject, leaves
    the price unbounded on the side the order must bound it, or holds a value the store
    cannot index.
    """
    try:
        own = _parsed(order.constraint_text)
    except matching.ConstraintError as exc:
        raise UnusableOrder(f"its stored constraint does not parse: {exc}") from exc
    price = (schema or market_schema_of(order.market)).price.attribute
    is_offer = isinstance(order, Offer)
    for disjunct in own:
        if disjunct.get(subject_attribute()) is not None:
            raise UnusableOrder("its stored constraint names the market's subject")
        bound = disjunct.get(price)
        if not isinstance(bound, Interval) or (bound.lo if is_offer else bound.hi) is None:
            side = "a lowest" if is_offer else "a highest"
            raise UnusableOrder(
                f"its stored constraint has an alternative without {side} {price.name}"
            )
    stored = with_subject(own, order.market.subject)
    try:
        check_storable(stored)
    except StoreLimitError as exc:
        raise UnusableOrder(f"the constraint store cannot hold it: {exc}") from exc
    return stored


# An order's constraint as the engine uses it, with its market's price attribute.
Usable = tuple[Constraint, Attribute]


def order_usable(order: Offer | Bid) -> Usable:
    """``usable_constraint`` of ``order`` with its market's price attribute, the market's
    schema looked up once; ``UnusableOrder`` as ``usable_constraint``."""
    schema = market_schema_of(order.market)
    return usable_constraint(order, schema), schema.price.attribute


def orders_usable(orders: Iterable[Offer | Bid]) -> tuple[dict[int, Usable], dict[int, str]]:
    """The usable constraints of loaded orders (their market loaded with them), and the
    orders among them the engine cannot use, with the reason."""
    usable: dict[int, Usable] = {}
    unusable: dict[int, str] = {}
    for order in orders:
        try:
            usable[order.pk] = order_usable(order)
        except UnusableOrder as exc:
            unusable[order.pk] = exc.reason
    return usable, unusable


def order_constraints(
    model: type[Offer] | type[Bid], ids: set[int]
) -> tuple[dict[int, Usable], dict[int, str]]:
    """``orders_usable`` of the orders ``ids``, read in one query."""
    if not ids:
        return {}, {}
    if model is Offer:
        return orders_usable(orders_read(Offer, ids))
    return orders_usable(orders_read(Bid, ids))


# What the engine reads of an order (``orders_usable``, ``candidate_of``) and of its market.
ORDER_READ_FIELDS = ("id", "market_id", "constraint_text")
MARKET_READ_FIELDS = ("id", "subject", "schema")


@dataclass(frozen=True)
class _OrdersRead:
    """``orders_read``'s statement for one model, filter and choice of fields: each model's
    fields in the order of its concrete fields, as ``Model.from_db`` takes them, with the
    ORM's conversion of each value from the database (``from_db_value``, where a field has
    one: the JSON fields; PostgreSQL's backend adds none)."""

    sql: str
    order_fields: tuple[Field, ...]
    market_fields: tuple[Field, ...]

    @classmethod
    @lru_cache(maxsize=16)
    def of(
        cls,
        model: type[Offer] | type[Bid],
        live: bool,
        fields: tuple[str, ...],
        market_fields: tuple[str, ...],
    ) -> _OrdersRead:
        order = tuple(f for f in model._meta.concrete_fields if f.attname in {"id", *fields})
        market = tuple(
            f for f in Market._meta.concrete_fields if f.attname in {"id", *market_fields}
        )
        columns = ", ".join(
            [*(f'o."{f.column}"' for f in order), *(f'm."{f.column}"' for f in market)]
        )
        state = Offer.State.OPEN if model is Offer else Bid.State.ACTIVE
        where = f" AND o.state = '{state}' AND o.set_aside_at IS NULL" if live else ""
        sql = (
            f'SELECT {columns} FROM "{model._meta.db_table}" o '
            f'JOIN "{Market._meta.db_table}" m ON m.id = o.market_id '
            f"WHERE o.id = ANY(%s){where} ORDER BY o.id"
        )
        return cls(sql, order, market)

    def values(self, fields: tuple[Field, ...], row: tuple[Any, ...]) -> list[Any]:
        return [
            f.from_db_value(value, f.cached_col, connection)
            if hasattr(f, "from_db_value")
            else value
            for f, value in zip(fields, row, strict=True)
        ]


def orders_read(
    model: type[OrderT],
    ids: Iterable[int],
    *,
    live: bool = False,
    fields: tuple[str, ...] = ORDER_READ_FIELDS,
    market_fields: tuple[str, ...] = MARKET_READ_FIELDS,
) -> list[OrderT]:
    """The orders ``ids`` (only the open offers or active bids not set aside, with ``live``)
    in id order, as the ORM's ``select_related("market").only(...)`` of ``fields`` and the
    market's ``market_fields`` (attribute names; the ids are always read) would load them:
    any other field is deferred (read on first use). One statement written out and
    compiled once per process: built and compiled by the ORM per call, with its joined
    market, the cycle's reads of orders were a fifth of its CPU for one bid (issue 36)."""
    ids = sorted(ids)
    if not ids:
        return []
    read = _OrdersRead.of(model, live, tuple(fields), tuple(market_fields))
    with connection.cursor() as cursor:
        cursor.execute(read.sql, [ids])
        rows = cursor.fetchall()
    names = [f.attname for f in read.order_fields]
    market_names = [f.attname for f in read.market_fields]
    width = len(names)
    out = []
    for row in rows:
        order = model.from_db(connection.alias, names, read.values(read.order_fields, row[:width]))
        order.market = Market.from_db(
            connection.alias, market_names, read.values(read.market_fields, row[width:])
        )
        out.append(order)
    return out


def storable_check(constraint: Constraint) -> None:
    """Raise ``StoreLimitError`` if the store could not index ``constraint`` (as stored)."""
    check_storable(constraint)
