"""The exchange's matching, Django-free: the constraint language and its exact semantics
(SPEC 2 and 3) here, and around them the subpackages that build on it.

This package itself is the core: ``parse`` turns text or the JSON form into a normalized
``Constraint``; ``to_text`` / ``to_json`` print it back; ``matches`` is the oracle every
matching strategy must agree with; ``agree`` computes what a matching pair of disjuncts
agrees on; ``subjects`` holds market subjects and their patterns. Nothing in it imports
Django (an import contract in pyproject.toml keeps it so).

Around the core:

* ``store``: the PostgreSQL constraint store and its match strategies (SPEC 4);
* ``spark``: the Spark batch matcher (SPEC 7), and ``workload`` the load-test workloads
  it generates;
* ``subscriptions``: the subscription language of SPEC 8.3 and its one evaluator;
* ``index``: the matching index of SPEC 8.2 for stateless subscriptions;
* ``dissemination``: getting range watches' new answers to the processes that hold them.

``subscriptions``, ``index`` and ``dissemination`` are plain Python too; ``store``, ``spark``
and ``workload`` talk to PostgreSQL or Spark but never to Django.
"""

from . import model
from .agreement import Agreement, agree
from .api import parse, parse_literal, to_json
from .errors import ConstraintError
from .model import *  # noqa: F403 - the data model is the package's vocabulary
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
