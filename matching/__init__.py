"""The constraint language and its exact matching semantics (SPEC 2 and 3).

Plain Python: nothing here imports Django. ``parse`` turns text or the JSON form
into a normalized ``Constraint``; ``to_text`` / ``to_json`` print it back;
``matches`` is the oracle every matching strategy must agree with; ``agree``
computes what a matching pair of disjuncts agrees on.
"""

from . import model
from .agreement import Agreement, agree
from .api import parse, parse_literal, to_json
from .errors import ConstraintError
from .model import *  # noqa: F403
from .printer import to_lines, to_text
from .semantics import disjuncts_match, matches, matching_disjunct_pairs, predicates_intersect

__all__ = [
    "Agreement",
    "ConstraintError",
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
# And the data model's names, the ones ``model.__all__`` lists (the star import above).
__all__ += model.__all__
