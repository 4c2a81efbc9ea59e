"""Conditions on attributes whose values form a closed set (SPEC 8.1: an event's ``type``,
an ``offer_closed`` event's ``outcome``) that no value of the set can pass.

``type = 'trades'`` is well formed, but no event has that type, so a subscription written
with it would never fire and never say why. The exchange refuses such a test where it is
written, with the values the attribute can have and the nearest of them (issue 39). Only
tests that no value passes are refused: ``type != 'trade'`` or ``type > 'offer'`` pass some.

SPEC 8.3 makes such a query well formed, so ``subscription_run`` and every other reading of
the language accept it (and it notifies nothing); the check runs only while ``CHECKING`` is
set, which ``checked.parse_query_checked`` does for the exchange's registrations, backtests
and the page's check as you type.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from contextvars import ContextVar

from matching import Interval
from matching.subscriptions.errors import QueryError
from matching.values import quote_string

from .model import AttrTest, Condition
from .schema import EVENT_TYPES

# Whether the conditions being parsed are checked against the closed sets.
CHECKING: ContextVar[bool] = ContextVar("closed_sets_checking", default=False)

# The attributes whose every possible value is known, with those values.
CLOSED_SETS: dict[str, tuple[str, ...]] = {
    "type": tuple(sorted(EVENT_TYPES)),
    "outcome": ("sold", "unsold"),
}


def nearest(word: str, choices: Iterable[str], *, cutoff: float = 0.75) -> str | None:
    """The one of ``choices`` closest in spelling to ``word``, if any is close (case is
    ignored); for the "did you mean" of an error."""
    lowered = {choice.lower(): choice for choice in choices}
    found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[found[0]] if found else None


def _passes(predicate: object, value: str) -> bool:
    """Whether ``value`` passes a string attribute's predicate (an interval; a wildcard or
    anything else passes every value)."""
    if not isinstance(predicate, Interval):
        return True
    lo, hi = predicate.lo, predicate.hi
    if isinstance(lo, str) and (value < lo or (value == lo and not predicate.lo_closed)):
        return False
    return not (isinstance(hi, str) and (value > hi or (value == hi and not predicate.hi_closed)))


def closed_sets_check(condition: Condition, text: str, start: int) -> None:
    """Refuse (``QueryError``, code ``never_matches``) a condition that tests a closed set's
    attribute in a way no value of the set passes: an equality with a value outside the set
    (a misspelling: the error points at the literal and names the nearest value), or a
    condition none of whose alternatives any value passes (``type > 'trade'``). ``text`` is
    the query and ``start`` where the condition begins in it."""
    dead = 0
    ranged = False  # a dead test was a range between two strings, as IN ('a', 'b') writes
    for disjunct in condition.disjuncts:
        blocked = None
        for test in disjunct:
            if not isinstance(test, AttrTest) or test.attribute not in CLOSED_SETS:
                continue
            values = CLOSED_SETS[test.attribute]
            if any(_passes(test.predicate, value) for value in values):
                continue
            predicate = test.predicate
            if isinstance(predicate, Interval) and isinstance(predicate.lo, str):
                if predicate.lo == predicate.hi:
                    _refuse_value(test.attribute, predicate.lo, text, start)
                ranged = predicate.hi is not None
            blocked = test.attribute
        dead += blocked is not None
    if condition.disjuncts and dead == len(condition.disjuncts):
        attribute = next(
            t.attribute
            for t in condition.disjuncts[0]
            if isinstance(t, AttrTest) and t.attribute in CLOSED_SETS
        )
        hint = (
            f"; IN ('a', 'b') is every value between a and b, for a list write "
            f"({attribute} = 'a' OR {attribute} = 'b')"
            if ranged
            else ""
        )
        raise QueryError(
            f"no event passes this condition on {attribute} "
            f"({attribute} is one of {', '.join(CLOSED_SETS[attribute])}){hint}",
            start,
            code="never_matches",
        )


def equality_check(left: object, right: object, text: str, at: int) -> None:
    """In a pattern's condition (``patterns.model``): refuse ``attr = 'value'`` (either way
    round) whose value lies outside ``attr``'s closed set; ``at`` is where the comparison
    begins in ``text``. Only while ``CHECKING``."""
    if not CHECKING.get():
        return
    for ref, literal in ((left, right), (right, left)):
        attribute = getattr(ref, "attribute", None)
        value = getattr(literal, "value", None)
        if (
            attribute in CLOSED_SETS
            and isinstance(value, str)
            and value not in CLOSED_SETS[attribute]
        ):
            _refuse_value(attribute, value, text, at)


def _refuse_value(attribute: str, value: str, text: str, start: int) -> None:
    """The error for an equality with ``value``, outside ``attribute``'s closed set."""
    values = CLOSED_SETS[attribute]
    found = text.find(quote_string(value), start)
    message = f"no event has {attribute} '{value}'"
    guess = nearest(value, values)
    if guess is not None:
        message += f": did you mean '{guess}'?"
    raise QueryError(
        f"{message} ({attribute} is one of {', '.join(values)})",
        found if found >= 0 else start,
        code="never_matches",
    )
