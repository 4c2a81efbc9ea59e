"""The text syntax (SPEC 2.3): a recursive-descent parser over ``lexer`` tokens.

    constraint := or_expr
    or_expr    := and_expr ( OR and_expr )*
    and_expr   := not_expr ( AND not_expr )*
    not_expr   := NOT not_expr | '(' or_expr ')' | predicate
    predicate  := [type] name op literal | [type] name BETWEEN literal AND literal
                | [type] name IN interval | [type] name '=' '*'

The result is the ``syntax`` tree, with every predicate already type-checked.

``Parser`` is also the subscription language's condition parser
(``matching.subscriptions.language.conditions``), which subclasses it at its extension points: the
name rule (``name``: qualified names, aliases, the event schema), the atom rule
(``predicate``: ``subject MATCHES 'p'``), the value rule (``value``), ``comparison``
and ``count`` (where a predicate is read, type-checked and counted), the operators it takes
(``geometric``) and the words of its messages (``describe``, ``error`` and the
``_no_...`` methods). It reads that language's tokens, which are this lexer's.
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
    return Parser(tokenize(text), schema).constraint()


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


def dated(keyword: Token, quoted: Token) -> Lit:
    """The literal ``DATE '...'`` or ``TIMESTAMP '...'`` (``keyword`` then ``quoted``),
    converted here: a bad date is an error wherever it is used."""
    t = Type.DATE if keyword.text == "date" else Type.TIMESTAMP
    lit = Lit(t, unquote(quoted), keyword.position)
    # convert's type allows a float, which Raw does not; a date or timestamp is never one
    lit.raw = convert(lit, t, "")  # type: ignore[assignment]
    return lit


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


class Parser:
    """Recursive descent over the token list, one method per grammar rule.

    ``_match`` consumes the current token if it is of a kind (and one of some texts);
    ``_expect`` does the same or raises the ``ConstraintError`` its caller words.
    """

    __slots__ = ("toks", "i", "schema", "depth", "predicates")

    # The keyword operators of points and boxes (a language without them has none).
    geometric: dict[str, str] = _GEOMETRIC

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
            raise self.error(explain(found), found)
        return matched

    # -- messages (a subclass words its own) ----------------------------------------------

    def describe(self, tok: Token) -> str:
        return describe(tok)

    def error(self, message: str, tok: Token, code: str = "syntax") -> ConstraintError:
        """A syntax error at ``tok`` (type errors come from ``syntax`` and ``values``)."""
        return ConstraintError(message, tok.position, code=code)

    def _no_close(self, open_tok: Token, found: Token) -> str:
        return (
            f"expected ')' to close the '(' at character {open_tok.position}, "
            f"found {self.describe(found)}"
        )

    def _no_and(self, name: str, found: Token) -> str:
        return (
            f"expected AND after {name} BETWEEN <value>, as in {name} BETWEEN "
            f"1 AND 9; found {self.describe(found)}"
        )

    def _no_interval(self, name: str, found: Token) -> str:
        return (
            f"expected an interval after IN, such as {name} IN [1, 9) "
            "('[' and ']' include the end, '(' and ')' exclude it); "
            f"found {self.describe(found)}"
        )

    def _not_a_name(self, tok: Token, prefix: Type | None) -> str:
        if tok.kind is _KEYWORD:
            return (
                f"{tok.text.upper()} is a reserved word; to use it as an attribute name, "
                f'put it in double quotes: "{tok.text}"'
            )
        if prefix is not None:
            return (
                f"expected an attribute name after the type {prefix.value}, "
                f"found {self.describe(tok)}"
            )
        return f"expected a condition such as lot >= 1000 or NOT (...), found {self.describe(tok)}"

    def _not_an_operator(self, tok: Token, name: str) -> ConstraintError:
        if tok.kind is _KEYWORD and tok.text == "not":
            return self.error(
                f"write NOT before the condition, as in NOT {name} BETWEEN 1 AND 9 "
                f"or NOT {name} IN [1, 9]",
                tok,
            )
        return self.error(
            f"expected an operator after {name}: =, !=, <, <=, >, >=, BETWEEN, IN, WITHIN, "
            f"OVERLAPS or CONTAINS; found {self.describe(tok)}",
            tok,
        )

    # -- grammar ---------------------------------------------------------------------------

    def constraint(self) -> Node:
        node = self.or_expr()
        tok = self._curr
        if tok.kind is not _END:
            if tok.text == ")":
                raise self.error("this ')' closes no '('", tok)
            raise self.error(
                f"expected AND, OR or the end of the constraint, found {self.describe(tok)}", tok
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
                raise self.error(
                    f"parentheses are nested more than {MAX_DEPTH} deep; simplify the constraint",
                    open_tok,
                    code="too_deep",
                )
            node = self.or_expr()
            self._expect(self._match(_OPERATOR, ")"), partial(self._no_close, open_tok))
            self.depth -= 1
            if type(node) is And or type(node) is Or:
                node.loc = open_tok.position  # errors about the group point at its '('
        else:
            node = self.predicate()
        return Not(node, first.position) if negations % 2 else node

    def predicate(self) -> Node:
        """The atom rule: ``[type] name`` and what it is compared with."""
        tok = self._curr
        start = tok.position
        prefix: Type | None = None
        if tok.kind is _KEYWORD and tok.text in TYPE_KEYWORDS:
            prefix = TYPE_KEYWORDS[tok.text]
            self.i += 1
        name = self.name(prefix)
        return self.comparison(name, prefix, start)

    def name(self, prefix: Type | None) -> str:
        """The name rule: the attribute named at the current token, consumed."""
        tok = self._curr
        if tok.kind is _NAME:
            name = tok.text
        elif tok.kind is _QUOTED_NAME:
            name = unquote(tok)
            if not name:
                raise self.error("an attribute name cannot be empty", tok)
            check_text(name, tok.position, "an attribute name")
        else:
            raise self.error(self._not_a_name(tok, prefix), tok)
        self.i += 1
        return name

    def comparison(self, name: str, prefix: Type | None, start: int) -> Node:
        """An operator and its values after ``name``, as a typed node (``start`` locates it)."""
        self.count(start)
        op_tok = self._curr
        self.i += 1
        bounds = "[]"
        if op_tok.kind is _OPERATOR and op_tok.text in _COMPARISONS:
            op = _COMPARISONS[op_tok.text]
            lits = [self.value(op_tok)]
        elif op_tok.kind is _KEYWORD and op_tok.text == "between":
            op = "BETWEEN"
            lo = self.value(op_tok)
            and_tok = self._expect(self._match(_KEYWORD, "and"), partial(self._no_and, name))
            lits = [lo, self.value(and_tok)]
        elif op_tok.kind is _KEYWORD and op_tok.text == "in":
            op = "IN"
            bounds, lits = self.interval(name)
        elif op_tok.kind is _KEYWORD and op_tok.text in self.geometric:
            op = self.geometric[op_tok.text]
            lits = [self.value(op_tok)]
        else:
            raise self._not_an_operator(op_tok, name)
        return self.typed(name, prefix, start, op, op_tok.position, lits, bounds)

    def count(self, start: int) -> None:
        """Count one more predicate, refused past the limit."""
        self.predicates += 1
        check_predicate_count(self.predicates, start)

    def typed(
        self,
        name: str,
        prefix: Type | None,
        start: int,
        op: str,
        op_loc: int,
        lits: list[Lit],
        bounds: str,
    ) -> Node:
        """The predicate, type-checked: an ``Atom`` (or ``Not`` for ``!=``)."""
        t = attribute_type(name, prefix, start, op, lits, self.schema, start)
        return build(name, t, op, op_loc, lits, bounds, start)

    def interval(self, name: str) -> tuple[str, list[Lit]]:
        open_tok = self._expect(self._match_set(_OPERATOR, _OPEN), partial(self._no_interval, name))
        lo = self.value(open_tok)
        comma = self._expect(
            self._match(_OPERATOR, ","),
            lambda found: (
                f"expected ',' between the two ends of the interval, found {self.describe(found)}"
            ),
        )
        hi = self.value(comma)
        close = self._expect(
            self._match_set(_OPERATOR, _CLOSE),
            lambda found: f"expected ']' or ')' to end the interval, found {self.describe(found)}",
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
                return dated(tok, quoted)
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
