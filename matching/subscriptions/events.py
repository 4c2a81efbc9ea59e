"""Events as the evaluator reads them: plain dicts of SPEC 8.1, checked and typed once.

An event carries ``seq`` (int), ``time`` (ISO 8601 timestamp), ``type`` and ``subject``
(strings) and the attributes of its type. Decimals travel as strings (the quantity
attributes may also be JSON ints, when the market's quantity is an int), timestamps as
ISO 8601, ints as JSON numbers; an attribute an event does not have is absent, never
null. Attributes outside SPEC 8.1's table are kept (``SELECT *`` shows them) but no
query can name them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from matching import Type, Value

from .errors import EventError
from .language.schema import ENVELOPE, EVENT_SCHEMA

_DECIMAL_RE = re.compile(r"-?\d+(?:\.\d+)?\Z", re.ASCII)
_TIMESTAMP_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?\Z", re.ASCII
)


@dataclass(frozen=True, slots=True)
class Event:
    """One event: ``raw`` is the dict as given (what notifications show), ``values`` the
    typed values of its SPEC 8.1 attributes (what conditions compare)."""

    seq: int
    time: dt.datetime
    raw: Mapping[str, Any]
    values: Mapping[str, Value]


def parse_timestamp(text: object, what: str) -> dt.datetime:
    """An ISO 8601 timestamp (``Z``, an offset, or no zone for UTC) as an aware datetime."""
    if not isinstance(text, str) or _TIMESTAMP_RE.match(text) is None:
        raise EventError(
            f"{what} must be an ISO 8601 timestamp such as 2026-11-20T10:00:00Z, not {text!r}",
            what,
        )
    try:
        value = dt.datetime.fromisoformat(text)
        # an offset can carry a time near year 1 or 9999 out of datetime's range in UTC
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    except (ValueError, OverflowError):
        raise EventError(f"{what} is not a valid timestamp: {text!r}", what) from None


def event_from_dict(raw: object) -> Event:
    """The typed event of a decoded JSON object; ``EventError`` names the first bad part."""
    if not isinstance(raw, dict):
        raise EventError('an event is a JSON object such as {"seq": 1, "time": ...}')
    for name in ENVELOPE:
        if name not in raw:
            raise EventError(
                f"the event has no {name}: every event has seq, time, type and subject", name
            )
    values: dict[str, Value] = {}
    for name, value in raw.items():
        t = EVENT_SCHEMA.get(name)
        if t is not None:
            values[name] = _typed(name, t, value)
    seq = values["seq"]
    time = values["time"]
    assert isinstance(seq, int) and isinstance(time, dt.datetime)
    return Event(seq, time, raw, values)


def _typed(name: str, t: Type, value: object) -> Value:
    if value is None:
        raise EventError(f"{name} is null: an attribute an event does not have is left out", name)
    if t is Type.INT:
        if type(value) is int:
            return value
        raise EventError(f"{name} must be a JSON integer, not {value!r}", name)
    if t is Type.DECIMAL:
        if type(value) is int:
            return Decimal(value)
        if isinstance(value, str) and _DECIMAL_RE.match(value):
            return Decimal(value)
        raise EventError(
            f'{name} must be a decimal written as a string, such as "1.00", not {value!r}', name
        )
    if t is Type.TIMESTAMP:
        return parse_timestamp(value, name)
    if isinstance(value, str):
        return value
    raise EventError(f"{name} must be a string, not {value!r}", name)
