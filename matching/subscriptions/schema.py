"""The event schema of SPEC 8.1 as the subscription language sees it: attribute -> type.

Every event type shares one namespace (an attribute has one type wherever it appears), so
a query is typed against the union. The quantity attributes take the market's quantity
type, int or decimal; the language treats them as decimal, which accepts int and decimal
literals alike (SPEC 8.3's fine points) and compares int and decimal values exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from matching import Type

from .errors import QueryError

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

START_TIME = "start_time"
END_TIME = "end_time"


def check_attribute(name: str, position: int, schema: Mapping[str, Type] = EVENT_SCHEMA) -> str:
    """``name`` if ``schema`` has it; else an ``unknown_attribute`` error at ``position``."""
    if name not in schema:
        raise QueryError(
            f"unknown attribute {name}: the attributes are " + ", ".join(sorted(schema)),
            position,
            code="unknown_attribute",
        )
    return name
