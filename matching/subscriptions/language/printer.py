"""Canonical text of a parsed query: ``parse_query(to_text(q)) == q`` for every query.

Items keep their order and spelling rules (``AVG(price, 2)``, ``AS`` names quoted only
when needed); conditions print in their normalized form (SPEC 2.4), followed by the time
bounds; ``GROUP BY`` comes before ``HAVING``. Durations use the largest unit that divides
them (``NOW - 60m`` prints as ``NOW - 1h``).
"""

from __future__ import annotations

import matching
from matching import Constraint, Disjunct, Type
from matching.subscriptions.patterns.model import PatternQuery
from matching.subscriptions.patterns.printer import pattern_text
from matching.values import format_value, quote_string

from . import model
from .clauses import UNITS, result_type
from .lexer import name_text
from .schema import END_TIME, START_TIME


def to_text(query: model.Query) -> str:
    """The canonical text of ``query``."""
    if isinstance(query, PatternQuery):
        return pattern_text(query)
    if isinstance(query, model.CompositeQuery):
        return _composite(query)
    if isinstance(query, model.WatchQuery):
        return _watch(query)
    return _atomic(query)


def _atomic(q: model.AtomicQuery) -> str:
    parts = ["SELECT " + _select(q.select)]
    where = [condition_text(c) for c in q.conditions] + _bounds("", q.time)
    if where:
        parts.append("WHERE " + ", ".join(where))
    if q.group_by:
        parts.append("GROUP BY " + ", ".join(name_text(g) for g in q.group_by))
    if q.having is not None:
        parts.append(_having(q.having))
    return " ".join(parts)


def _composite(q: model.CompositeQuery) -> str:
    select = "*" if q.select is None else ", ".join(f"{i.alias}.{i.attribute}" for i in q.select)
    where = [condition_text(c) for c in q.conditions]
    where += [_join(j) for j in q.joins]
    where += _bounds("", q.time)
    for alias, time in q.alias_times:
        where += _bounds(alias + ".", time)
    return f"SELECT {select} FROM {' AND '.join(q.aliases)} WHERE {', '.join(where)}"


def _watch(q: model.WatchQuery) -> str:
    attribute = name_text(q.attribute)
    if q.func is None:
        text = f"SELECT {attribute} FROM offers WHERE offer = {q.offer}"
    else:
        where = ", ".join(condition_text(c) for c in q.conditions)
        text = f"SELECT {q.func}({attribute}) FROM offers WHERE {where}"
    if q.threshold is not None:
        text += " NOTIFY WHEN CHANGED BY " + threshold_text(q.threshold)
    return text


def threshold_text(t: model.Threshold) -> str:
    return format_value(Type.DECIMAL, t.amount) + ("%" if t.percent else "")


def _select(items: tuple[model.Item, ...] | None) -> str:
    if items is None:
        return "*"
    return ", ".join(
        item_text(i) + ("" if i.name is None else f" AS {name_text(i.name)}") for i in items
    )


def item_text(item: model.Item) -> str:
    """An item without its ``AS`` name: ``price``, ``a.price`` or ``AVG(price, 2)``."""
    if isinstance(item, model.Aggregate):
        return aggregate_text(item)
    assert isinstance(item, model.Attr)
    name = name_text(item.attribute)
    return name if item.alias is None else f"{item.alias}.{name}"


def aggregate_text(a: model.Aggregate) -> str:
    return f"{a.func}({name_text(a.attribute)}, {a.n})"


def condition_text(c: model.Condition) -> str:
    if len(c.disjuncts) == 1:
        (tests,) = c.disjuncts
        body = " AND ".join(test_text(t) for t in tests)
        needs_parens = len(tests) > 1 or any(
            isinstance(t, model.SubjectTest) and t.negated for t in tests
        )
        return f"({body})" if needs_parens else body
    texts = []
    for tests in c.disjuncts:
        body = " AND ".join(test_text(t) for t in tests)
        texts.append(f"({body})" if len(tests) > 1 else body)
    return "(" + " OR ".join(texts) + ")"


def test_text(t: model.Test) -> str:
    prefix = "" if t.alias is None else t.alias + "."
    if isinstance(t, model.SubjectTest):
        return f"{'NOT ' if t.negated else ''}{prefix}subject MATCHES {quote_string(t.pattern)}"
    text = matching.to_text(
        Constraint((Disjunct(((matching.Attribute(t.attribute, t.type), t.predicate),)),))
    )
    # The event schema types every attribute, so the prefix SPEC 2 prints is never needed.
    type_prefix = f"{t.type.value} "
    if text.startswith(type_prefix):
        text = text[len(type_prefix) :]
    return prefix + text


def _join(j: model.Join) -> str:
    return f"{j.left_alias}.{j.left} {j.op} {j.right_alias}.{j.right}"


def _bounds(prefix: str, time: model.TimeRange) -> list[str]:
    out = []
    for name, bound in ((START_TIME, time.start), (END_TIME, time.end)):
        if bound is not None:
            out.append(f"{prefix}{name} = {bound_text(bound)}")
    return out


def bound_text(b: model.TimeBound) -> str:
    if b.at is not None:
        return format_value(Type.TIMESTAMP, b.at)
    if b.offset == 0:
        return "NOW"
    seconds = abs(b.offset)
    unit = next(u for u, size in UNITS.items() if seconds % size == 0)
    return f"NOW {'+' if b.offset > 0 else '-'} {seconds // UNITS[unit]}{unit}"


def _having(h: model.Having) -> str:
    value = format_value(result_type(h.aggregate), h.value)
    text = f"HAVING {aggregate_text(h.aggregate)} {h.op} {value}"
    return text + (" RESET" if h.reset else "")
