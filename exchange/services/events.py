"""Writing the event log (SPEC 8.1): what each change's event says, and the one writer.

The request path does not touch the log. It records each change of an order as an
``OrderChange`` row carrying the change's event as of that version (``order_event``); the
matching cycle, the log's single writer, turns the changes of its batch into events, then
the best-offer changes it made (``BestOfferChange`` rows, picked up by id past a mark kept
in the counter, so no caller of ``best_offers_refresh`` can forget one). Closing writes
``offer_closed``, ``trade`` and ``bid_filled`` through the same writer.

Why ``seq`` has no holes and never goes backwards for a reader: every writer holds the
cycle lock and locks the one ``EventCounter`` row until it commits, so writers run one
after the other and a writer gets its numbers only once the previous one has committed
(or rolled back, giving its numbers back with its rows). ``time`` is the later of the
counter's last time and the clock, so it never decreases either.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection

from exchange.engine.constraints import UnusableOrder, market_schema_of
from exchange.market_rules import numeric_value
from exchange.models import BestOfferChange, Bid, Market, Offer, Trade
from exchange.models.events import EVENT_TABLE
from exchange.numbers import number_text, price_text
from exchange.realtime import streams as realtime
from exchange.selectors.events import event_row_json
from exchange.services.side_effects import after_commit
from exchange.services.subscriptions import subscriptions_advance_request
from matching.model import Constraint, Interval, Type
from matching.subscriptions.language.schema import EVENT_TYPES, OWNER_AND_STAFF
from matching.values import format_timestamp_body

# An event as the writer takes it: (type, subject, owner id or None, attributes in JSON form).
EventRow = tuple[str, str, int | None, dict[str, Any]]


@dataclass(frozen=True)
class OrderEvent:
    """What ``OrderChange`` stores about a change: the event without ``seq`` and ``time``."""

    event: dict[str, Any]
    owner_id: int | None


def quantity_json(value: Any, kind: Type) -> int | str:
    """A quantity in its market's type: a JSON int for an int quantity, else a decimal
    string (``5000``, ``2.5``)."""
    number = numeric_value(value)
    if kind is Type.INT:
        return int(number)
    return number_text(number)


def _bounds(constraint: Constraint, attribute: Any) -> list[Interval | None]:
    """The attribute's interval in each disjunct, ``None`` where it takes any value."""
    found: list[Interval | None] = []
    for disjunct in constraint:
        predicate = disjunct.get(attribute)
        found.append(predicate if isinstance(predicate, Interval) else None)
    return found


def offer_terms(offer: Offer, constraint: Constraint) -> dict[str, Any]:
    """The attributes of ``offer_posted``/``offer_amended`` for ``offer`` at its current
    version: ``ask`` the lowest price any alternative accepts; ``quantity_min`` and
    ``quantity_max`` the smallest and largest quantity any alternative allows, left out
    when the market has no quantity or some alternative leaves that side open.
    ``UnusableOrder`` if some alternative has no lowest price (stored behind the rules' back)."""
    market = offer.market
    schema = market_schema_of(market)
    prices = _bounds(constraint, schema.price.attribute)
    lows = [numeric_value(p.lo) for p in prices if p is not None and p.lo is not None]
    if len(lows) != len(prices):  # the market rules refuse such an offer
        raise UnusableOrder("an alternative of the offer has no lowest price")
    terms: dict[str, Any] = {
        "offer": offer.pk,
        "version": offer.version,
        "ask": price_text(min(lows), market.tick),
    }
    quantity = schema.by_role("quantity")
    if quantity is not None:
        spans = _bounds(constraint, quantity.attribute)
        lo = [numeric_value(s.lo) for s in spans if s is not None and s.lo is not None]
        hi = [numeric_value(s.hi) for s in spans if s is not None and s.hi is not None]
        if len(lo) == len(spans):
            terms["quantity_min"] = quantity_json(min(lo), quantity.type)
        if len(hi) == len(spans):
            terms["quantity_max"] = quantity_json(max(hi), quantity.type)
    if offer.closes_at is not None:
        terms["closes_at"] = format_timestamp_body(offer.closes_at)
    terms["constraint"] = offer.constraint_text
    return terms


def bid_terms(bid: Bid, constraint: Constraint) -> dict[str, Any]:
    """The attributes of ``bid_placed``/``bid_amended``: ``limit`` is the highest price any
    alternative accepts; ``UnusableOrder`` if some alternative does not bound it."""
    market = bid.market
    prices = _bounds(constraint, market_schema_of(market).price.attribute)
    highs = [numeric_value(p.hi) for p in prices if p is not None and p.hi is not None]
    if len(highs) != len(prices):  # the market rules refuse such a bid
        raise UnusableOrder("an alternative of the bid has no highest price")
    return {
        "bid": bid.pk,
        "version": bid.version,
        "limit": price_text(max(highs), market.tick),
        "constraint": bid.constraint_text,
    }


def order_event(kind: str, order: Offer | Bid, constraint: Constraint | None) -> OrderEvent:
    """The event of one change of ``order`` (``kind`` is its SPEC 8.1 type); ``constraint``
    is the order's parsed constraint, needed by the posted and amended types only."""
    spec = EVENT_TYPES[kind]
    if kind in ("offer_posted", "offer_amended", "bid_placed", "bid_amended"):
        assert constraint is not None
        attributes = (
            offer_terms(order, constraint)
            if isinstance(order, Offer)
            else bid_terms(order, constraint)
        )
    else:
        attributes = {"offer": order.pk} if isinstance(order, Offer) else {"bid": order.pk}
    owner = order.buyer_id if isinstance(order, Bid) else None
    return OrderEvent(
        {"type": kind, "subject": order.market.subject, **attributes},
        owner if spec.visible_to == OWNER_AND_STAFF else None,
    )


def closing_events(*, offer: Offer, trade: Trade | None) -> list[EventRow]:
    """The events of closing ``offer``: ``offer_closed``, and on a sale ``trade`` and
    ``bid_filled`` (the bidder's own)."""
    market = offer.market
    subject = market.subject
    rows: list[EventRow] = [
        (
            "offer_closed",
            subject,
            None,
            {"offer": offer.pk, "outcome": "unsold" if trade is None else "sold"},
        )
    ]
    if trade is None:
        return rows
    sale: dict[str, Any] = {
        "offer": offer.pk,
        "trade": trade.pk,
        "price": price_text(trade.price, market.tick),
    }
    quantity = market_schema_of(market).by_role("quantity")
    if quantity is not None and trade.quantity is not None:
        sale["quantity"] = quantity_json(trade.quantity, quantity.type)
    rows.append(("trade", subject, None, sale))
    rows.append(("bid_filled", subject, trade.buyer_id, {"bid": trade.bid_id}))
    return rows


# What ``best_offer_event`` needs of a ``BestOfferChange`` (after its id and time).
BEST_CHANGE_FIELDS = (
    "offer_id",
    "value",
    "matching_bids",
    "offer__market__subject",
    "offer__market__tick",
)


def best_offer_event(
    offer_id: int, value: Decimal | None, matching_bids: int, subject: str, tick: Decimal
) -> EventRow:
    """The event of one ``BestOfferChange`` (its ``BEST_CHANGE_FIELDS``): ``value`` is
    absent when no bid matches."""
    data: dict[str, Any] = {"offer": offer_id}
    if value is not None:
        data["value"] = price_text(value, tick)
    data["matching_bids"] = matching_bids
    return ("best_offer", subject, None, data)


# The most best-offer changes one statement reads. With a LIMIT in its text, the statement's
# generic plan (a prepared statement's, made once for any mark: the matching cycle runs with
# generic plans, ``partition_lock``) reads the changes' key in order from the mark, as a plan
# made for the mark's value does. Without it, PostgreSQL expected a third of the table past
# any mark and joined every offer: 1.9 ms a call on the live benchmark, 0.02 ms planned for
# the value (pg_stat_statements).
BEST_CHANGES_PAGE = 5000


def _best_changes_after(mark: int) -> list[tuple[Any, ...]]:
    """The ``BestOfferChange`` rows past id ``mark``, in id order, each as its id and its
    ``BEST_CHANGE_FIELDS``. Plain statements, one per ``BEST_CHANGES_PAGE`` rows: the ORM's
    query building and row handling were a third of the writer's Python time on a cycle's
    ~200 changes."""
    change, offer, market = (m._meta.db_table for m in (BestOfferChange, Offer, Market))
    sql = (
        f"SELECT c.id, c.offer_id, c.value, c.matching_bids, m.subject, m.tick "
        f"FROM {change} c JOIN {offer} o ON o.id = c.offer_id "
        f"JOIN {market} m ON m.id = o.market_id WHERE c.id > %s ORDER BY c.id "
        f"LIMIT {int(BEST_CHANGES_PAGE)}"
    )
    out: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        while True:
            cursor.execute(sql, [mark])
            rows = cursor.fetchall()
            out.extend(rows)
            if len(rows) < BEST_CHANGES_PAGE:
                return out
            mark = rows[-1][0]


def _counter_locked() -> tuple[int, Any, int]:
    """Lock the counter row (created if a flush emptied the table): the last seq, the time
    the next events get (never before the last one) and the best-change mark. One
    statement: an existing row is "updated" to itself, which locks it as ``FOR UPDATE``
    would, and ``RETURNING`` reads it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO exchange_eventcounter (id, last_seq, best_change_id) VALUES (1, 0, 0) "
            "ON CONFLICT (id) DO UPDATE SET id = excluded.id "
            "RETURNING last_seq, greatest(last_time, clock_timestamp()), best_change_id"
        )
        row = cursor.fetchone()
    assert row is not None
    return row[0], row[1], row[2]


def events_append(
    *, changes: Sequence[tuple[Any, int | None]] = (), closed: Iterable[EventRow] = ()
) -> int:
    """Append, in this order, the events of ``changes`` (the ``event`` and
    ``event_owner_id`` of ``OrderChange`` rows, in their order; a change without an event
    adds none), the ``closed`` events, and the best-offer changes not yet in the log (by
    id), with the next ``seq`` numbers; returns how many. The caller holds the cycle lock,
    in the transaction that made the changes, so the events commit or roll back with them.
    Three statements, whatever the number of events (but for one more per further
    ``BEST_CHANGES_PAGE`` best-offer changes): the counter, the best-offer changes, and one
    insert that also moves the counter on.
    """
    last_seq, time, mark = _counter_locked()
    rows: list[EventRow] = []
    for event, owner in changes:
        if event is None:
            continue
        assert isinstance(event, dict)
        rows.append((event["type"], event["subject"], owner, _attributes(event)))
    rows.extend(closed)
    best = _best_changes_after(mark)
    rows.extend(best_offer_event(*fields) for _id, *fields in best)
    if not rows:
        return 0
    events_insert(
        [(row, time) for row in rows],
        first_seq=last_seq + 1,
        counter=(time, best[-1][0] if best else mark),
    )
    stamp = format_timestamp_body(time)
    live = [
        {"owner": owner, "data": event_row_json(last_seq + n, stamp, kind, subject, data)}
        for n, (kind, subject, owner, data) in enumerate(rows, 1)
    ]
    after_commit("pushing events", lambda: events_push(live))
    after_commit("advancing subscriptions", subscriptions_advance_request)
    return len(rows)


def events_push(events: list[dict[str, Any]]) -> None:
    """Send committed ``events`` (consecutive, each ``{"owner", "data"}``) to the
    connections following ``events:<pattern>`` streams. Losing this push (Redis down) loses
    nothing: a connection that sees the next message skip ahead reads the gap from the log,
    and a client that reconnects resumes from the log (``realtime/consumers.py``)."""
    realtime.group_send_all(realtime.events_messages(events))


def _attributes(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in ("type", "subject")}


def events_insert(
    rows: Sequence[tuple[EventRow, dt.datetime]],
    *,
    first_seq: int,
    counter: tuple[dt.datetime, int] | None = None,
) -> None:
    """One INSERT for all ``rows`` (each an event and its time), numbered from
    ``first_seq`` in list order. Only the writer and the migration that builds the log of
    older data call it; they keep the counter: with ``counter`` (the last time and the
    best-change mark) the same statement sets it past these rows."""
    stamps = {time: time.isoformat() for time in {time for _row, time in rows}}
    payload = json.dumps(
        [
            {"type": t, "subject": s, "owner": o, "data": d, "time": stamps[time]}
            for (t, s, o, d), time in rows
        ],
        separators=(",", ":"),
    )
    moved = ""
    params: list[Any] = [first_seq, payload]
    if counter is not None:
        moved = (
            "WITH moved AS (UPDATE exchange_eventcounter SET last_seq = %s, last_time = %s, "
            "best_change_id = %s WHERE id = 1) "
        )
        params = [first_seq + len(rows) - 1, *counter, *params]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            {moved}INSERT INTO {EVENT_TABLE} (seq, time, type, subject, owner_id, data)
            SELECT %s + n - 1, (e->>'time')::timestamptz, e->>'type', e->>'subject',
                   (e->>'owner')::integer, e->'data'
            FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS x(e, n)
            """,
            params,
        )
