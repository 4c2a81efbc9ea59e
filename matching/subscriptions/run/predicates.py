"""Whether one event passes a query's tests, and the time ranges it must fall in (SPEC 8.3)."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Mapping
from typing import Any

from matching import Interval, Wildcard
from matching.subscriptions.language.model import Condition, SubjectTest, Test, TimeRange

COMPARE: Mapping[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def passes(test: Test, values: Mapping[str, Any]) -> bool:
    """SPEC 8.3's content rule: an absent attribute fails every predicate, ``= *`` is presence."""
    if isinstance(test, SubjectTest):
        return test.compiled.matches(values["subject"]) != test.negated
    v = values.get(test.attribute)
    if v is None:
        return False
    pred = test.predicate
    if type(pred) is Wildcard:
        return True
    assert isinstance(pred, Interval)
    if pred.lo is not None and (v < pred.lo or (v == pred.lo and not pred.lo_closed)):
        return False
    return pred.hi is None or v < pred.hi or (v == pred.hi and pred.hi_closed)


def condition_holds(condition: Condition, values: Mapping[str, Any]) -> bool:
    return any(all(passes(t, values) for t in tests) for tests in condition.disjuncts)


def in_range(time: dt.datetime, start: dt.datetime, end: dt.datetime | None) -> bool:
    return start <= time and (end is None or time < end)


def resolve(time: TimeRange, now: dt.datetime) -> tuple[dt.datetime, dt.datetime | None]:
    start = now if time.start is None else time.start.resolve(now)
    end = None if time.end is None else time.end.resolve(now)
    return start, end
