"""Canonical text of form 3: ``parse_query(pattern_text(q)) == q`` for every pattern.

Conditions print with ``NOT`` already pushed down (``NOT b.price > 1`` prints as
``b.price <= 1``), ``AND`` and ``OR`` flattened, and parentheses only where ``OR`` sits
inside ``AND``; arithmetic prints left-associated with parentheses only where the tree
needs them; numbers keep the digits they were written with, durations take their largest
unit (``60m`` prints as ``1h``), and ``<>`` prints as ``!=``.
"""

from __future__ import annotations

import datetime as dt

from matching import Type
from matching.subscriptions.language.clauses import UNITS
from matching.subscriptions.language.lexer import name_text
from matching.values import format_value, quote_string

from . import model as pattern_model
from .parser import item_key

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def pattern_text(query: pattern_model.PatternQuery) -> str:
    return " UNION ".join(_pattern(p) for p in query.sides)


def _pattern(p: pattern_model.Pattern) -> str:
    items = []
    for item in p.select:
        if item.name is None:
            items.append(item_key(item))
        else:
            bare = item.__class__(item.expr, None)
            items.append(f"{item_key(bare)} AS {name_text(item.name)}")
    parts = [f"SELECT {', '.join(items)} FROM {_source(p.first)}"]
    parts += [_step(s) for s in p.steps]
    if p.where is not None:
        parts.append("WHERE " + cond_text(p.where))
    if p.within is not None:
        parts.append("WITHIN " + duration_text(p.within))
    return " ".join(parts)


def _source(s: pattern_model.Source) -> str:
    if s.filter is None:
        return f"EVENTS AS {s.alias}"
    return f"FILTER{{{cond_text(s.filter)}}}(EVENTS) AS {s.alias}"


def _step(s: pattern_model.Step) -> str:
    inside = [cond_text(s.condition)]
    if s.rebind is not None:
        inside.append(cond_text(s.rebind))
    for a in s.aggregates:
        func = a.func if a.argument is None else f"{a.func}({expr_text(a.argument)})"
        inside.append(f"{func} AS {name_text(a.name)}")
    return f"{s.kind.upper()}{{{', '.join(inside)}}} {_source(s.source)}"


def cond_text(c: pattern_model.Cond) -> str:
    if isinstance(c, pattern_model.Compare):
        return f"{expr_text(c.left)} {c.op} {expr_text(c.right)}"
    if isinstance(c, pattern_model.Matches):
        return f"{'NOT ' if c.negated else ''}{expr_text(c.ref)} MATCHES {quote_string(c.pattern)}"
    if isinstance(c, pattern_model.All):
        return " AND ".join(
            f"({cond_text(p)})" if isinstance(p, pattern_model.Any_) else cond_text(p)
            for p in c.parts
        )
    return " OR ".join(cond_text(p) for p in c.parts)


def expr_text(e: pattern_model.Expr | pattern_model.Bound) -> str:
    if isinstance(e, pattern_model.Arithmetic):
        mine = _PRECEDENCE[e.op]
        left, right = expr_text(e.left), expr_text(e.right)
        if isinstance(e.left, pattern_model.Arithmetic) and _PRECEDENCE[e.left.op] < mine:
            left = f"({left})"
        if isinstance(e.right, pattern_model.Arithmetic) and _PRECEDENCE[e.right.op] <= mine:
            right = f"({right})"
        return f"{left} {e.op} {right}"
    if isinstance(e, pattern_model.Ref):
        prefix = "" if e.alias is None else f"{e.alias}.{'last.' if e.last else ''}"
        return prefix + (e.attribute if prefix else name_text(e.attribute))
    if isinstance(e, pattern_model.Literal):
        v = e.value
        if isinstance(v, str):
            return quote_string(v)
        if isinstance(v, dt.datetime):
            return format_value(Type.TIMESTAMP, v)
        return str(v)
    if isinstance(e, pattern_model.Duration):
        return duration_text(e.seconds)
    if isinstance(e, pattern_model.Dur):
        return "DUR"
    if isinstance(e, pattern_model.AggregateRef):
        return name_text(e.name)
    return e.which


def duration_text(seconds: int) -> str:
    unit = next((u for u, size in UNITS.items() if seconds % size == 0), "s")
    return f"{seconds // UNITS[unit]}{unit}"
