"""Conjuncts made of SPEC 2 constraints, normalized each on its own (SPEC 8.3).

A conjunct such as ``(price > 1.05 OR subject MATCHES 'office.>')`` is read by SPEC 2's
constraint parser (``matching.parser``) on the query's own tokens, extended at its rules
so that SPEC 2's typing, NOT push-down, DNF, merging, limits and error messages have one
home and every error points at the query text:

* its name rule reads ``attr`` in form 1 and ``alias.attr`` in form 2 (every conjunct names
  one alias), checked against the event schema;
* its atom rule reads ``subject MATCHES 'p'`` as a stand-in predicate ``_m<k> >= 0`` on a
  made-up int attribute; after normalization a stand-in interval holding 0 is the match
  and one not holding it its negation;
* its value rule takes the literals events have (no POINT or BOX; ``*`` only after a
  comparison), and its messages use the language's words.

Syntax and names are refused as they are read; a literal that does not fit its attribute
is refused once the whole conjunct has been read (so a conjunct wrong in both ways is
refused for its syntax or names first, as it always has been).

Grammar of a conjunct (``ref`` is ``attr``, or ``alias.attr`` in form 2)::

    conjunct := '(' or_expr ')' | atom
    or_expr  := and_expr ( OR and_expr )*
    and_expr := not_expr ( AND not_expr )*
    not_expr := NOT not_expr | '(' or_expr ')' | atom
    atom     := ref MATCHES string | ref op literal | ref '=' '*'
              | ref BETWEEN literal AND literal | ref IN ('[' | '(') literal ',' literal (']' | ')')
    literal  := number | string | DATE string | TIMESTAMP string
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matching import ConstraintError, Interval, Type
from matching.api import normalize_text
from matching.intervals import WILDCARD
from matching.lexer import TYPE_KEYWORDS, unquote
from matching.model import Attribute
from matching.parser import Parser, dated
from matching.subjects import SubjectError, compile_pattern
from matching.subscriptions.errors import QueryError
from matching.syntax import Atom, Node, build
from matching.values import Lit, number_lit

from .closed_sets import CHECKING, closed_sets_check
from .cursor import Cursor
from .lexer import DOTTED, KW, NAME, NUM, OP, QNAME, STR, Token, describe
from .model import AttrTest, Condition, SubjectTest, Test
from .schema import END_TIME, START_TIME, check_attribute

COMPARISONS = ("=", "!=", "<>", "<", "<=", ">", ">=")
_PLACEHOLDER = "_m{}"


class ConditionReader:
    """Reads conjuncts from a ``Cursor``. ``aliases`` is ``None`` in form 1 (plain names),
    else the composite's aliases (every name is ``alias.attr``).
    """

    def __init__(
        self, cur: Cursor, schema: Mapping[str, Type], aliases: tuple[str, ...] | None
    ) -> None:
        self.cur = cur
        self.schema = schema
        self.aliases = aliases

    def conjunct(self) -> Condition:
        """One conjunct at the cursor (not ``start_time``/``end_time``), normalized."""
        cur = self.cur
        first = cur.peek
        parser = _ConditionParser(self)
        if cur.is_op("("):
            tree = parser.not_expr()
        elif cur.is_kw("not"):
            raise cur.error("NOT is allowed only inside parentheses: write (NOT ...) as a conjunct")
        else:
            tree = parser.predicate()
        cur.i = parser.i
        end = cur.end_of(cur.tokens[cur.i - 1])
        if cur.is_kw("or"):
            raise cur.error(
                "OR is allowed only inside parentheses: write (... OR ...) as one conjunct"
            )
        if len(parser.named) > 1:
            raise QueryError(
                "a conjunct names one alias (join two aliases as a.attr op b.attr, "
                "one comparison per conjunct)",
                first.position,
            )
        if parser.deferred is not None:
            raise _located(parser.deferred, first.position)
        try:
            constraint = normalize_text(tree, first.position, end - first.position)
        except ConstraintError as exc:
            raise _located(exc, first.position) from None
        alias = next(iter(parser.named), None)
        disjuncts: list[tuple[Test, ...]] = []
        for disjunct in constraint:
            tests: list[Test] = []
            for attr, pred in disjunct:
                pattern = parser.matches.get(attr.name)
                if pattern is not None:
                    assert isinstance(pred, Interval)
                    tests.append(SubjectTest(alias, pattern, negated=not _holds_zero(pred)))
                else:
                    tests.append(AttrTest(alias, attr.name, attr.type, pred))
            if tuple(tests) not in disjuncts:
                disjuncts.append(tuple(tests))
        condition = Condition(tuple(disjuncts))
        if CHECKING.get():
            closed_sets_check(condition, cur.text, first.position)
        return condition

    def pattern(self, string: Token) -> str:
        """The subject pattern written in ``string``, checked (errors at the bad character)."""
        text = string.text[1:-1].replace("''", "'")
        try:
            compile_pattern(text)
        except SubjectError as exc:
            raise QueryError(
                exc.message, string.position + 1 + exc.position, code="bad_pattern"
            ) from None
        return text


class _ConditionParser(Parser):
    """SPEC 2's parser on a query's tokens, extended at its name, atom and value rules.

    A type error (a literal's, a comparison's or ``count``'s) is kept in ``deferred`` and the
    reading goes on, so that a syntax error or a wrong name later in the conjunct is the
    one refused; ``named`` holds the aliases the conjunct names, ``matches`` the subject
    pattern of each stand-in attribute.
    """

    __slots__ = ("reader", "named", "matches", "deferred")

    geometric: dict[str, str] = {}  # events have no points or boxes

    def __init__(self, reader: ConditionReader) -> None:
        super().__init__(reader.cur.tokens, reader.schema)
        self.i = reader.cur.i
        self.reader = reader
        self.named: set[str] = set()
        self.matches: dict[str, str] = {}
        self.deferred: ConstraintError | None = None

    # -- rules ------------------------------------------------------------------------------

    def predicate(self) -> Node:
        """``ref MATCHES string``, or a comparison on ``ref``."""
        ref = self._curr
        attribute = self.name(None)
        if self._match(KW, "matches"):
            return self._subject_match(ref, attribute)
        # errors about the comparison point at the attribute, after any "alias."
        start = (
            ref.position + len(ref.text) - len(attribute) if ref.kind is DOTTED else ref.position
        )
        return self.comparison(attribute, None, start)

    def name(self, prefix: Type | None) -> str:
        """``attr`` (form 1) or ``alias.attr`` (form 2), checked against the schema."""
        tok = self._curr
        aliases = self.reader.aliases
        if tok.kind is KW:
            if tok.text in TYPE_KEYWORDS:
                raise self.error(
                    f"no type prefix here: the event schema gives every attribute its type "
                    f"(drop {tok.text.upper()})",
                    tok,
                )
            raise self.error(
                f"expected an attribute, found {describe(tok)} (keywords are reserved; "
                'a name that is a keyword is written in double quotes, as in "limit")',
                tok,
            )
        alias: str | None
        if tok.kind is NAME:
            alias, attribute = None, tok.text
        elif tok.kind is QNAME:
            alias, attribute = None, tok.text[1:-1].replace('""', '"')
        elif tok.kind is DOTTED:
            alias, _, attribute = tok.text.partition(".")
        else:
            raise self.error(
                f"expected a condition such as price > 1.00, found {describe(tok)}", tok
            )
        if aliases is None and alias is not None:
            raise self.error(
                f"{tok.text}: qualified names belong to composite subscriptions "
                "(SELECT ... FROM a AND b WHERE ...); here write the attribute alone",
                tok,
                code="unknown_attribute",
            )
        if aliases is not None:
            if alias is None:
                raise self.error(
                    f"name the alias of {attribute}, as in {aliases[0]}.{attribute}",
                    tok,
                    code="unknown_alias",
                )
            if alias not in aliases:
                raise self.error(
                    f"{alias} is not an alias of this subscription (FROM {' AND '.join(aliases)})",
                    tok,
                    code="unknown_alias",
                )
            self.named.add(alias)
        if attribute in (START_TIME, END_TIME):
            raise QueryError(
                f"{attribute} sets the time range: write it as its own conjunct, "
                f"{attribute} = NOW - 1h (not inside parentheses or with another operator)",
                tok.position,
            )
        check_attribute(attribute, tok.position, self.reader.schema)
        self.i += 1
        return attribute

    def _subject_match(self, ref: Token, attribute: str) -> Node:
        # A stand-in predicate _m<k> >= 0, placed where "_m<k> >= 0" would be written.
        if attribute != "subject":
            raise QueryError(
                f"MATCHES takes the subject, as in subject MATCHES 'office.>', not {attribute}",
                ref.position,
            )
        string = self._expect(
            self._match(STR),
            lambda found: (
                "expected a quoted subject pattern after MATCHES, such as 'office.>', "
                f"found {describe(found)}"
            ),
        )
        stand_in = _PLACEHOLDER.format(len(self.matches))
        self.matches[stand_in] = self.reader.pattern(string)
        start = ref.position
        self.count(start)
        op_loc = start + len(stand_in) + 1
        return build(stand_in, Type.INT, ">=", op_loc, [number_lit("0", op_loc + 3)], "[]", start)

    def value(self, after: Token) -> Lit:
        """A number, a string, ``DATE '...'`` or ``TIMESTAMP '...'``; ``*`` after a comparison."""
        tok = self._curr
        kind, text, pos = tok
        self.i += 1
        if kind is NUM:
            try:
                return number_lit(text, pos)
            except ConstraintError as exc:
                return self._deferred_value(exc, pos)
        if kind is STR:
            return Lit(Type.STRING, unquote(tok), pos)
        if kind is OP and text == "*" and after.kind is OP and after.text in COMPARISONS:
            return Lit(None, "*", pos)
        if kind is KW and text in ("date", "timestamp"):
            quoted = self._match(STR)
            if quoted is not None:
                try:
                    return dated(tok, quoted)
                except ConstraintError as exc:
                    return self._deferred_value(exc, pos)
        if kind is KW and text == "now":
            raise self.error(
                "NOW is only for start_time and end_time; compare time with a "
                "TIMESTAMP '...' literal, or set start_time = NOW - <d>",
                tok,
            )
        raise self.error(
            f"expected a value after {describe(after)}, such as 5, 1.00, 'trade' or "
            f"TIMESTAMP '2026-11-20T10:00:00Z'; found {describe(tok)}",
            tok,
        )

    # -- type errors, kept for the end of the conjunct -------------------------------------

    def count(self, start: int) -> None:
        try:
            super().count(start)
        except ConstraintError as exc:
            self._defer(exc)

    def comparison(self, name: str, prefix: Type | None, start: int) -> Node:
        try:
            return super().comparison(name, prefix, start)
        except QueryError:
            raise
        except ConstraintError as exc:
            # not the language's own error (those are QueryErrors): SPEC 2's type check of
            # the comparison, whose tokens are all read by now
            self._defer(exc)
            return Atom(Attribute(name, Type.INT), WILDCARD, start, "*")

    def _deferred_value(self, exc: ConstraintError, pos: int) -> Lit:
        # a stand-in value the conjunct goes on with; it is refused at its end anyway
        self._defer(exc)
        return Lit(None, "*", pos)

    def _defer(self, exc: ConstraintError) -> None:
        if self.deferred is None:
            self.deferred = exc

    # -- the language's words ---------------------------------------------------------------

    def describe(self, tok: Token) -> str:
        return describe(tok)

    def error(self, message: str, tok: Token, code: str = "syntax") -> QueryError:
        return self.reader.cur.error(message, tok, code=code)

    def _no_close(self, open_tok: Token, found: Token) -> str:
        return (
            f"expected ')' to close the '(' at character {open_tok.position + 1}, "
            f"found {describe(found)}"
        )

    def _no_and(self, name: str, found: Token) -> str:
        return f"expected AND after {name} BETWEEN <value>, found {describe(found)}"

    def _no_interval(self, name: str, found: Token) -> str:
        return f"expected an interval after IN, such as {name} IN [1, 9), found {describe(found)}"

    def _not_an_operator(self, tok: Token, name: str) -> ConstraintError:
        if tok.kind is KW and tok.text in ("within", "overlaps", "contains"):
            return self.error(
                f"{tok.text.upper()} is for point and box attributes, and events have none",
                tok,
                code="bad_operator",
            )
        return self.error(
            f"expected an operator after {name}: =, !=, <, <=, >, >=, BETWEEN, IN "
            f"or MATCHES; found {describe(tok)}",
            tok,
        )


def _located(exc: ConstraintError, start: int) -> QueryError:
    """A type error as the query's error (one about the whole conjunct at its start)."""
    if isinstance(exc, QueryError):
        return exc
    return QueryError(exc.message, start if exc.position is None else exc.position, code=exc.code)


def _holds_zero(iv: Interval) -> bool:
    lo: Any = iv.lo
    hi: Any = iv.hi
    return (lo is None or lo <= 0) and (hi is None or hi >= 0)
