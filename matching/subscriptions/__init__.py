"""The subscription language of SPEC 8.3 and its one evaluator. Plain Python, no Django.

``parse_query`` reads a query (forms 1 to 4), ``to_text`` prints its canonical text, and ``Subscription``
evaluates it over events given as plain dicts (SPEC 8.1) in ``seq`` order: the live path,
backtests and ``manage.py subscription_run`` all drive that same object. ``run_offline``
is the offline contract of SPEC 8.3 on top of it.

The package shows the language's parts: ``language/`` (tokens, the parser of forms 1, 2
and 4, the parsed model, the canonical printer, the exchange's extra checks), ``patterns/``
(form 3: its model, parser and printer, automata, and groups of similar patterns run
together), ``watches/`` (form 4 over the open offers) and ``run/`` (the evaluator, each
form's engine, many subscriptions at once in ``multi``, the work limits and the versioned
snapshots of an evaluator's state); ``events`` and ``errors`` are shared by all four.
"""

from .errors import EventError, QueryError
from .events import Event, event_from_dict, parse_timestamp
from .language.forms import Kind
from .language.model import AtomicQuery, CompositeQuery, Query, WatchQuery
from .language.parser import parse_query
from .language.printer import to_text
from .patterns.model import PatternQuery
from .run.evaluator import STATE_LIMIT, End, Notification, Subscription, run_offline

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
