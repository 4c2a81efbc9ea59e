"""Canonical text (SPEC 2.5: the text is the canonical form).

Every normalized constraint prints as text that parses back to an equal
constraint. A type prefix is printed only where the text without it would give
the attribute another type: always for wildcards and for a point's WITHIN, for a
decimal whose values print as whole numbers (``decimal price = 5``) and for most
floats (``float x = 5.0``, since ``5.0`` alone is a decimal).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from . import model
from .lexer import KEYWORDS, is_identifier
from .values import format_value, printed_kind, widen


def quote_name(name: str, keywords: AbstractSet[str] = KEYWORDS) -> str:
    """An attribute name as the text syntax writes it: bare when it is an identifier that is
    none of ``keywords`` (the subscription language passes its own), else between double
    quotes with each ``"`` doubled. (A string literal's quoting, ``quote_string``, lives with
    the literals in ``values``, whose messages quote too.)"""
    if is_identifier(name, keywords):
        return name
    return '"' + name.replace('"', '""') + '"'


def to_text(constraint: model.Constraint) -> str:
    """The canonical text: disjuncts joined by OR, predicates by AND."""
    disjuncts = constraint.disjuncts
    if len(disjuncts) == 1:
        return disjunct_text(disjuncts[0])
    return " OR ".join(
        f"({disjunct_text(d)})" if len(d.items) > 1 else disjunct_text(d) for d in disjuncts
    )


def to_lines(constraint: model.Constraint) -> list[str]:
    """One line of canonical text per disjunct (as ``check_constraint`` prints them)."""
    return [disjunct_text(d) for d in constraint.disjuncts]


def disjunct_text(disjunct: model.Disjunct) -> str:
    return " AND ".join(predicate_text(attr, pred) for attr, pred in disjunct.items)


def box_text(box: model.Box) -> str:
    return f"BOX({box.x1!r}, {box.y1!r}, {box.x2!r}, {box.y2!r})"


def point_text(point: model.Point) -> str:
    return f"POINT({point.x!r}, {point.y!r})"


# The operator each box predicate prints with; its box operand needs no type prefix.
_BOX_OPERATORS: dict[type, str] = {
    model.BoxEq: "=",
    model.BoxOverlaps: "OVERLAPS",
    model.BoxContains: "CONTAINS",
    model.BoxWithin: "WITHIN",
}


def predicate_text(attr: model.Attribute, pred: model.Predicate) -> str:
    """One predicate as text, with the type prefix if the text alone would not imply the type."""
    t = attr.type
    name = quote_name(attr.name)
    kind = type(pred)
    if kind is model.Interval:
        return _interval_text(t, name, pred)  # type: ignore[arg-type]  # kind is type(pred): mypy does not narrow through it
    if kind is model.Wildcard:
        return f"{t.value} {name} = *"
    if kind is model.PointEq:
        return f"{name} = {point_text(pred.point)}"  # type: ignore[union-attr]  # as above
    if kind is model.PointWithin:
        return f"point {name} WITHIN {box_text(pred.box)}"  # type: ignore[union-attr]  # as above
    operator = _BOX_OPERATORS.get(kind)
    if operator is not None:
        return f"{name} {operator} {box_text(pred.box)}"  # type: ignore[union-attr]  # as above
    raise TypeError(f"not a predicate: {pred!r}")


def _interval_text(t: model.Type, name: str, iv: model.Interval) -> str:
    lo = None if iv.lo is None else format_value(t, iv.lo)
    hi = None if iv.hi is None else format_value(t, iv.hi)
    if lo is not None and hi is not None:
        if iv.lo == iv.hi:
            body, texts = f"= {lo}", [lo]
        elif iv.lo_closed and iv.hi_closed:
            body, texts = f"BETWEEN {lo} AND {hi}", [lo, hi]
        else:
            open_, close = "[" if iv.lo_closed else "(", "]" if iv.hi_closed else ")"
            body, texts = f"IN {open_}{lo}, {hi}{close}", [lo, hi]
    elif hi is not None:
        if t is model.Type.STRING and iv.hi == "" and iv.hi_closed:
            body = f"= {hi}"  # the only string <= '' is ''
        else:
            body = f"{'<=' if iv.hi_closed else '<'} {hi}"
        texts = [hi]
    else:
        assert lo is not None
        body, texts = f"{'>=' if iv.lo_closed else '>'} {lo}", [lo]
    if widen([printed_kind(t, text) for text in texts]) is t:
        return f"{name} {body}"
    return f"{t.value} {name} {body}"
