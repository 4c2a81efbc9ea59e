"""The parsed, not yet normalized form shared by the text and the JSON front ends.

A tree of ``Atom`` (one written predicate, already type-checked), ``Not``, ``And``
and ``Or``. Each node keeps where it was written (``loc``: a text offset or a JSON
pointer) so that normalization errors can point at it.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import model
from .errors import Loc, error
from .intervals import WILDCARD, make
from .values import EXAMPLES, Lit, convert, infer_type, shown

MAX_PREDICATES = 256
MAX_DEPTH = 100

Schema = Mapping[str, model.Type]


class Atom:
    """One written predicate: its attribute, its point-set, where it was written.

    ``op`` is the operator as written (``=``, ``<``, ``BETWEEN``, ``IN``, ...) and is
    used to explain why an atom cannot be negated.
    """

    __slots__ = ("attr", "pred", "loc", "op")

    def __init__(self, attr: model.Attribute, pred: model.Predicate, loc: Loc, op: str) -> None:
        self.attr = attr
        self.pred = pred
        self.loc = loc
        self.op = op


class Not:
    __slots__ = ("child", "loc")

    def __init__(self, child: Node, loc: Loc) -> None:
        self.child = child
        self.loc = loc


class And:
    __slots__ = ("children", "loc")

    def __init__(self, children: list[Node], loc: Loc) -> None:
        self.children = children
        self.loc = loc


class Or:
    __slots__ = ("children", "loc")

    def __init__(self, children: list[Node], loc: Loc) -> None:
        self.children = children
        self.loc = loc


Node = Atom | Not | And | Or

_ORDERED_TYPES = frozenset(t for t in model.Type if t.ordered)
ORDERED_OPS = frozenset({"=", "!=", "<", "<=", ">", ">=", "BETWEEN", "IN"})
GEOMETRIC_OPS = frozenset({"WITHIN", "OVERLAPS", "CONTAINS"})

_OPERATORS_OF = {
    model.Type.POINT: "a point attribute takes = POINT(x, y), = * or WITHIN BOX(x1, y1, x2, y2)",
    model.Type.BOX: (
        "a box attribute takes = BOX(x1, y1, x2, y2), OVERLAPS BOX(...), CONTAINS BOX(...), "
        "WITHIN BOX(...) or = *"
    ),
}

_EMPTY_HINT = {
    "BETWEEN": "the first value must not be greater than the second",
    "IN": "the interval must contain at least one value",
}


class Counter:
    """Counts written predicates so that the 256-predicate limit fails early."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def tick(self, loc: Loc) -> None:
        self.n += 1
        check_predicate_count(self.n, loc)


def check_predicate_count(n: int, loc: Loc) -> None:
    """Refuse the ``n``-th written predicate of a constraint (at ``loc``) past the limit;
    both front ends call it as they read, so a huge input fails early."""
    if n > MAX_PREDICATES:
        raise error(
            "too_many_predicates",
            f"a constraint may have at most {MAX_PREDICATES} conditions; this is condition "
            f"number {n}: split the constraint into several offers or bids",
            loc,
        )


def attribute_type(
    name: str,
    prefix: model.Type | None,
    prefix_loc: Loc,
    op: str,
    lits: list[Lit],
    schema: Schema | None,
    loc: Loc,
) -> model.Type:
    """The attribute's type: the prefix, else the market's schema, else the literals."""
    for lit in lits:
        if lit.kind is None and (op != "=" or len(lits) > 1):
            if op == "!=":
                raise error(
                    "cannot_negate",
                    f"cannot negate a wildcard: {name} != * would match no value at all",
                    loc,
                )
            raise error("syntax", f"'*' (any value) is only written as {name} = *", lit.loc)
    known = schema.get(name) if schema is not None else None
    if prefix is not None:
        if known is not None and known is not prefix:
            raise error(
                "type_mismatch",
                f"{name} is {known.value} in this market, not {prefix.value}: "
                f"drop the prefix or write {known.value} {name}",
                prefix_loc,
            )
        return prefix
    if known is not None:
        return known
    if op in GEOMETRIC_OPS:
        return model.Type.BOX
    return infer_type(lits, name, loc)


def build(
    name: str,
    t: model.Type,
    op: str,
    op_loc: Loc,
    lits: list[Lit],
    bounds: str,
    loc: Loc,
) -> Node:
    """Type-check one written predicate and turn it into an ``Atom`` (or ``Not`` for ``!=``).

    ``op`` is one of ``= != < <= > >= BETWEEN IN WITHIN OVERLAPS CONTAINS``; ``bounds``
    is the IN interval's brackets, such as ``[)``. ``attribute_type`` has already
    refused a ``*`` anywhere but in ``= *``.
    """
    attr = model.Attribute(name, t)
    if t in _ORDERED_TYPES:
        if op not in ORDERED_OPS:
            raise error(
                "bad_operator",
                f"{op} is for point and box attributes; {name} is {t.value}, so use =, !=, <, "
                "<=, >, >=, BETWEEN or IN",
                op_loc,
            )
        first = lits[0]
        if first.kind is None:
            return Atom(attr, WILDCARD, loc, "*")
        v = convert(first, t, name)
        if op == "=":
            pred = make(t, v, True, v, True)
        elif op == "!=":
            eq = make(t, v, True, v, True)
            assert eq is not None
            return Not(Atom(attr, eq, loc, "="), loc)
        elif op == "<":
            pred = make(t, None, False, v, False)
        elif op == "<=":
            pred = make(t, None, False, v, True)
        elif op == ">":
            pred = make(t, v, False, None, False)
        elif op == ">=":
            pred = make(t, v, True, None, False)
        else:
            w = convert(lits[1], t, name)
            pred = make(t, v, bounds[0] == "[", w, bounds[1] == "]")
        if pred is None:
            raise error("empty_range", _empty_message(name, t, op, lits, bounds), loc)
        return Atom(attr, pred, loc, op)

    if op == "!=":
        raise error(
            "cannot_negate",
            f"cannot negate an equality on the {t.value} attribute {name}: {name} != ... "
            "would be every other shape; " + _OPERATORS_OF[t],
            loc,
        )
    if op not in GEOMETRIC_OPS and op != "=":
        raise error("bad_operator", f"{op} does not apply to {name}: " + _OPERATORS_OF[t], op_loc)
    if t is model.Type.POINT and op in ("OVERLAPS", "CONTAINS"):
        raise error("bad_operator", f"{op} does not apply to {name}: " + _OPERATORS_OF[t], op_loc)
    lit = lits[0]
    if lit.kind is None:
        return Atom(attr, WILDCARD, loc, "*")
    if op == "=":
        value = convert(lit, t, name)
        if t is model.Type.POINT:
            assert isinstance(value, model.Point)
            return Atom(attr, model.PointEq(value), loc, op)
        assert isinstance(value, model.Box)
        return Atom(attr, model.BoxEq(value), loc, op)
    if lit.kind is not model.Type.BOX:
        raise error(
            "type_mismatch",
            f"{op} needs {EXAMPLES[model.Type.BOX]}, not {shown(lit)}",
            lit.loc,
        )
    box = lit.raw
    assert isinstance(box, model.Box)
    if t is model.Type.POINT:
        return Atom(attr, model.PointWithin(box), loc, op)
    if op == "WITHIN":
        return Atom(attr, model.BoxWithin(box), loc, op)
    if op == "OVERLAPS":
        return Atom(attr, model.BoxOverlaps(box), loc, op)
    return Atom(attr, model.BoxContains(box), loc, op)


def _empty_message(name: str, t: model.Type, op: str, lits: list[Lit], bounds: str) -> str:
    a = shown(lits[0])
    if op == "BETWEEN":
        b = shown(lits[1])
        return (
            f"{name} BETWEEN {a} AND {b} contains no value: "
            f"{_EMPTY_HINT[op]} (perhaps {name} BETWEEN {b} AND {a})"
        )
    if op == "IN":
        b = shown(lits[1])
        return (
            f"{name} IN {bounds[0]}{a}, {b}{bounds[1]} contains no {t.value} value: "
            f"{_EMPTY_HINT[op]}"
        )
    return f"{name} {op} {a} contains no {t.value} value"


def describe_negation(atom: Atom) -> str:
    """Why ``NOT atom`` is refused, for the trader."""
    name = atom.attr.name
    if type(atom.pred) is model.Interval:
        raise AssertionError("intervals can be negated")
    if atom.op == "*":
        return f"cannot negate a wildcard: NOT {name} = * would match no value at all"
    if type(atom.pred) is model.Wildcard or atom.attr.type.ordered:
        return (
            f"cannot negate this condition on {name}: it allows every value, "
            "so its negation would allow none"
        )
    if atom.op == "=":
        return (
            f"cannot negate an equality on the {atom.attr.type.value} attribute {name}: "
            + _OPERATORS_OF[atom.attr.type]
        )
    return (
        f"cannot negate {atom.op} on {name}: the shapes that are not {atom.op.lower()} "
        "a box are not one condition; state what you want directly"
    )
