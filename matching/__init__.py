"""The constraint language and its exact matching semantics (SPEC 2 and 3).

Plain Python: nothing here imports Django. ``parse`` turns text or the JSON form
into a normalized ``Constraint``; ``to_text`` / ``to_json`` print it back;
``matches`` is the oracle every matching strategy must agree with; ``agree``
computes what a matching pair of disjuncts agrees on.
"""

from .agreement import Agreement, agree
from .api import parse, parse_literal, to_json
from .errors import ConstraintError
from .model import (
    Attribute,
    Box,
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Constraint,
    Disjunct,
    Interval,
    Point,
    PointEq,
    PointWithin,
    Predicate,
    Type,
    Value,
    Wildcard,
)
from .printer import to_lines, to_text
from .semantics import disjuncts_match, matches, matching_disjunct_pairs, predicates_intersect

__all__ = [
    "Agreement",
    "Attribute",
    "Box",
    "BoxContains",
    "BoxEq",
    "BoxOverlaps",
    "BoxWithin",
    "Constraint",
    "ConstraintError",
    "Disjunct",
    "Interval",
    "Point",
    "PointEq",
    "PointWithin",
    "Predicate",
    "Type",
    "Value",
    "Wildcard",
    "agree",
    "disjuncts_match",
    "matches",
    "matching_disjunct_pairs",
    "parse",
    "parse_literal",
    "predicates_intersect",
    "to_json",
    "to_lines",
    "to_text",
]
