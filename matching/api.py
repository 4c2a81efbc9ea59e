"""The public entry points of the language: parse and print."""

from __future__ import annotations

from typing import Any

from . import jsonform, parser
from .errors import ConstraintError, Loc, error
from .lexer import Kind, Token, tokenize
from .model import Box, Constraint, Point, Type, Value
from .normalize import normalize
from .printer import to_text
from .syntax import Node, Schema
from .values import convert

# A text this short cannot print longer than MAX_LENGTH as one disjunct (at most
# about 50 predicates, each printing at most a few dozen characters longer).
_SHORT_TEXT = 200


def parse(source: str | dict[str, Any], *, schema: Schema | None = None) -> Constraint:
    """Parse and normalize a constraint given as text or as the decoded JSON form.

    ``schema`` (attribute name -> type) is the market's: it types unprefixed
    attributes, and a prefix that disagrees with it is an error. Raises
    ``ConstraintError`` and nothing else, whatever ``source`` is.
    """
    if isinstance(source, str):
        return normalize_text(parser.parse_tree(source, schema), 0, len(source))
    if isinstance(source, dict):
        constraint = normalize(jsonform.parse_tree(source, schema), "")
        _check_printable(constraint, "")
        return constraint
    raise ConstraintError(
        'expected a constraint: text, or a JSON object such as {"any_of": [{"lot": {"ge": 1000}}]}',
        None,
        code="syntax",
        path="",
    )


def normalize_text(tree: Node, loc: int, length: int) -> Constraint:
    """The normalized constraint of ``tree``, read from ``length`` characters of text that
    begin at ``loc`` (where errors about the whole point): ``parse``'s second half, shared
    with the subscription language's conditions."""
    constraint = normalize(tree, loc)
    if length > _SHORT_TEXT or len(constraint.disjuncts) > 1:
        _check_printable(constraint, loc)
    return constraint


def _check_printable(constraint: Constraint, loc: Loc) -> None:
    # The canonical text must parse back, so it must respect the length limit too.
    length = len(to_text(constraint))
    if length > parser.MAX_LENGTH:
        raise error(
            "too_long",
            f"once normalized this constraint is {length:,} characters long as text, more "
            f"than the {parser.MAX_LENGTH:,} allowed: simplify it or split it",
            loc,
        )


def to_json(constraint: Constraint) -> dict[str, Any]:
    """The JSON form of a normalized constraint; ``parse`` maps it back to an equal one."""
    return jsonform.constraint_to_json(constraint)


def parse_literal(text: str, type: Type) -> Value | Point | Box:
    """One literal of the text syntax as a value of ``type``: ``parse_literal("1.00", Type.DECIMAL)``.

    A date or timestamp literal may be written with or without its keyword
    (``DATE '2026-11-20'`` or ``'2026-11-20'``).
    """
    parser.check_length(text)
    tokens = tokenize(text)
    p = parser.Parser(tokens, None)
    lit = p.value(Token(Kind.OPERATOR, "=", 0))
    end = tokens[p.i]
    if end.kind is not Kind.END:
        raise ConstraintError(
            f"expected a single value, found {parser.describe(end)}", end.position
        )
    if type in (Type.DATE, Type.TIMESTAMP) and lit.kind is Type.STRING:
        lit.kind = type
    return convert(lit, type, "the value")
