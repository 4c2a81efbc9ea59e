"""The text syntax (SPEC 2.3): a recursive-descent parser over ``lexer`` tokens.

    constraint := or_expr
    or_expr    := and_expr ( OR and_expr )*
    and_expr   := not_expr ( AND not_expr )*
    not_expr   := NOT not_expr | '(' or_expr ')' | predicate
    predicate  := [type] attribute op literal | [type] attribute BETWEEN literal AND literal
                | [type] attribute IN interval | [type] attribute '=' '*'

The result is the ``syntax`` tree, with every predicate already type-checked.
"""

from __future__ import annotations

import re

from .errors import ConstraintError
from .lexer import END, KEYWORDS, KW, NAME, NUM, OP, QNAME, STR, TYPE_KEYWORDS, Token, tokenize
from .model import Box, Point, Type
from .syntax import (
    MAX_DEPTH,
    MAX_PREDICATES,
    And,
    Node,
    Not,
    Or,
    Schema,
    attribute_type,
    build,
    too_many_predicates,
)
from .values import Lit, check_text, convert, coordinate, number_kind

MAX_LENGTH = 10_000

_COMPARISONS = {"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_GEOMETRIC = {"within": "WITHIN", "overlaps": "OVERLAPS", "contains": "CONTAINS"}
_OPEN = {"[": "[", "(": "("}
_CLOSE = {"]": "]", ")": ")"}
_VALUE_EXAMPLES = "such as 5, 1.00, 'pencils' or DATE '2026-11-20'"

_DESCRIBE_KIND = {NAME: "the name", NUM: "the number", STR: "the string", QNAME: "the name"}


def check_length(text: str) -> None:
    if len(text) > MAX_LENGTH:
        raise ConstraintError(
            f"a constraint may be at most {MAX_LENGTH:,} characters long; this one has "
            f"{len(text):,}",
            MAX_LENGTH,
            code="too_long",
        )


def parse_tree(text: str, schema: Schema | None) -> Node:
    """The syntax tree of ``text``; ``ConstraintError`` for anything that is not valid."""
    check_length(text)
    m = _COMPARISON_RE.fullmatch(text)
    if m is not None and m.group(1).lower() not in KEYWORDS:
        return _comparison(m, schema)
    return _Parser(tokenize(text), schema).constraint()


# The commonest constraint of all, one unprefixed name compared with a number
# (``x = 123``, the paper's workloads), read by one regular expression instead of the
# tokenizer and the parser. It builds exactly what predicate() would.
_COMPARISON_RE = re.compile(
    r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<>|!=|=|<|>)\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*",
    re.ASCII,
)


def _comparison(m: re.Match[str], schema: Schema | None) -> Node:
    name, op_text, number = m.groups()
    op = _COMPARISONS[op_text]
    start = m.start(1)
    lits = [Lit(number_kind(number), number, m.start(3))]
    t = attribute_type(name, None, start, op, lits, schema, start)
    return build(name, t, op, m.start(2), lits, "[]", start)


def describe(tok: Token) -> str:
    kind, text, _ = tok
    if kind == END:
        return "the end of the text"
    if kind == KW:
        return f"the keyword {text.upper()}"
    if kind == OP:
        return f"'{text}'"
    if len(text) > 30:
        text = text[:27] + "..."
    return f"{_DESCRIBE_KIND[kind]} {text}"


class _Parser:
    __slots__ = ("toks", "i", "schema", "depth", "predicates")

    def __init__(self, toks: list[Token], schema: Schema | None) -> None:
        self.toks = toks
        self.i = 0
        self.schema = schema
        self.depth = 0
        self.predicates = 0

    def constraint(self) -> Node:
        node = self.or_expr()
        tok = self.toks[self.i]
        if tok[0] != END:
            if tok[1] == ")":
                raise ConstraintError("this ')' closes no '('", tok[2])
            raise ConstraintError(
                f"expected AND, OR or the end of the constraint, found {describe(tok)}", tok[2]
            )
        return node

    def or_expr(self) -> Node:
        first = self.and_expr()
        tok = self.toks[self.i]
        if tok[0] != KW or tok[1] != "or":
            return first
        children = [first]
        while tok[0] == KW and tok[1] == "or":
            self.i += 1
            children.append(self.and_expr())
            tok = self.toks[self.i]
        return Or(children, first.loc)

    def and_expr(self) -> Node:
        first = self.not_expr()
        tok = self.toks[self.i]
        if tok[0] != KW or tok[1] != "and":
            return first
        children = [first]
        while tok[0] == KW and tok[1] == "and":
            self.i += 1
            children.append(self.not_expr())
            tok = self.toks[self.i]
        return And(children, first.loc)

    def not_expr(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        if tok[0] == OP and tok[1] == "(" or tok[0] == KW and tok[1] == "not":
            return self._nested(tok)
        return self.predicate()

    def _nested(self, tok: Token) -> Node:
        # NOT NOT x is x: a run of NOTs is counted, not nested, so it never deepens the tree.
        toks = self.toks
        negations = 0
        first_not = tok[2]
        while tok[0] == KW and tok[1] == "not":
            negations += 1
            self.i += 1
            tok = toks[self.i]
        if tok[0] == OP and tok[1] == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ConstraintError(
                    f"parentheses are nested more than {MAX_DEPTH} deep; simplify the constraint",
                    tok[2],
                    code="too_deep",
                )
            self.i += 1
            node = self.or_expr()
            close = toks[self.i]
            if close[0] != OP or close[1] != ")":
                raise ConstraintError(
                    f"expected ')' to close the '(' at character {tok[2]}, found {describe(close)}",
                    close[2],
                )
            self.i += 1
            self.depth -= 1
            if type(node) is And or type(node) is Or:
                node.loc = tok[2]  # errors about the group point at its '('
        else:
            node = self.predicate()
        return Not(node, first_not) if negations % 2 else node

    def predicate(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        start = tok[2]
        prefix: Type | None = None
        if tok[0] == KW and tok[1] in TYPE_KEYWORDS:
            prefix = TYPE_KEYWORDS[tok[1]]
            self.i += 1
            tok = toks[self.i]
        kind = tok[0]
        if kind == NAME:
            name = tok[1]
        elif kind == QNAME:
            name = tok[1][1:-1].replace('""', '"')
            if not name:
                raise ConstraintError("an attribute name cannot be empty", tok[2])
            check_text(name, tok[2], "an attribute name")
        else:
            raise ConstraintError(self._not_a_name(tok, prefix), tok[2])
        self.predicates += 1
        if self.predicates > MAX_PREDICATES:
            raise too_many_predicates(self.predicates, start)
        self.i += 1
        op_tok = toks[self.i]
        self.i += 1
        op_kind, op_text, op_pos = op_tok
        bounds = "[]"
        if op_kind == OP and op_text in _COMPARISONS:
            op = _COMPARISONS[op_text]
            lits = [self.value(op_tok)]
        elif op_kind == KW and op_text == "between":
            op = "BETWEEN"
            lo = self.value(op_tok)
            and_tok = toks[self.i]
            if and_tok[0] != KW or and_tok[1] != "and":
                raise ConstraintError(
                    f"expected AND after {name} BETWEEN <value>, as in {name} BETWEEN 1 AND 9; "
                    f"found {describe(and_tok)}",
                    and_tok[2],
                )
            self.i += 1
            lits = [lo, self.value(and_tok)]
        elif op_kind == KW and op_text == "in":
            op = "IN"
            bounds, lits = self.interval(name)
        elif op_kind == KW and op_text in _GEOMETRIC:
            op = _GEOMETRIC[op_text]
            lits = [self.value(op_tok)]
        else:
            raise ConstraintError(self._not_an_operator(op_tok, name), op_pos)
        t = attribute_type(name, prefix, start, op, lits, self.schema, start)
        return build(name, t, op, op_pos, lits, bounds, start)

    def interval(self, name: str) -> tuple[str, list[Lit]]:
        toks = self.toks
        open_tok = toks[self.i]
        if open_tok[0] != OP or open_tok[1] not in _OPEN:
            raise ConstraintError(
                f"expected an interval after IN, such as {name} IN [1, 9) "
                f"('[' and ']' include the end, '(' and ')' exclude it); found {describe(open_tok)}",
                open_tok[2],
            )
        self.i += 1
        lo = self.value(open_tok)
        comma = toks[self.i]
        if comma[0] != OP or comma[1] != ",":
            raise ConstraintError(
                f"expected ',' between the two ends of the interval, found {describe(comma)}",
                comma[2],
            )
        self.i += 1
        hi = self.value(comma)
        close = toks[self.i]
        if close[0] != OP or close[1] not in _CLOSE:
            raise ConstraintError(
                f"expected ']' or ')' to end the interval, found {describe(close)}", close[2]
            )
        self.i += 1
        return open_tok[1] + close[1], [lo, hi]

    def value(self, after: Token) -> Lit:
        toks = self.toks
        kind, text, pos = toks[self.i]
        self.i += 1
        if kind == NUM:
            return Lit(number_kind(text), text, pos)
        if kind == STR:
            return Lit(Type.STRING, text[1:-1].replace("''", "'"), pos)
        if kind == OP and text == "*":
            return Lit(None, "*", pos)
        if kind == KW:
            if text == "date" or text == "timestamp":
                quoted = toks[self.i]
                if quoted[0] != STR:
                    example = "'2026-11-20'" if text == "date" else "'2026-11-20T10:00:00Z'"
                    raise ConstraintError(
                        f"expected a quoted {text} after {text.upper()}, as in "
                        f"{text.upper()} {example}",
                        quoted[2],
                    )
                self.i += 1
                t = Type.DATE if text == "date" else Type.TIMESTAMP
                lit = Lit(t, quoted[1][1:-1].replace("''", "'"), pos)
                # converted here: a bad date is an error wherever it is used
                lit.raw = convert(lit, t, "")  # type: ignore[assignment]
                return lit
            if text == "point":
                x, y = self.coordinates(2, "POINT(x, y)", pos)
                return Lit(Type.POINT, Point(x, y), pos)
            if text == "box":
                x1, y1, x2, y2 = self.coordinates(4, "BOX(x1, y1, x2, y2)", pos)
                return Lit(Type.BOX, Box.of(x1, y1, x2, y2), pos)
        self.i -= 1
        hint = ""
        if kind == OP and text == "=" and after[1] == "=":
            hint = " (equality is a single '=')"
        raise ConstraintError(
            f"expected a value after {describe(after)}, {_VALUE_EXAMPLES}{hint}; "
            f"found {describe((kind, text, pos))}",
            pos,
        )

    def coordinates(self, n: int, form: str, start: int) -> list[float]:
        toks = self.toks
        tok = toks[self.i]
        if tok[0] != OP or tok[1] != "(":
            raise ConstraintError(f"expected '(' after {form.split('(')[0]}, as in {form}", tok[2])
        self.i += 1
        out = []
        for k in range(n):
            tok = toks[self.i]
            if tok[0] != NUM:
                raise ConstraintError(
                    f"expected a number in {form}, found {describe(tok)}", tok[2], code="syntax"
                )
            out.append(coordinate(Lit(number_kind(tok[1]), tok[1], tok[2])))
            self.i += 1
            tok = toks[self.i]
            expected = "," if k < n - 1 else ")"
            if tok[0] != OP or tok[1] != expected:
                raise ConstraintError(
                    f"expected '{expected}' in {form} (it takes {n} numbers), found {describe(tok)}",
                    tok[2],
                )
            self.i += 1
        return out

    def _not_a_name(self, tok: Token, prefix: Type | None) -> str:
        kind, text, _ = tok
        if kind == KW:
            return (
                f"{text.upper()} is a reserved word; to use it as an attribute name, "
                f'put it in double quotes: "{text}"'
            )
        if prefix is not None:
            return (
                f"expected an attribute name after the type {prefix.value}, found {describe(tok)}"
            )
        return f"expected a condition such as lot >= 1000 or NOT (...), found {describe(tok)}"

    def _not_an_operator(self, tok: Token, name: str) -> str:
        kind, text, _ = tok
        if kind == KW and text == "not":
            return (
                f"write NOT before the condition, as in NOT {name} BETWEEN 1 AND 9 "
                f"or NOT {name} IN [1, 9]"
            )
        return (
            f"expected an operator after {name}: =, !=, <, <=, >, >=, BETWEEN, IN, WITHIN, "
            f"OVERLAPS or CONTAINS; found {describe(tok)}"
        )
