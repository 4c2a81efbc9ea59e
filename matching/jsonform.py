"""The JSON form (SPEC 2.5): the same language as nested objects.

An expression is an object whose members are ANDed. A member is either a
combinator (``"any_of": [...]`` OR, ``"all_of": [...]`` AND, ``"not": {...}``) or an
attribute key (``"lot"``, ``"int lot"``, ``"\\"unit price\\""``: the text syntax's
``[type] name``) mapped to a predicate object (``{"ge": 1000, "le": 5000}``, members
ANDed), to ``"*"`` (the wildcard) or to a bare value (equality). Docs:
``docs/matching.md``.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

from . import model
from .errors import ConstraintError, error
from .lexer import TYPE_KEYWORDS, Kind, Token, tokenize, unquote
from .printer import quote_name
from .syntax import MAX_DEPTH, And, Counter, Node, Not, Or, Schema, attribute_type, build
from .values import (
    NUMBER_RE,
    Lit,
    check_decimal,
    check_int,
    check_plain_decimal,
    check_text,
    coordinate,
    format_decimal,
    format_timestamp_body,
    number_lit,
)

_OPS = {
    "eq": "=",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "between": "BETWEEN",
    "in": "IN",
    "within": "WITHIN",
    "overlaps": "OVERLAPS",
    "contains": "CONTAINS",
    "any": "=",
}
_BOUNDS = ("[]", "[)", "(]", "()")
_NUMERIC = (model.Type.INT, model.Type.DECIMAL, model.Type.FLOAT)


def escape(key: str) -> str:
    """A member name as a JSON pointer (RFC 6901) reference token."""
    return key.replace("~", "~0").replace("/", "~1")


def _what(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float | Decimal):
        return "a number"
    return type(value).__name__


def parse_tree(obj: Any, schema: Schema | None) -> Node:
    """The syntax tree of a decoded JSON value; ``ConstraintError`` (with ``.path``) if invalid."""
    return _JsonParser(schema).expr(obj, "", 0)


class _JsonParser:
    __slots__ = ("schema", "counter")

    def __init__(self, schema: Schema | None) -> None:
        self.schema = schema
        self.counter = Counter()

    def expr(self, obj: Any, path: str, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise error(
                "too_deep", f"conditions are nested more than {MAX_DEPTH} deep; simplify", path
            )
        if not isinstance(obj, dict):
            raise error(
                "syntax",
                'expected an object of conditions, such as {"lot": {"ge": 1000}} or '
                f'{{"any_of": [...]}}; found {_what(obj)}',
                path,
            )
        if not obj:
            raise error(
                "syntax",
                'an empty object states no condition: give at least one, such as {"lot": {"ge": 1000}}',
                path,
            )
        children: list[Node] = []
        for key, value in obj.items():
            if not isinstance(key, str):
                raise error("syntax", "object keys must be strings", path)
            member = f"{path}/{escape(key)}"
            if key == "any_of" or key == "all_of":
                if not isinstance(value, list) or not value:
                    raise error(
                        "syntax",
                        f"{key} takes a non-empty list of conditions; found {_what(value)}",
                        member,
                    )
                kids = [self.expr(v, f"{member}/{i}", depth + 1) for i, v in enumerate(value)]
                if len(kids) == 1:
                    children.append(kids[0])
                else:
                    children.append(Or(kids, member) if key == "any_of" else And(kids, member))
            elif key == "not":
                children.append(Not(self.expr(value, member, depth + 1), member))
            else:
                children.extend(self.attribute(key, value, member))
        return children[0] if len(children) == 1 else And(children, path)

    def attribute(self, key: str, value: Any, path: str) -> list[Node]:
        name, prefix = self.key(key, path)
        prefix_loc = path
        ops: list[tuple[str, Any, str]] = []
        if isinstance(value, dict):
            if not value:
                raise error(
                    "syntax",
                    f'{name} needs at least one condition, such as {{"eq": 5}} or {{"any": true}}',
                    path,
                )
            for op_key, operand in value.items():
                member = f"{path}/{escape(str(op_key))}"
                if op_key == "type":
                    declared = (
                        TYPE_KEYWORDS.get(operand.lower()) if isinstance(operand, str) else None
                    )
                    if declared is None:
                        raise error(
                            "syntax",
                            f"type must be one of {', '.join(sorted(TYPE_KEYWORDS))}; "
                            f"found {_what(operand)}",
                            member,
                        )
                    if prefix is not None and prefix is not declared:
                        raise error(
                            "type_mismatch",
                            f"the key says {prefix.value} but type says {declared.value}",
                            member,
                        )
                    prefix, prefix_loc = declared, member
                elif op_key in _OPS:
                    ops.append((op_key, operand, member))
                else:
                    raise error(
                        "syntax",
                        f"unknown operator {op_key!r}: use eq, ne, lt, le, gt, ge, between, in, "
                        "any, within, overlaps or contains (and type)",
                        member,
                    )
            if not ops:
                raise error("syntax", f"{name} has a type but no condition", path)
        elif isinstance(value, str) and value == "*":
            ops.append(("any", True, path))
        elif isinstance(value, str | int | float | Decimal) and not isinstance(value, bool):
            ops.append(("eq", value, path))
        else:
            raise error(
                "syntax",
                f'expected a condition for {name}, such as {{"eq": 5}}, {{"between": [1, 9]}} '
                f'or "*"; found {_what(value)}',
                path,
            )
        schema = self.schema
        known = prefix if prefix is not None else (schema.get(name) if schema else None)
        nodes: list[Node] = []
        for op_key, operand, member in ops:
            self.counter.tick(member)
            op = _OPS[op_key]
            bounds = "[]"
            if op_key == "any":
                if operand is not True:
                    raise error("syntax", f'"any" takes true; found {_what(operand)}', member)
                lits = [Lit(None, "*", member)]
            elif op_key == "between":
                if not isinstance(operand, list) or len(operand) != 2:
                    raise error(
                        "syntax",
                        f"between takes a list of two values, such as [1, 9]; found {_what(operand)}",
                        member,
                    )
                lits = [self.lit(v, known, f"{member}/{i}") for i, v in enumerate(operand)]
            elif op_key == "in":
                bounds, lits = self.interval(operand, known, member)
            else:
                lits = [self.lit(operand, known, member)]
            t = attribute_type(name, prefix, prefix_loc, op, lits, schema, member)
            nodes.append(build(name, t, op, member, lits, bounds, member))
        return nodes

    def key(self, key: str, path: str) -> tuple[str, model.Type | None]:
        try:
            toks = tokenize(key)
        except ConstraintError:
            toks = []
        prefix: model.Type | None = None
        name_tok = Token(Kind.END, "", 0)
        if len(toks) == 3 and toks[0].kind is Kind.KEYWORD and toks[0].text in TYPE_KEYWORDS:
            prefix, name_tok = TYPE_KEYWORDS[toks[0].text], toks[1]
        elif len(toks) == 2:
            name_tok = toks[0]
        if name_tok.kind is Kind.NAME:
            return name_tok.text, prefix
        if name_tok.kind is Kind.QUOTED_NAME:
            name = unquote(name_tok)
            if name:
                check_text(name, path, "an attribute name")
                return name, prefix
        raise error(
            "syntax",
            f"{key!r} is not an attribute: write a name such as lot, optionally after its type "
            "(int lot); put a name that is not a plain word or is a reserved word in double "
            'quotes ("\\"unit price\\"")',
            path,
        )

    def interval(self, operand: Any, known: model.Type | None, path: str) -> tuple[str, list[Lit]]:
        if not isinstance(operand, dict) or "lo" not in operand or "hi" not in operand:
            raise error(
                "syntax",
                'in takes an object such as {"lo": 1, "hi": 9, "bounds": "[)"}; '
                f"found {_what(operand)}",
                path,
            )
        bounds = operand.get("bounds", "[]")
        if bounds not in _BOUNDS:
            raise error(
                "syntax",
                'bounds is one of "[]", "[)", "(]" or "()" ("[" includes lo, "(" excludes it)',
                f"{path}/bounds",
            )
        extra = set(operand) - {"lo", "hi", "bounds"}
        if extra:
            raise error(
                "syntax",
                "in takes only lo, hi and bounds",
                f"{path}/{escape(min(map(str, extra)))}",
            )
        lo = self.lit(operand["lo"], known, f"{path}/lo")
        hi = self.lit(operand["hi"], known, f"{path}/hi")
        return bounds, [lo, hi]

    def lit(self, value: Any, known: model.Type | None, path: str) -> Lit:
        if isinstance(value, bool) or value is None:
            raise error("bad_literal", f"{_what(value)} is not a value here", path)
        if isinstance(value, int):
            check_int(value, path)
            return Lit(model.Type.INT, value, path)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise error("bad_literal", "NaN and infinities are not values", path)
            value = Decimal(repr(value))  # repr: at most 17 digits
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise error("bad_literal", "NaN and infinities are not values", path)
            check_decimal(value, path)
            if known is not model.Type.FLOAT:
                check_plain_decimal(value, path)
            return Lit(model.Type.DECIMAL, value, path)
        if isinstance(value, str):
            if known in _NUMERIC:
                if NUMBER_RE.match(value) is None:
                    raise error(
                        "bad_literal",
                        f"{value[:40]!r} is not a number; numbers look like 42, -7, 1.00 or 1.5e3",
                        path,
                    )
                return number_lit(value, path)
            if known is model.Type.DATE:
                return Lit(model.Type.DATE, value, path)
            if known is model.Type.TIMESTAMP:
                return Lit(model.Type.TIMESTAMP, value, path)
            return Lit(model.Type.STRING, value, path)
        if isinstance(value, dict) and len(value) == 1:
            ((tag, inner),) = value.items()
            member = f"{path}/{escape(str(tag))}"
            if tag in ("date", "timestamp"):
                if not isinstance(inner, str):
                    raise error(
                        "bad_literal", f"{tag} takes a string; found {_what(inner)}", member
                    )
                return Lit(
                    model.Type.DATE if tag == "date" else model.Type.TIMESTAMP, inner, member
                )
            if tag == "point":
                x, y = self.coordinates(inner, 2, member)
                return Lit(model.Type.POINT, model.Point(x, y), member)
            if tag == "box":
                x1, y1, x2, y2 = self.coordinates(inner, 4, member)
                return Lit(model.Type.BOX, model.Box.of(x1, y1, x2, y2), member)
        raise error(
            "bad_literal",
            "expected a value: a number, a string, or an object such as "
            '{"date": "2026-11-20"}, {"timestamp": "2026-11-20T10:00:00Z"}, '
            f'{{"point": [1, 2]}} or {{"box": [0, 0, 1, 1]}}; found {_what(value)}',
            path,
        )

    def coordinates(self, inner: Any, n: int, path: str) -> list[float]:
        if not isinstance(inner, list) or len(inner) != n:
            raise error(
                "bad_literal", f"expected a list of {n} numbers; found {_what(inner)}", path
            )
        out = []
        for i, v in enumerate(inner):
            member = f"{path}/{i}"
            if isinstance(v, bool) or not isinstance(v, int | float | Decimal | str):
                raise error(
                    "bad_literal", f"a coordinate must be a number; found {_what(v)}", member
                )
            out.append(coordinate(self.lit(v, model.Type.FLOAT, member)))
        return out


# -- printing -------------------------------------------------------------------------------


def constraint_to_json(constraint: model.Constraint) -> dict[str, Any]:
    """The JSON form of a normalized constraint: always ``{"any_of": [...]}``.

    Keys always carry the type (``"int lot"``), so the object means the same inside
    and outside a market.
    """
    return {"any_of": [disjunct_to_json(d) for d in constraint.disjuncts]}


def disjunct_to_json(disjunct: model.Disjunct) -> dict[str, Any]:
    return {attribute_key(a): predicate_to_json(a.type, p) for a, p in disjunct.items}


def attribute_key(attr: model.Attribute) -> str:
    return f"{attr.type.value} {quote_name(attr.name)}"


def value_to_json(t: model.Type, value: model.Value) -> Any:
    if t is model.Type.DECIMAL:
        assert isinstance(value, Decimal)
        return format_decimal(value)  # a string keeps every digit; the key's type reads it back
    if t is model.Type.DATE:
        assert isinstance(value, dt.date)
        return value.isoformat()
    if t is model.Type.TIMESTAMP:
        assert isinstance(value, dt.datetime)
        return format_timestamp_body(value)
    return value


def _box(box: model.Box) -> dict[str, list[float]]:
    return {"box": [box.x1, box.y1, box.x2, box.y2]}


def predicate_to_json(t: model.Type, pred: model.Predicate) -> dict[str, Any]:
    kind = type(pred)
    if kind is model.Wildcard:
        return {"any": True}
    if kind is model.Interval:
        iv: model.Interval = pred  # type: ignore[assignment]  # kind is type(pred): mypy does not narrow through it
        lo = None if iv.lo is None else value_to_json(t, iv.lo)
        hi = None if iv.hi is None else value_to_json(t, iv.hi)
        if iv.lo is None:
            return {"le" if iv.hi_closed else "lt": hi}
        if iv.hi is None:
            return {"ge" if iv.lo_closed else "gt": lo}
        if iv.lo == iv.hi:
            return {"eq": lo}
        if iv.lo_closed and iv.hi_closed:
            return {"between": [lo, hi]}
        bounds = ("[" if iv.lo_closed else "(") + ("]" if iv.hi_closed else ")")
        return {"in": {"lo": lo, "hi": hi, "bounds": bounds}}
    if kind is model.PointEq:
        point: model.Point = pred.point  # type: ignore[union-attr]  # as above
        return {"eq": {"point": [point.x, point.y]}}
    if kind is model.PointWithin or kind is model.BoxWithin:
        return {"within": _box(pred.box)}  # type: ignore[union-attr]  # as above
    if kind is model.BoxEq:
        return {"eq": _box(pred.box)}  # type: ignore[union-attr]  # as above
    if kind is model.BoxOverlaps:
        return {"overlaps": _box(pred.box)}  # type: ignore[union-attr]  # as above
    if kind is model.BoxContains:
        return {"contains": _box(pred.box)}  # type: ignore[union-attr]  # as above
    raise TypeError(f"not a predicate: {pred!r}")
