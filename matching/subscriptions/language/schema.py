"""The event schema of SPEC 8.1 as the subscription language sees it: attribute -> type.

Every event type shares one namespace (an attribute has one type wherever it appears), so
a query is typed against the union. The quantity attributes take the market's quantity
type, int or decimal; the language treats them as decimal, which accepts int and decimal
literals alike (SPEC 8.3's fine points) and compares int and decimal values exactly.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from matching import Type
from matching.subscriptions.errors import QueryError

QUANTITY_ATTRIBUTES = frozenset({"quantity_min", "quantity_max", "quantity"})

EVENT_SCHEMA = MappingProxyType(
    {
        "seq": Type.INT,
        "time": Type.TIMESTAMP,
        "type": Type.STRING,
        "subject": Type.STRING,
        "offer": Type.INT,
        "version": Type.INT,
        "ask": Type.DECIMAL,
        "quantity_min": Type.DECIMAL,
        "quantity_max": Type.DECIMAL,
        "closes_at": Type.TIMESTAMP,
        "constraint": Type.STRING,
        "outcome": Type.STRING,
        "value": Type.DECIMAL,
        "matching_bids": Type.INT,
        "trade": Type.INT,
        "price": Type.DECIMAL,
        "quantity": Type.DECIMAL,
        "bid": Type.INT,
        "limit": Type.DECIMAL,
    }
)

# Attributes every event carries (SPEC 8.1).
ENVELOPE = ("seq", "time", "type", "subject")

# Who may see an event of a type (SPEC 8.1, 5.6): anyone, or the bidder (the event's owner)
# and staff.
EVERYONE = "everyone"
OWNER_AND_STAFF = "owner_and_staff"


@dataclass(frozen=True, slots=True)
class EventType:
    """One row of SPEC 8.1's table: the attributes an event of this type may carry beside
    the envelope (``optional`` ones are absent when the thing they describe is), and who
    may see it."""

    name: str
    attributes: tuple[str, ...]
    visible_to: str
    optional: frozenset[str] = frozenset()


_OFFER_TERMS = (
    "offer",
    "version",
    "ask",
    "quantity_min",
    "quantity_max",
    "closes_at",
    "constraint",
)
_BID_TERMS = ("bid", "version", "limit", "constraint")

EVENT_TYPES = MappingProxyType(
    {
        t.name: t
        for t in (
            EventType(
                "offer_posted",
                _OFFER_TERMS,
                EVERYONE,
                frozenset({"quantity_min", "quantity_max", "closes_at"}),
            ),
            EventType(
                "offer_amended",
                _OFFER_TERMS,
                EVERYONE,
                frozenset({"quantity_min", "quantity_max", "closes_at"}),
            ),
            EventType("offer_withdrawn", ("offer",), EVERYONE),
            EventType("offer_cancelled", ("offer",), EVERYONE),
            EventType("offer_closed", ("offer", "outcome"), EVERYONE),
            EventType(
                "best_offer", ("offer", "value", "matching_bids"), EVERYONE, frozenset({"value"})
            ),
            EventType(
                "trade", ("offer", "trade", "price", "quantity"), EVERYONE, frozenset({"quantity"})
            ),
            EventType("bid_placed", _BID_TERMS, OWNER_AND_STAFF),
            EventType("bid_amended", _BID_TERMS, OWNER_AND_STAFF),
            EventType("bid_withdrawn", ("bid",), OWNER_AND_STAFF),
            EventType("bid_filled", ("bid",), OWNER_AND_STAFF),
        )
    }
)

# The types whose events everyone sees: an event of any other type has an owner (the log's
# ``event_owner_iff_private`` constraint), so it is visible to its owner and staff only.
PUBLIC_TYPES = frozenset(t.name for t in EVENT_TYPES.values() if t.visible_to == EVERYONE)

START_TIME = "start_time"
END_TIME = "end_time"


def check_attribute(name: str, position: int, schema: Mapping[str, Type] = EVENT_SCHEMA) -> str:
    """``name`` if ``schema`` has it; else an ``unknown_attribute`` error at ``position``."""
    if name not in schema:
        guess = difflib.get_close_matches(name, list(schema), n=1, cutoff=0.75)
        hint = f"did you mean {guess[0]}? " if guess else ""
        raise QueryError(
            f"unknown attribute {name}: {hint}the attributes are " + ", ".join(sorted(schema)),
            position,
            code="unknown_attribute",
        )
    return name
