"""The exact matching semantics (SPEC 3): the plain-Python oracle every strategy must equal.

P matches S iff some disjunct ``dp`` of P and some ``ds`` of S satisfy: every
attribute of ``dp`` is constrained in ``ds``, and for each such attribute the two
point-sets intersect. Attributes only ``ds`` constrains do not matter.
"""

from __future__ import annotations

from . import model
from .api import parse
from .intervals import overlaps


def predicates_intersect(attr_type: model.Type, p: model.Predicate, q: model.Predicate) -> bool:
    """Whether two predicates on one attribute of type ``attr_type`` share a value."""
    if type(p) is model.Wildcard or type(q) is model.Wildcard:
        return True
    if attr_type.ordered:
        return overlaps(p, q)  # type: ignore[arg-type]  # an ordered type's predicates are intervals
    if attr_type is model.Type.POINT:
        return _points_intersect(p, q)
    return _boxes_intersect(p, q)


def _points_intersect(p: model.Predicate, q: model.Predicate) -> bool:
    if type(p) is model.PointEq:
        if type(q) is model.PointEq:
            return p.point == q.point
        return q.box.contains_point(p.point)  # type: ignore[union-attr]  # a POINT attribute's predicates are points or boxes
    if type(q) is model.PointEq:
        return p.box.contains_point(q.point)  # type: ignore[union-attr]  # as above
    return p.box.intersects(q.box)  # type: ignore[union-attr]  # as above


# Box predicates in the order of the SPEC 3.2 table; the table is symmetric, so a
# pair is looked up with the lower rank first.
_BOX_RANK: dict[type[model.Predicate], int] = {
    model.BoxEq: 0,
    model.BoxOverlaps: 1,
    model.BoxContains: 2,
    model.BoxWithin: 3,
}


def _boxes_intersect(p: model.Predicate, q: model.Predicate) -> bool:
    if _BOX_RANK[type(p)] > _BOX_RANK[type(q)]:
        p, q = q, p
    a: model.Box = p.box  # type: ignore[union-attr]  # a BOX attribute's predicates
    b: model.Box = q.box  # type: ignore[union-attr]  # as above
    kp, kq = type(p), type(q)
    if kp is model.BoxEq:
        if kq is model.BoxEq:
            return a == b
        if kq is model.BoxOverlaps:
            return a.intersects(b)
        if kq is model.BoxContains:
            return a.contains(b)
        return b.contains(a)  # = A, WITHIN B: A lies inside B
    if kp is model.BoxOverlaps:
        if kq is model.BoxWithin:
            return a.intersects(b)
        return True  # OVERLAPS/OVERLAPS and OVERLAPS/CONTAINS: a large enough box does both
    if kp is model.BoxContains:
        if kq is model.BoxWithin:
            return b.contains(a)  # something contains A and lies inside B
        return True  # CONTAINS/CONTAINS: the bounding box of both
    return a.intersects(b)  # WITHIN/WITHIN: a point they share


def disjuncts_match(dp: model.Disjunct, ds: model.Disjunct) -> bool:
    """Whether publication disjunct ``dp`` matches subscription disjunct ``ds``."""
    sub = ds.mapping
    for attr, p in dp.items:
        q = sub.get(attr)
        if q is None or not predicates_intersect(attr.type, p, q):
            return False
    return True


def _constraint(value: model.Constraint | str) -> model.Constraint:
    if isinstance(value, model.Constraint):
        return value
    return parse(value)


def matching_disjunct_pairs(
    publication: model.Constraint | str, subscription: model.Constraint | str
) -> list[tuple[int, int]]:
    """Every ``(i, j)`` such that disjunct ``i`` of the publication matches disjunct ``j``."""
    pub, sub = _constraint(publication), _constraint(subscription)
    return [
        (i, j)
        for i, dp in enumerate(pub.disjuncts)
        for j, ds in enumerate(sub.disjuncts)
        if disjuncts_match(dp, ds)
    ]


def matches(publication: model.Constraint | str, subscription: model.Constraint | str) -> bool:
    """SPEC 3.1: whether the publication matches the subscription (texts are parsed first)."""
    pub, sub = _constraint(publication), _constraint(subscription)
    return any(disjuncts_match(dp, ds) for dp in pub.disjuncts for ds in sub.disjuncts)
