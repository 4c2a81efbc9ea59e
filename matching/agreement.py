"""The agreed constraint of a matching pair of disjuncts: what a trade records (SPEC 5.5).

For every attribute either side constrains, the intersection of the two point-sets
(the publication's attributes first, then the subscription's extra ones). Most
intersections are one predicate; a few box combinations are not (the boxes that
overlap A and contain B, when A and B are apart), and those keep both predicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import model
from .intervals import intersect
from .jsonform import attribute_key, predicate_to_json
from .printer import predicate_text
from .semantics import disjuncts_match


@dataclass(frozen=True)
class Agreement:
    """Attribute -> the predicates (usually one) that all agreed values satisfy."""

    items: tuple[tuple[model.Attribute, tuple[model.Predicate, ...]], ...]

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

    def get(self, attribute: model.Attribute | str) -> tuple[model.Predicate, ...] | None:
        """The predicates on ``attribute`` (an ``Attribute``, or a name that is unambiguous)."""
        attr = self._resolve(attribute)
        for a, preds in self.items:
            if a == attr:
                return preds
        return None

    def upper(self, attribute: model.Attribute | str) -> model.Value | None:
        """The upper end of an ordered attribute's agreed set, attained or not.

        ``None`` when the set is unbounded above or the attribute is not constrained.
        """
        interval = self._interval(attribute)
        return None if interval is None else interval.hi

    def max_value(self, attribute: model.Attribute | str) -> model.Value | None:
        """The largest value of an ordered attribute's agreed set.

        ``None`` when there is none: unbounded above, or not attained (``< 5`` on a
        decimal), or the attribute is not constrained. Discrete types always attain it.
        """
        interval = self._interval(attribute)
        if interval is None or not interval.hi_closed:
            return None
        return interval.hi

    def _interval(self, attribute: model.Attribute | str) -> model.Interval | None:
        preds = self.get(attribute)
        if preds is None or len(preds) != 1:
            return None
        return preds[0] if type(preds[0]) is model.Interval else None

    def _resolve(self, attribute: model.Attribute | str) -> model.Attribute | None:
        if isinstance(attribute, model.Attribute):
            return attribute
        found = [a for a, _ in self.items if a.name == attribute]
        if len(found) > 1:
            raise ValueError(f"{attribute!r} names {len(found)} attributes: pass an Attribute")
        return found[0] if found else None


def agree(dp: model.Disjunct, ds: model.Disjunct) -> Agreement:
    """The agreed constraint of publication disjunct ``dp`` and subscription disjunct ``ds``.

    ``ValueError`` if they do not match (there is nothing to agree on).
    """
    if not disjuncts_match(dp, ds):
        raise ValueError("these disjuncts do not match, so they agree on nothing")
    sub = ds.mapping
    items: list[tuple[model.Attribute, tuple[model.Predicate, ...]]] = []
    for attr, p in dp.items:
        items.append((attr, _both(attr.type, p, sub[attr])))
    pub = dp.mapping
    for attr, q in ds.items:
        if attr not in pub:
            items.append((attr, (q,)))
    return Agreement(tuple(items))


def _both(t: model.Type, p: model.Predicate, q: model.Predicate) -> tuple[model.Predicate, ...]:
    """The intersection of two intersecting predicates, as few predicates as exact allows."""
    if type(p) is model.Wildcard:
        return (q,)
    if type(q) is model.Wildcard:
        return (p,)
    if t.ordered:
        merged = intersect(p, q)  # type: ignore[arg-type]  # an ordered type's predicates are intervals
        assert merged is not None
        return (merged,)
    if t is model.Type.POINT:
        if type(p) is model.PointEq:
            return (p,)
        if type(q) is model.PointEq:
            return (q,)
        return (model.PointWithin(_meet(p.box, q.box)),)  # type: ignore[union-attr]  # a POINT attribute's predicates are points or boxes
    return _boxes(p, q)


def _meet(a: model.Box, b: model.Box) -> model.Box:
    return model.Box(max(a.x1, b.x1), max(a.y1, b.y1), min(a.x2, b.x2), min(a.y2, b.y2))


def _join(a: model.Box, b: model.Box) -> model.Box:
    return model.Box(min(a.x1, b.x1), min(a.y1, b.y1), max(a.x2, b.x2), max(a.y2, b.y2))


def _boxes(p: model.Predicate, q: model.Predicate) -> tuple[model.Predicate, ...]:
    # = A is one shape, and it satisfies the other side (they match): it is the agreement.
    if type(p) is model.BoxEq:
        return (p,)
    if type(q) is model.BoxEq:
        return (q,)
    kinds = {type(p), type(q)}
    a: model.Box = p.box  # type: ignore[union-attr]  # a BOX attribute's predicates
    b: model.Box = q.box  # type: ignore[union-attr]  # a BOX attribute's predicates
    if kinds == {model.BoxWithin}:
        return (model.BoxWithin(_meet(a, b)),)
    if kinds == {model.BoxContains}:
        return (model.BoxContains(_join(a, b)),)
    if kinds == {model.BoxOverlaps}:
        # Overlapping the smaller of two nested boxes implies overlapping the larger.
        if b.contains(a):
            return (p,)
        if a.contains(b):
            return (q,)
        return (p, q)
    if kinds == {model.BoxOverlaps, model.BoxContains}:
        overlap, contain = (a, b) if type(p) is model.BoxOverlaps else (b, a)
        if overlap.intersects(contain):
            return (p,) if type(p) is model.BoxContains else (q,)
        return (p, q)
    if kinds == {model.BoxOverlaps, model.BoxWithin}:
        overlap, within = (a, b) if type(p) is model.BoxOverlaps else (b, a)
        if overlap.contains(within):
            return (p,) if type(p) is model.BoxWithin else (q,)
        return (p, q)
    # CONTAINS A and WITHIN B: the boxes between A and B; one shape only when A is B.
    if a == b:
        return (model.BoxEq(a),)
    return (p, q)
