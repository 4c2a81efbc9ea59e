"""Parsing a query as the exchange accepts it: SPEC 8.3's language, and no condition that
no event can pass on a closed set's attribute (``closed_sets``)."""

from __future__ import annotations

from .closed_sets import CHECKING
from .model import Query
from .parser import parse_query


def parse_query_checked(text: str) -> Query:
    """``parse_query(text)``, refusing (``QueryError`` ``never_matches``) a condition on a
    closed set's attribute that no value of the set passes."""
    token = CHECKING.set(True)
    try:
        return parse_query(text)
    finally:
        CHECKING.reset(token)
