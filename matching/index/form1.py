"""Form 1 subscriptions (SPEC 8.3) into the matching index.

Each conjunct of a form 1 query is a ``Condition``: a disjunction of conjunctions of
tests. A conjunct with a single disjunct adds its tests to the tree (a positive
``subject MATCHES`` becomes the subject pattern, an attribute test an edge). What the tree
cannot hold goes to the subscription's residual check, evaluated by the subscription
language's own rule on the candidates the tree returns, so the index's answer stays exact:

* a conjunct with several disjuncts (``OR``, and ``!=``, which normalizes to two ranges);
* a negated ``subject MATCHES``;
* a second subject pattern;
* a second range test on an attribute that cannot be met with the first (``narrow``).

A second range test on an attribute already tested is met with the first: ``offer >= 10,
offer <= 20`` is the one two-sided range ``[10, 20]`` in the tree. Left to the residual it
was checked on every candidate past the first bound, half the subscriptions of a subject on
average (py-spy on the engine under ``alerts.py --bid-path``: half its time).

Time bounds, projections, aggregates and ``HAVING`` are not tests on one event: they stay
with the subscription's evaluator, which receives the events the index selects.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from matching import Interval, Wildcard
from matching.intervals import intersect
from matching.subjects import SubjectPattern
from matching.subscriptions.language.model import AtomicQuery, AttrTest, Condition, SubjectTest
from matching.subscriptions.run.predicates import condition_holds

from .tree import IndexTest, MatchingIndex, Residual


@dataclass(frozen=True)
class Split:
    """A query's conditions as the index takes them: ``subject`` and ``tests`` in the tree,
    ``rest`` checked on each candidate."""

    subject: SubjectPattern | None
    tests: tuple[IndexTest, ...]
    rest: tuple[Condition, ...]

    def residual(self) -> Residual | None:
        """The check of ``rest`` on an event's values (``None`` when nothing is left)."""
        rest = self.rest
        if not rest:
            return None

        def check(values: Mapping[str, Any]) -> bool:
            return all(condition_holds(c, values) for c in rest)

        return check


def split_conditions(conditions: tuple[Condition, ...]) -> Split:
    """Which conjuncts go into the tree and which to the residual check (module docstring)."""
    subject: SubjectPattern | None = None
    tests: dict[str, Interval | Wildcard] = {}
    rest: list[Condition] = []
    for condition in conditions:
        if len(condition.disjuncts) != 1:
            rest.append(condition)
            continue
        for test in condition.disjuncts[0]:
            if isinstance(test, SubjectTest) and not test.negated and subject is None:
                subject = test.compiled
            elif not (
                isinstance(test, AttrTest)
                and isinstance(test.predicate, Interval | Wildcard)
                and narrow(tests, test.attribute, test.predicate)
            ):
                rest.append(Condition(((test,),)))
    return Split(subject, tuple(tests.items()), tuple(rest))


def narrow(
    tests: dict[str, Interval | Wildcard], attribute: str, predicate: Interval | Wildcard
) -> bool:
    """``predicate`` on ``attribute`` added to ``tests`` (the tree's, one an attribute):
    alone if the attribute has none yet, else met with the one it has. An event value lies
    in both ranges exactly when it lies in their intersection, since the tree and the
    evaluator compare it with each bound alike. False, and ``tests`` unchanged, when the
    bounds cannot be compared with each other (the evaluator's own comparison then decides,
    on the event's value) or the intersection is empty: the caller leaves the test to its
    residual check, which answers as before."""
    held = tests.get(attribute)
    if held is None:
        tests[attribute] = predicate
        return True
    try:
        both = intersect(held, predicate)
    except TypeError:  # bounds of two kinds: a string and a number, a date and a time
        return False
    if both is None:
        return False
    tests[attribute] = both
    return True


def add_query(index: MatchingIndex, sub_id: Hashable, query: AtomicQuery) -> Split:
    """Hold the form 1 ``query``'s tests under ``sub_id``; returns how they were split."""
    split = split_conditions(query.conditions)
    index.add(sub_id, subject=split.subject, tests=split.tests, residual=split.residual())
    return split
