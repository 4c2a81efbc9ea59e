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
from collections.abc import Callable, Collection
from functools import partial

from .errors import ConstraintError, Loc
from .lexer import KEYWORDS, TYPE_KEYWORDS, Kind, Token, tokenize, unquote
from .model import Box, Point, Type
from .syntax import (
    MAX_DEPTH,
    And,
    Node,
    Not,
    Or,
    Schema,
    attribute_type,
    build,
    check_predicate_count,
)
from .values import Lit, check_text, convert, coordinate, number_lit

MAX_LENGTH = 10_000

_COMPARISONS = {"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_GEOMETRIC = {"within": "WITHIN", "overlaps": "OVERLAPS", "contains": "CONTAINS"}
_OPEN = frozenset("[(")
_CLOSE = frozenset("])")
_VALUE_EXAMPLES = "such as 5, 1.00, 'pencils' or DATE '2026-11-20'"

_DESCRIBE_KIND = {
    Kind.NAME: "the name",
    Kind.NUMBER: "the number",
    Kind.STRING: "the string",
    Kind.QUOTED_NAME: "the name",
}

_NAME, _NUMBER, _OPERATOR = Kind.NAME, Kind.NUMBER, Kind.OPERATOR
_STRING, _QUOTED_NAME, _KEYWORD, _END = Kind.STRING, Kind.QUOTED_NAME, Kind.KEYWORD, Kind.END


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
    lits = [number_lit(number, m.start(3))]
    t = attribute_type(name, None, start, op, lits, schema, start)
    return build(name, t, op, m.start(2), lits, "[]", start)


def describe(tok: Token) -> str:
    """A token as a message names it: "the keyword AND", "')'", "the number 5"."""
    kind, text = tok.kind, tok.text
    if kind is _END:
        return "the end of the text"
    if kind is _KEYWORD:
        return f"the keyword {text.upper()}"
    if kind is _OPERATOR:
        return f"'{text}'"
    if len(text) > 30:
        text = text[:27] + "..."
    return f"{_DESCRIBE_KIND[kind]} {text}"


def _not_a_separator(expected: str, form: str, n: int, found: Token) -> str:
    return f"expected '{expected}' in {form} (it takes {n} numbers), found {describe(found)}"


class _Parser:
    """Recursive descent over the token list, one method per grammar rule.

    ``_match`` consumes the current token if it is of a kind (and one of some texts);
    ``_expect`` does the same or raises the ``ConstraintError`` its caller words.
    """

    __slots__ = ("toks", "i", "schema", "depth", "predicates")

    def __init__(self, toks: list[Token], schema: Schema | None) -> None:
        self.toks = toks
        self.i = 0
        self.schema = schema
        self.depth = 0
        self.predicates = 0

    # -- token helpers ---------------------------------------------------------------------

    @property
    def _curr(self) -> Token:
        return self.toks[self.i]

    def _match(self, kind: Kind, text: str | None = None) -> Token | None:
        """The current token, consumed, if it is of ``kind`` (and spelled ``text``, if given)."""
        tok = self.toks[self.i]
        if tok.kind is kind and (text is None or tok.text == text):
            self.i += 1
            return tok
        return None

    def _match_set(self, kind: Kind, texts: Collection[str]) -> Token | None:
        """The current token, consumed, if it is of ``kind`` and one of ``texts``."""
        tok = self.toks[self.i]
        if tok.kind is kind and tok.text in texts:
            self.i += 1
            return tok
        return None

    def _expect(self, matched: Token | None, explain: Callable[[Token], str]) -> Token:
        """``matched`` (what a ``_match`` returned), or the error ``explain`` words for the
        current token, which did not match."""
        if matched is None:
            found = self.toks[self.i]
            raise ConstraintError(explain(found), found.position)
        return matched

    # -- grammar ---------------------------------------------------------------------------

    def constraint(self) -> Node:
        node = self.or_expr()
        tok = self._curr
        if tok.kind is not _END:
            if tok.text == ")":
                raise ConstraintError("this ')' closes no '('", tok.position)
            raise ConstraintError(
                f"expected AND, OR or the end of the constraint, found {describe(tok)}",
                tok.position,
            )
        return node

    def or_expr(self) -> Node:
        return self._chain("or", self.and_expr, Or)

    def and_expr(self) -> Node:
        return self._chain("and", self.not_expr, And)

    def _chain(
        self, keyword: str, operand: Callable[[], Node], node: Callable[[list[Node], Loc], Node]
    ) -> Node:
        # operand ( keyword operand )*: one flat node for the whole run, never a nested one
        first = operand()
        if not self._match(_KEYWORD, keyword):
            return first
        children = [first, operand()]
        while self._match(_KEYWORD, keyword):
            children.append(operand())
        return node(children, first.loc)

    def not_expr(self) -> Node:
        tok = self._curr
        if tok.kind is _OPERATOR and tok.text == "(" or tok.kind is _KEYWORD and tok.text == "not":
            return self._nested(tok)
        return self.predicate()

    def _nested(self, first: Token) -> Node:
        # NOT NOT x is x: a run of NOTs is counted, not nested, so it never deepens the tree.
        negations = 0
        while self._match(_KEYWORD, "not"):
            negations += 1
        open_tok = self._match(_OPERATOR, "(")
        if open_tok is not None:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ConstraintError(
                    f"parentheses are nested more than {MAX_DEPTH} deep; simplify the constraint",
                    open_tok.position,
                    code="too_deep",
                )
            node = self.or_expr()
            self._expect(
                self._match(_OPERATOR, ")"),
                lambda found: (
                    f"expected ')' to close the '(' at character {open_tok.position}, "
                    f"found {describe(found)}"
                ),
            )
            self.depth -= 1
            if type(node) is And or type(node) is Or:
                node.loc = open_tok.position  # errors about the group point at its '('
        else:
            node = self.predicate()
        return Not(node, first.position) if negations % 2 else node

    def predicate(self) -> Node:
        tok = self._curr
        start = tok.position
        prefix: Type | None = None
        if tok.kind is _KEYWORD and tok.text in TYPE_KEYWORDS:
            prefix = TYPE_KEYWORDS[tok.text]
            self.i += 1
            tok = self._curr
        if tok.kind is _NAME:
            name = tok.text
        elif tok.kind is _QUOTED_NAME:
            name = unquote(tok)
            if not name:
                raise ConstraintError("an attribute name cannot be empty", tok.position)
            check_text(name, tok.position, "an attribute name")
        else:
            raise ConstraintError(self._not_a_name(tok, prefix), tok.position)
        self.predicates += 1
        check_predicate_count(self.predicates, start)
        self.i += 1
        op_tok = self._curr
        self.i += 1
        bounds = "[]"
        if op_tok.kind is _OPERATOR and op_tok.text in _COMPARISONS:
            op = _COMPARISONS[op_tok.text]
            lits = [self.value(op_tok)]
        elif op_tok.kind is _KEYWORD and op_tok.text == "between":
            op = "BETWEEN"
            lo = self.value(op_tok)
            and_tok = self._expect(
                self._match(_KEYWORD, "and"),
                lambda found: (
                    f"expected AND after {name} BETWEEN <value>, as in {name} BETWEEN "
                    f"1 AND 9; found {describe(found)}"
                ),
            )
            lits = [lo, self.value(and_tok)]
        elif op_tok.kind is _KEYWORD and op_tok.text == "in":
            op = "IN"
            bounds, lits = self.interval(name)
        elif op_tok.kind is _KEYWORD and op_tok.text in _GEOMETRIC:
            op = _GEOMETRIC[op_tok.text]
            lits = [self.value(op_tok)]
        else:
            raise ConstraintError(self._not_an_operator(op_tok, name), op_tok.position)
        t = attribute_type(name, prefix, start, op, lits, self.schema, start)
        return build(name, t, op, op_tok.position, lits, bounds, start)

    def interval(self, name: str) -> tuple[str, list[Lit]]:
        open_tok = self._expect(
            self._match_set(_OPERATOR, _OPEN),
            lambda found: (
                f"expected an interval after IN, such as {name} IN [1, 9) "
                "('[' and ']' include the end, '(' and ')' exclude it); "
                f"found {describe(found)}"
            ),
        )
        lo = self.value(open_tok)
        comma = self._expect(
            self._match(_OPERATOR, ","),
            lambda found: (
                f"expected ',' between the two ends of the interval, found {describe(found)}"
            ),
        )
        hi = self.value(comma)
        close = self._expect(
            self._match_set(_OPERATOR, _CLOSE),
            lambda found: f"expected ']' or ')' to end the interval, found {describe(found)}",
        )
        return open_tok.text + close.text, [lo, hi]

    def value(self, after: Token) -> Lit:
        tok = self._curr
        kind, text, pos = tok
        self.i += 1
        if kind is _NUMBER:
            return number_lit(text, pos)
        if kind is _STRING:
            return Lit(Type.STRING, unquote(tok), pos)
        if kind is _OPERATOR and text == "*":
            return Lit(None, "*", pos)
        if kind is _KEYWORD:
            if text == "date" or text == "timestamp":
                example = "'2026-11-20'" if text == "date" else "'2026-11-20T10:00:00Z'"
                quoted = self._expect(
                    self._match(_STRING),
                    lambda found: (
                        f"expected a quoted {text} after {text.upper()}, as in "
                        f"{text.upper()} {example}"
                    ),
                )
                t = Type.DATE if text == "date" else Type.TIMESTAMP
                lit = Lit(t, unquote(quoted), pos)
                # converted here: a bad date is an error wherever it is used
                lit.raw = convert(lit, t, "")  # type: ignore[assignment]
                return lit
            if text == "point":
                x, y = self.coordinates(2, "POINT(x, y)")
                return Lit(Type.POINT, Point(x, y), pos)
            if text == "box":
                x1, y1, x2, y2 = self.coordinates(4, "BOX(x1, y1, x2, y2)")
                return Lit(Type.BOX, Box.of(x1, y1, x2, y2), pos)
        self.i -= 1
        hint = ""
        if kind is _OPERATOR and text == "=" and after.text == "=":
            hint = " (equality is a single '=')"
        raise ConstraintError(
            f"expected a value after {describe(after)}, {_VALUE_EXAMPLES}{hint}; "
            f"found {describe(tok)}",
            pos,
        )

    def coordinates(self, n: int, form: str) -> list[float]:
        self._expect(
            self._match(_OPERATOR, "("),
            lambda found: f"expected '(' after {form.split('(')[0]}, as in {form}",
        )
        out = []
        for k in range(n):
            tok = self._curr
            if tok.kind is not _NUMBER:
                raise ConstraintError(
                    f"expected a number in {form}, found {describe(tok)}",
                    tok.position,
                    code="syntax",
                )
            out.append(coordinate(number_lit(tok.text, tok.position)))
            self.i += 1
            expected = "," if k < n - 1 else ")"
            self._expect(
                self._match(_OPERATOR, expected), partial(_not_a_separator, expected, form, n)
            )
        return out

    def _not_a_name(self, tok: Token, prefix: Type | None) -> str:
        if tok.kind is _KEYWORD:
            return (
                f"{tok.text.upper()} is a reserved word; to use it as an attribute name, "
                f'put it in double quotes: "{tok.text}"'
            )
        if prefix is not None:
            return (
                f"expected an attribute name after the type {prefix.value}, found {describe(tok)}"
            )
        return f"expected a condition such as lot >= 1000 or NOT (...), found {describe(tok)}"

    def _not_an_operator(self, tok: Token, name: str) -> str:
        if tok.kind is _KEYWORD and tok.text == "not":
            return (
                f"write NOT before the condition, as in NOT {name} BETWEEN 1 AND 9 "
                f"or NOT {name} IN [1, 9]"
            )
        return (
            f"expected an operator after {name}: =, !=, <, <=, >, >=, BETWEEN, IN, WITHIN, "
            f"OVERLAPS or CONTAINS; found {describe(tok)}"
        )
