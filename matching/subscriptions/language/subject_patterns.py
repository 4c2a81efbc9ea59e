"""The market subjects a query requires: every subject pattern (``subject MATCHES 'p'``)
and subject (``subject = 's'``) that a test of the query, not negated, compares with.

The exchange warns about one that no market's subject matches yet (issue 39): the query is
well formed and may fire once such a market is created, so it is a warning shown before
saving, not a refusal. Plain Python: what "a market exists" means is the exchange's.
"""

from __future__ import annotations

from collections.abc import Iterator

from matching import Interval
from matching.subscriptions.patterns.model import (
    All,
    Any_,
    Compare,
    Cond,
    Literal,
    Matches,
    PatternQuery,
    Ref,
)

from .model import AttrTest, Condition, Query, SubjectTest


def _from_conditions(conditions: tuple[Condition, ...]) -> Iterator[str]:
    for condition in conditions:
        for disjunct in condition.disjuncts:
            for test in disjunct:
                if isinstance(test, SubjectTest) and not test.negated:
                    yield test.pattern
                elif isinstance(test, AttrTest) and test.attribute == "subject":
                    predicate = test.predicate
                    if (
                        isinstance(predicate, Interval)
                        and isinstance(predicate.lo, str)
                        and predicate.lo == predicate.hi
                    ):
                        yield predicate.lo


def _from_cond(cond: Cond | None) -> Iterator[str]:
    if cond is None:
        return
    if isinstance(cond, Matches):
        if not cond.negated:
            yield cond.pattern
    elif isinstance(cond, Compare):
        if cond.op != "=":
            return
        for ref, literal in ((cond.left, cond.right), (cond.right, cond.left)):
            if (
                isinstance(ref, Ref)
                and ref.attribute == "subject"
                and isinstance(literal, Literal)
                and isinstance(literal.value, str)
            ):
                yield literal.value
    elif isinstance(cond, All | Any_):
        for part in cond.parts:
            yield from _from_cond(part)


def query_subject_patterns(query: Query) -> tuple[str, ...]:
    """The patterns and subjects ``query`` compares a subject with (not negated), each once,
    in the order of the query's canonical form. A subject is a pattern of itself."""
    found: Iterator[str]
    if isinstance(query, PatternQuery):
        found = (
            pattern
            for side in query.sides
            for cond in (
                side.first.filter,
                *(
                    c
                    for step in side.steps
                    for c in (step.condition, step.rebind, step.source.filter)
                ),
                side.where,
            )
            for pattern in _from_cond(cond)
        )
    else:
        found = _from_conditions(query.conditions)
    return tuple(dict.fromkeys(found))
