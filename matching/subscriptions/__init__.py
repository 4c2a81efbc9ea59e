"""The subscription language of SPEC 8.3 and its one evaluator. Plain Python, no Django.

``parse_query`` reads a query (forms 1 to 4), ``to_text`` prints its canonical text, and ``Subscription``
evaluates it over events given as plain dicts (SPEC 8.1) in ``seq`` order: the live path,
backtests and ``manage.py subscription_run`` all drive that same object. ``run_offline``
is the offline contract of SPEC 8.3 on top of it.
"""

from .errors import EventError, QueryError
from .evaluator import STATE_LIMIT, End, Notification, Subscription, run_offline
from .events import Event, event_from_dict, parse_timestamp
from .forms import Kind
from .model import AtomicQuery, CompositeQuery, Query, WatchQuery
from .parser import parse_query
from .pattern_model import PatternQuery
from .printer import to_text

__all__ = [
    "STATE_LIMIT",
    "End",
    "Event",
    "Notification",
    "Subscription",
    "event_from_dict",
    "parse_timestamp",
    "run_offline",
    "AtomicQuery",
    "CompositeQuery",
    "PatternQuery",
    "WatchQuery",
    "EventError",
    "Kind",
    "Query",
    "QueryError",
    "parse_query",
    "to_text",
]
