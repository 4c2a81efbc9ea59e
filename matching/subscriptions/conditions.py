"""Conjuncts made of SPEC 2 constraints, normalized each on its own (SPEC 8.3).

A conjunct such as ``(price > 1.05 OR subject MATCHES 'office.>')`` is read here only far
enough to find where it ends and to check its names (known attributes, aliases); the
constraint itself is handed to ``matching.parse`` so that SPEC 2's typing, NOT push-down,
DNF, merging, limits and error messages have one home. Two things ``matching.parse`` does
not know are rewritten first, each keeping every character's position so that errors
point at the query text:

* ``subject MATCHES 'p'`` becomes a placeholder predicate ``_m<k> >= 0`` (padded with
  spaces) on a made-up int attribute; after normalization a placeholder interval holding
  0 is the match and one not holding it its negation;
* in form 2 the alias of ``a.price`` is blanked out (every conjunct names one alias).

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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import matching
from matching import ConstraintError, Interval, Type
from matching.subjects import SubjectError, compile_pattern
from matching.syntax import MAX_DEPTH

from .closed_sets import CHECKING, closed_sets_check
from .cursor import Cursor
from .errors import QueryError
from .lexer import DOTTED, KW, NAME, NUM, OP, QNAME, STR, Token, describe
from .model import AttrTest, Condition, SubjectTest, Test
from .schema import END_TIME, START_TIME, check_attribute

COMPARISONS = ("=", "!=", "<>", "<", "<=", ">", ">=")
_TYPE_PREFIXES = frozenset(
    {"int", "integer", "decimal", "numeric", "float", "double", "date", "timestamp", "string",
     "text", "point", "box"}
)  # fmt: skip
_PLACEHOLDER = "_m{}"
_PLACEHOLDER_RE = re.compile(r"_m\d+")


@dataclass
class _Scan:
    """What reading one conjunct found: the aliases it names and the text to rewrite."""

    aliases: set[str]
    blanks: list[tuple[int, int]]  # spans to replace with spaces (form 2's "a.")
    matches: list[tuple[int, int, str, str | None]]  # (start, end, pattern, alias)


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
        self._depth = 0

    # -- reading ----------------------------------------------------------------------------

    def conjunct(self) -> Condition:
        """One conjunct at the cursor (not ``start_time``/``end_time``), normalized."""
        cur = self.cur
        first = cur.peek
        scan = _Scan(set(), [], [])
        if cur.is_op("("):
            self._group(scan)
        elif cur.is_kw("not"):
            raise cur.error("NOT is allowed only inside parentheses: write (NOT ...) as a conjunct")
        else:
            self._atom(scan)
        end = cur.end_of(cur.tokens[cur.i - 1])
        if cur.is_kw("or"):
            raise cur.error(
                "OR is allowed only inside parentheses: write (... OR ...) as one conjunct"
            )
        if len(scan.aliases) > 1:
            raise QueryError(
                "a conjunct names one alias (join two aliases as a.attr op b.attr, "
                "one comparison per conjunct)",
                first.position,
            )
        return self._normalize(first.position, end, scan)

    def _group(self, scan: _Scan) -> None:
        # Counted as it descends, with the constraint parser's limit and words, so that
        # deep text is refused before it can exhaust Python's stack (issue 37).
        cur = self.cur
        open_ = cur._expect(OP, "(", what="'('")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise cur.error(
                f"parentheses are nested more than {MAX_DEPTH} deep; simplify the constraint",
                open_,
                code="too_deep",
            )
        self._or(scan)
        if not cur._match(OP, ")"):
            raise cur.error(
                f"expected ')' to close the '(' at character {open_.position + 1}, "
                f"found {describe(cur.peek)}"
            )
        self._depth -= 1

    def _or(self, scan: _Scan) -> None:
        self._and(scan)
        while self.cur._match(KW, "or"):
            self._and(scan)

    def _and(self, scan: _Scan) -> None:
        self._not(scan)
        while self.cur._match(KW, "and"):
            self._not(scan)

    def _not(self, scan: _Scan) -> None:
        cur = self.cur
        while cur._match(KW, "not"):
            pass
        if cur.is_op("("):
            self._group(scan)
        else:
            self._atom(scan)

    def _atom(self, scan: _Scan) -> None:
        cur = self.cur
        ref = cur.peek
        alias, attribute = self.reference()
        if attribute in (START_TIME, END_TIME):
            raise QueryError(
                f"{attribute} sets the time range: write it as its own conjunct, "
                f"{attribute} = NOW - 1h (not inside parentheses or with another operator)",
                ref.position,
            )
        if alias is not None:
            scan.aliases.add(alias)
            scan.blanks.append((ref.position, ref.position + len(alias) + 1))
        if cur.is_kw("matches"):
            cur.advance()
            if attribute != "subject":
                raise QueryError(
                    f"MATCHES takes the subject, as in subject MATCHES 'office.>', not {attribute}",
                    ref.position,
                )
            string = cur._expect(
                STR, what="a quoted subject pattern after MATCHES, such as 'office.>'"
            )
            pattern = self.pattern(string)
            scan.matches.append((ref.position, cur.end_of(string), pattern, alias))
            return
        op = cur.advance()
        if op.kind == OP and op.text in COMPARISONS:
            if cur.is_op("*"):
                cur.advance()
            else:
                self._literal(op)
        elif op.kind == KW and op.text == "between":
            self._literal(op)
            and_ = cur._expect(KW, "and", what=f"AND after {attribute} BETWEEN <value>")
            self._literal(and_)
        elif op.kind == KW and op.text == "in":
            open_ = cur.advance()
            if not (open_.kind == OP and open_.text in "[("):
                raise cur.error(
                    f"expected an interval after IN, such as {attribute} IN [1, 9), "
                    f"found {describe(open_)}",
                    open_,
                )
            self._literal(open_)
            comma = cur._expect(OP, ",", what="',' between the two ends of the interval")
            self._literal(comma)
            cur._expect(OP, "]", ")", what="']' or ')' to end the interval")
        elif op.kind == KW and op.text in ("within", "overlaps", "contains"):
            raise cur.error(
                f"{op.text.upper()} is for point and box attributes, and events have none",
                op,
                code="bad_operator",
            )
        else:
            raise cur.error(
                f"expected an operator after {attribute}: =, !=, <, <=, >, >=, BETWEEN, IN "
                f"or MATCHES; found {describe(op)}",
                op,
            )

    def _literal(self, after: Token) -> None:
        cur = self.cur
        tok = cur.advance()
        if tok.kind in (NUM, STR):
            return
        if tok.kind == KW and tok.text in ("date", "timestamp") and cur._match(STR):
            return
        if tok.kind == KW and tok.text == "now":
            raise cur.error(
                "NOW is only for start_time and end_time; compare time with a "
                "TIMESTAMP '...' literal, or set start_time = NOW - <d>",
                tok,
            )
        raise cur.error(
            f"expected a value after {describe(after)}, such as 5, 1.00, 'trade' or "
            f"TIMESTAMP '2026-11-20T10:00:00Z'; found {describe(tok)}",
            tok,
        )

    def reference(self) -> tuple[str | None, str]:
        """``attr`` (form 1) or ``alias.attr`` (form 2), checked against the schema."""
        cur = self.cur
        tok = cur.peek
        if tok.kind == KW:
            if tok.text in _TYPE_PREFIXES:
                raise cur.error(
                    f"no type prefix here: the event schema gives every attribute its type "
                    f"(drop {tok.text.upper()})"
                )
            raise cur.error(
                f"expected an attribute, found {describe(tok)} (keywords are reserved; "
                'a name that is a keyword is written in double quotes, as in "limit")'
            )
        if tok.kind == NAME:
            alias, attribute = None, tok.text
        elif tok.kind == QNAME:
            alias, attribute = None, tok.text[1:-1].replace('""', '"')
        elif tok.kind == DOTTED:
            alias, _, attribute = tok.text.partition(".")
        else:
            raise cur.error(f"expected a condition such as price > 1.00, found {describe(tok)}")
        if self.aliases is None and alias is not None:
            raise cur.error(
                f"{tok.text}: qualified names belong to composite subscriptions "
                "(SELECT ... FROM a AND b WHERE ...); here write the attribute alone",
                code="unknown_attribute",
            )
        if self.aliases is not None:
            if alias is None:
                raise cur.error(
                    f"name the alias of {attribute}, as in {self.aliases[0]}.{attribute}",
                    code="unknown_alias",
                )
            if alias not in self.aliases:
                raise cur.error(
                    f"{alias} is not an alias of this subscription (FROM "
                    f"{' AND '.join(self.aliases)})",
                    code="unknown_alias",
                )
        if attribute not in (START_TIME, END_TIME):
            check_attribute(attribute, tok.position, self.schema)
        cur.advance()
        return alias, attribute

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

    # -- normalizing ------------------------------------------------------------------------

    def _normalize(self, start: int, end: int, scan: _Scan) -> Condition:
        text = list(self.cur.text[start:end])
        schema = dict(self.schema)
        placeholders: dict[str, tuple[str, str | None]] = {}
        for s, e in scan.blanks:
            text[s - start : e - start] = " " * (e - s)
        for k, (s, e, pattern, alias) in enumerate(scan.matches):
            name = _PLACEHOLDER.format(k)
            stand_in = f"{name} >= 0".ljust(e - s)
            assert len(stand_in) == e - s, "a MATCHES atom is longer than its placeholder"
            text[s - start : e - start] = stand_in
            schema[name] = Type.INT
            placeholders[name] = (pattern, alias)
        alias = next(iter(scan.aliases), None)
        try:
            constraint = matching.parse("".join(text), schema=schema)
        except ConstraintError as exc:
            message = _PLACEHOLDER_RE.sub(
                lambda m: (
                    f"subject MATCHES '{placeholders[m.group()][0]}'"
                    if m.group() in placeholders
                    else m.group()
                ),
                exc.message,
            )
            where = start if exc.position is None else start + exc.position
            raise QueryError(message, where, code=exc.code) from None
        disjuncts: list[tuple[Test, ...]] = []
        for disjunct in constraint:
            tests: list[Test] = []
            for attr, pred in disjunct:
                if attr.name in placeholders:
                    pattern, test_alias = placeholders[attr.name]
                    assert isinstance(pred, Interval)
                    tests.append(SubjectTest(test_alias, pattern, negated=not _holds_zero(pred)))
                else:
                    tests.append(AttrTest(alias, attr.name, attr.type, pred))
            if tuple(tests) not in disjuncts:
                disjuncts.append(tuple(tests))
        condition = Condition(tuple(disjuncts))
        if CHECKING.get():
            closed_sets_check(condition, self.cur.text, start)
        return condition


def _holds_zero(iv: Interval) -> bool:
    lo: Any = iv.lo
    hi: Any = iv.hi
    return (lo is None or lo <= 0) and (hi is None or hi >= 0)
