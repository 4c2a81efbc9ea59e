"""The agreed constraint of a matching pair of disjuncts: what a trade records (SPEC 5.5).

For every attribute either side constrains, the intersection of the two point-sets
(the publication's attributes first, then the subscription's extra ones). Most
intersections are one predicate; a few box combinations are not (the boxes that
overlap A and contain B, when A and B are apart), and those keep both predicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .intervals import intersect
from .jsonform import attribute_key, predicate_to_json
from .model import (
    Attribute,
    Box,
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Disjunct,
    Interval,
    PointEq,
    PointWithin,
    Predicate,
    Type,
    Value,
    Wildcard,
)
from .printer import predicate_text
from .semantics import disjuncts_match


@dataclass(frozen=True)
class Agreement:
    """Attribute -> the predicates (usually one) that all agreed values satisfy."""

    items: tuple[tuple[Attribute, tuple[Predicate, ...]], ...]

    def to_text(self) -> str:
        """The agreement as text: every predicate, joined by AND.

        It parses back whenever every attribute has one predicate (always, except
        for the two-predicate box cases).
        """
        return " AND ".join(predicate_text(a, p) for a, preds in self.items for p in preds)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, preds in self.items:
            merged: dict[str, Any] = {}
            for pred in preds:
                merged.update(predicate_to_json(attr.type, pred))
            out[attribute_key(attr)] = merged
        return out

    def get(self, attribute: Attribute | str) -> tuple[Predicate, ...] | None:
        """The predicates on ``attribute`` (an ``Attribute``, or a name that is unambiguous)."""
        attr = self._resolve(attribute)
        for a, preds in self.items:
            if a == attr:
                return preds
        return None

    def upper(self, attribute: Attribute | str) -> Value | None:
        """The upper end of an ordered attribute's agreed set, attained or not.

        ``None`` when the set is unbounded above or the attribute is not constrained.
        """
        interval = self._interval(attribute)
        return None if interval is None else interval.hi

    def max_value(self, attribute: Attribute | str) -> Value | None:
        """The largest value of an ordered attribute's agreed set.

        ``None`` when there is none: unbounded above, or not attained (``< 5`` on a
        decimal), or the attribute is not constrained. Discrete types always attain it.
        """
        interval = self._interval(attribute)
        if interval is None or not interval.hi_closed:
            return None
        return interval.hi

    def _interval(self, attribute: Attribute | str) -> Interval | None:
        preds = self.get(attribute)
        if preds is None or len(preds) != 1:
            return None
        return preds[0] if type(preds[0]) is Interval else None

    def _resolve(self, attribute: Attribute | str) -> Attribute | None:
        if isinstance(attribute, Attribute):
            return attribute
        found = [a for a, _ in self.items if a.name == attribute]
        if len(found) > 1:
            raise ValueError(f"{attribute!r} names {len(found)} attributes: pass an Attribute")
        return found[0] if found else None


def agree(dp: Disjunct, ds: Disjunct) -> Agreement:
    """The agreed constraint of publication disjunct ``dp`` and subscription disjunct ``ds``.

    ``ValueError`` if they do not match (there is nothing to agree on).
    """
    if not disjuncts_match(dp, ds):
        raise ValueError("these disjuncts do not match, so they agree on nothing")
    sub = ds.mapping
    items: list[tuple[Attribute, tuple[Predicate, ...]]] = []
    for attr, p in dp.items:
        items.append((attr, _both(attr.type, p, sub[attr])))
    pub = dp.mapping
    for attr, q in ds.items:
        if attr not in pub:
            items.append((attr, (q,)))
    return Agreement(tuple(items))


def _both(t: Type, p: Predicate, q: Predicate) -> tuple[Predicate, ...]:
    """The intersection of two intersecting predicates, as few predicates as exact allows."""
    if type(p) is Wildcard:
        return (q,)
    if type(q) is Wildcard:
        return (p,)
    if t.ordered:
        merged = intersect(p, q)  # type: ignore[arg-type]
        assert merged is not None
        return (merged,)
    if t is Type.POINT:
        if type(p) is PointEq:
            return (p,)
        if type(q) is PointEq:
            return (q,)
        return (PointWithin(_meet(p.box, q.box)),)  # type: ignore[union-attr]
    return _boxes(p, q)


def _meet(a: Box, b: Box) -> Box:
    return Box(max(a.x1, b.x1), max(a.y1, b.y1), min(a.x2, b.x2), min(a.y2, b.y2))


def _join(a: Box, b: Box) -> Box:
    return Box(min(a.x1, b.x1), min(a.y1, b.y1), max(a.x2, b.x2), max(a.y2, b.y2))


def _boxes(p: Predicate, q: Predicate) -> tuple[Predicate, ...]:
    # = A is one shape, and it satisfies the other side (they match): it is the agreement.
    if type(p) is BoxEq:
        return (p,)
    if type(q) is BoxEq:
        return (q,)
    kinds = {type(p), type(q)}
    a: Box = p.box  # type: ignore[union-attr]
    b: Box = q.box  # type: ignore[union-attr]
    if kinds == {BoxWithin}:
        return (BoxWithin(_meet(a, b)),)
    if kinds == {BoxContains}:
        return (BoxContains(_join(a, b)),)
    if kinds == {BoxOverlaps}:
        # Overlapping the smaller of two nested boxes implies overlapping the larger.
        if b.contains(a):
            return (p,)
        if a.contains(b):
            return (q,)
        return (p, q)
    if kinds == {BoxOverlaps, BoxContains}:
        overlap, contain = (a, b) if type(p) is BoxOverlaps else (b, a)
        if overlap.intersects(contain):
            return (p,) if type(p) is BoxContains else (q,)
        return (p, q)
    if kinds == {BoxOverlaps, BoxWithin}:
        overlap, within = (a, b) if type(p) is BoxOverlaps else (b, a)
        if overlap.contains(within):
            return (p,) if type(p) is BoxWithin else (q,)
        return (p, q)
    # CONTAINS A and WITHIN B: the boxes between A and B; one shape only when A is B.
    if a == b:
        return (BoxEq(a),)
    return (p, q)
