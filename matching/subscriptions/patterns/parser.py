"""The parser of form 3 (SPEC 8.3 patterns), by recursive descent after ``SELECT``.

    patterns  := pattern ( UNION SELECT pattern )*
    pattern   := items FROM source ( step )* [ WHERE cond ] [ WITHIN duration ]
    item      := ( alias.attr | alias.last.attr | name | DUR | start | end ) [ AS name ]
    source    := ( FILTER '{' cond '}' '(' EVENTS ')' | EVENTS ) AS alias
    step      := NEXT '{' cond '}' source
               | FOLD '{' cond ',' cond ( ',' aggregate AS name )* '}' source
    aggregate := COUNT | ( SUM | AVG | MIN | MAX ) '(' alias.attr ')'
    cond      := and ( OR and )*
    and       := not ( AND not )*
    not       := NOT not | '(' cond ')' | ref MATCHES string | expr cmp expr
    expr      := term ( ( '+' | '-' ) term )*
    term      := factor ( ( '*' | '/' ) factor )*
    factor    := number | duration | string | TIMESTAMP string | ref | name | DUR
               | '(' expr ')' | '-' factor

A ``FILTER`` condition is static: it names the incoming event's attributes bare
(``type = 'trade'``), and naming an alias, an aggregate or ``DUR`` there is an error at
that name. Elsewhere attributes are always qualified (``b.price``), a bare name is an
aggregate of an earlier ``FOLD``, and ``.last`` belongs to a ``FOLD``'s alias. Names are
checked once the alias they need is known (a step's alias comes after its condition),
and every error points at the offending token. Limits fail fast as the text is read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

from matching import Type
from matching.subscriptions.errors import QueryError
from matching.subscriptions.language.clauses import MAX_DURATION, MAX_ITEMS, UNITS, ClauseReader
from matching.subscriptions.language.closed_sets import equality_check
from matching.subscriptions.language.conditions import (
    ConditionReader,  # the one home of subject pattern checks
)
from matching.subscriptions.language.lexer import (
    DOTTED,
    DURATION,
    END,
    KW,
    NAME,
    NUM,
    OP,
    QNAME,
    STR,
    Token,
    describe,
)
from matching.subscriptions.language.schema import EVENT_SCHEMA, check_attribute

from . import model as pattern_model

MAX_STEPS = 8  # steps after the first source, per side
MAX_SIDES = 8  # patterns joined by UNION
MAX_DEPTH = 32  # nesting of parentheses, NOT and unary minus
MAX_NODES = 256  # comparisons and operators in one condition

NEGATE = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_CMP = ("=", "!=", "<>", "<", "<=", ">", ">=")
_FOLD_FUNCS = ("COUNT", "SUM", "AVG", "MIN", "MAX")
_BOUNDS = ("start", "end")


def _kind(t: Type) -> str:
    """The comparison class of an attribute type: numbers, strings or times."""
    if t in (Type.INT, Type.DECIMAL):
        return "number"
    if t is Type.TIMESTAMP:
        return "timestamp"
    return "string"


class _Bare(NamedTuple):
    """A value read where a condition may start, inside parentheses: ``(b.price - 1)``."""

    expr: pattern_model.Expr
    type: str


class _Scope:
    """What a condition may name: ``aliases`` (``None``: static), ``.last`` aliases, and
    aggregate names; ``own`` are the aggregates of the FOLD being read (named too early)."""

    def __init__(
        self,
        aliases: tuple[str, ...] | None,
        folds: frozenset[str] = frozenset(),
        aggregates: frozenset[str] = frozenset(),
        own: frozenset[str] = frozenset(),
    ) -> None:
        self.aliases = aliases
        self.folds = folds
        self.aggregates = aggregates
        self.own = own


class PatternReader(ClauseReader):
    """Reads form 3 from just after the first ``SELECT``."""

    def patterns(self) -> pattern_model.PatternQuery:
        sides = [self.pattern()]
        while self._match(KW, "union"):
            tok = self.peek
            self._expect(KW, "select", what="SELECT after UNION (each side is a whole pattern)")
            if len(sides) >= MAX_SIDES:
                raise QueryError(
                    f"at most {MAX_SIDES} patterns joined by UNION", tok.position, code="too_many"
                )
            sides.append(self.pattern())
        if self.peek.kind != END:
            raise self.error(
                f"expected WHERE, WITHIN, UNION or the end of the query; found {describe(self.peek)}"
            )
        return pattern_model.PatternQuery(tuple(sides))

    # -- one pattern ------------------------------------------------------------------------

    def pattern(self) -> pattern_model.Pattern:
        self._pending: list[
            tuple[pattern_model.Ref | pattern_model.AggregateRef | pattern_model.Dur, Token]
        ] = []
        if self.is_op("*"):
            raise self.error(
                "a pattern selects its items (a.price, DUR, start, end, aggregate names), not *"
            )
        raw_items: list[tuple[Token, str | None]] = []
        while True:
            tok = self.advance()
            if tok.kind not in (DOTTED, NAME, QNAME) and not (tok.kind == KW and tok.text == "dur"):
                raise self.error(
                    f"expected an item such as a.price, DUR, start, end or an aggregate name; "
                    f"found {describe(tok)}",
                    tok,
                )
            raw_items.append((tok, self.as_name()))
            if len(raw_items) > MAX_ITEMS:
                raise QueryError(
                    f"at most {MAX_ITEMS} items in SELECT", tok.position, code="too_many"
                )
            if not self._match(OP, ","):
                break
        self._expect(KW, "from", what="FROM and the pattern's first source")
        first = self.source(())
        aliases: list[str] = [first.alias]
        folds: set[str] = set()
        aggregates: set[str] = set()
        steps: list[pattern_model.Step] = []
        while self.is_kw("next", "fold"):
            step_tok = self.advance()
            if len(steps) >= MAX_STEPS:
                raise QueryError(
                    f"a pattern has at most {MAX_STEPS} NEXT or FOLD steps",
                    step_tok.position,
                    code="too_many",
                )
            step = self.step(step_tok.text, tuple(aliases), frozenset(folds), frozenset(aggregates))
            steps.append(step)
            aliases.append(step.source.alias)
            if step.kind == "fold":
                folds.add(step.source.alias)
                for agg in step.aggregates:
                    aggregates.add(agg.name)
        scope = _Scope(tuple(aliases), frozenset(folds), frozenset(aggregates))
        where = None
        if self._match(KW, "where"):
            mark = len(self._pending)
            where = self.condition(scope)
            for expr, tok in self._pending[mark:]:
                self.check(expr, tok, scope)
        within = None
        if self._match(KW, "within"):
            within = self.duration_seconds()
        select = self.items(raw_items, scope)
        return pattern_model.Pattern(select, first, tuple(steps), where, within)

    def items(
        self, raw: list[tuple[Token, str | None]], scope: _Scope
    ) -> tuple[pattern_model.PatternItem, ...]:
        items: list[pattern_model.PatternItem] = []
        keys: set[str] = set()
        for tok, name in raw:
            expr: (
                pattern_model.Ref
                | pattern_model.AggregateRef
                | pattern_model.Dur
                | pattern_model.Bound
            )
            if tok.kind == KW:
                expr = pattern_model.Dur()
            elif tok.kind == NAME and tok.text in _BOUNDS and tok.text not in scope.aggregates:
                expr = pattern_model.Bound(tok.text)
            elif tok.kind == DOTTED:
                expr = self.ref(tok)
                self.check(expr, tok, scope)
            else:
                expr = pattern_model.AggregateRef(self.bare_name(tok))
                self.check(expr, tok, scope)
            item = pattern_model.PatternItem(expr, name)
            self.unique_key(item_key(item), keys, tok)
            items.append(item)
        return tuple(items)

    def source(self, taken: tuple[str, ...]) -> pattern_model.Source:
        condition = None
        if self.is_kw("filter"):
            self.advance()
            self._expect(OP, "{", what="'{' after FILTER, as in FILTER{type = 'trade'}(EVENTS)")
            condition = self.condition(_Scope(None))
            self._expect(OP, "}", what="'}' to close the FILTER's condition")
            self._expect(OP, "(", what="'(' and EVENTS after FILTER{...}")
            self._expect(KW, "events", what="EVENTS inside FILTER{...}( )")
            self._expect(OP, ")", what="')' after FILTER{...}(EVENTS")
        else:
            self._expect(KW, "events", what="a source: EVENTS or FILTER{condition}(EVENTS)")
        self._expect(KW, "as", what="AS and an alias after the source, as in EVENTS AS a")
        tok = self.alias_token()
        if tok.text in _BOUNDS or tok.text == "last":
            raise QueryError(
                f"{tok.text} cannot be an alias (it is a name of its own in patterns)",
                tok.position,
                code="reserved_word",
            )
        if tok.text in taken:
            raise QueryError(
                f"the alias {tok.text} is already used", tok.position, code="duplicate"
            )
        return pattern_model.Source(tok.text, condition)

    def step(
        self, kind: str, before: tuple[str, ...], folds: frozenset[str], aggregates: frozenset[str]
    ) -> pattern_model.Step:
        self._expect(OP, "{", what=f"'{{' after {kind.upper()}, as in {kind.upper()}{{...}}")
        mark = len(self._pending)
        scope = _Scope((), folds, aggregates)  # aliases filled in once the source is read
        condition = self.condition(scope)
        rebind = None
        found: list[pattern_model.FoldAggregate] = []
        agg_tokens: list[Token] = []
        if kind == "fold":
            self._expect(OP, ",", what="',' and the FOLD's iteration condition, as in FOLD{c, f}")
            rebind = self.condition(scope)
            while self._match(OP, ","):
                agg_tokens.append(self.peek)
                found.append(self.fold_aggregate())
        self._expect(OP, "}", what=f"'}}' to close {kind.upper()}{{")
        source = self.source(before)
        alias = source.alias
        taken = set(before) | aggregates
        for agg, tok in zip(found, agg_tokens, strict=True):
            if agg.name in taken or agg.name == alias or agg.name in _BOUNDS:
                raise QueryError(
                    f"the name {agg.name} is already used", tok.position, code="duplicate"
                )
            if agg.argument is not None and agg.argument.alias != alias:
                raise QueryError(
                    f"{agg.func} runs over the FOLD's own events: write {agg.func}({alias}."
                    f"{agg.argument.attribute})",
                    tok.position,
                    code="unknown_alias",
                )
            taken.add(agg.name)
        checks = _Scope(
            (*before, alias),
            folds | {alias} if kind == "fold" else folds,
            aggregates,
            frozenset(a.name for a in found),
        )
        for expr, tok in self._pending[mark:]:
            self.check(expr, tok, checks)
        del self._pending[mark:]
        return pattern_model.Step(kind, condition, source, rebind, tuple(found))

    def fold_aggregate(self) -> pattern_model.FoldAggregate:
        tok = self.advance()
        func = tok.text.upper()
        if tok.kind != KW or func not in _FOLD_FUNCS:
            raise self.error(
                f"expected an aggregate such as COUNT AS n or MAX(b.price) AS top; found "
                f"{describe(tok)}",
                tok,
            )
        argument = None
        if func != "COUNT":
            self._expect(OP, "(", what=f"'(' after {func}, as in {func}(b.price)")
            arg = self._expect(
                DOTTED, what=f"the FOLD's alias and an attribute, as in {func}(b.price)"
            )
            argument = self.ref(arg)
            if argument.last:
                raise QueryError(
                    f"{func} runs over each iteration's event: drop .last", arg.position
                )
            if _kind(EVENT_SCHEMA[argument.attribute]) != "number":
                raise QueryError(
                    f"{func} needs a numeric attribute; {argument.attribute} is not",
                    arg.position,
                    code="bad_aggregate",
                )
            self._expect(OP, ")", what=f"')' to close {func}(")
        name = self.as_name()
        if name is None:
            raise self.error(f"a FOLD's aggregate is named: {func}... AS name", code="syntax")
        return pattern_model.FoldAggregate(func, argument, name)

    def duration_seconds(self) -> int:
        d = self._expect(DURATION, what="a duration such as 30s, 25m, 2h, 7d or 1w")
        seconds = int(d.text[:-1]) * UNITS[d.text[-1]]
        if seconds > MAX_DURATION:
            raise QueryError(
                "a duration may be at most 36500d (100 years)", d.position, code="bad_literal"
            )
        return seconds

    # -- conditions -------------------------------------------------------------------------

    def condition(self, scope: _Scope) -> pattern_model.Cond:
        self._depth = 0
        self._nodes = 0
        return self._cond(self._or(scope, False))

    def _deeper(self, opener: Token) -> None:
        """Count one level opened at ``opener``; past ``MAX_DEPTH`` refuse it there, before
        anything deeper is read (deep text would exhaust Python's stack)."""
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self.error(
                f"conditions nest at most {MAX_DEPTH} levels deep (parentheses, NOT and "
                "unary minus)",
                opener,
                code="too_deep",
            )

    def _or(self, scope: _Scope, negated: bool) -> pattern_model.Cond | _Bare:
        # NOT (x OR y) is NOT x AND NOT y
        return self._chain("or", lambda: self._and(scope, negated), conjunction=negated)

    def _and(self, scope: _Scope, negated: bool) -> pattern_model.Cond | _Bare:
        return self._chain("and", lambda: self._not(scope, negated), conjunction=not negated)

    def _chain(
        self, word: str, operand: Callable[[], pattern_model.Cond | _Bare], *, conjunction: bool
    ) -> pattern_model.Cond | _Bare:
        """Operands read by ``operand`` and joined by the keyword ``word``: a single one as
        it came (a bare value included), several as one condition, an ``All`` if
        ``conjunction`` else an ``Any_``."""
        first = operand()
        if isinstance(first, _Bare) or not self.is_kw(word):
            return first
        parts = [first]
        while self._match(KW, word):
            parts.append(self._cond(operand()))
        return _join(parts, conjunction=conjunction)

    def _cond(self, part: pattern_model.Cond | _Bare) -> pattern_model.Cond:
        if isinstance(part, _Bare):
            raise self.error(
                f"expected a comparison (=, !=, <, <=, >, >=) after the value; found "
                f"{describe(self.peek)}"
            )
        return part

    def _not(self, scope: _Scope, negated: bool) -> pattern_model.Cond | _Bare:
        """One comparison, ``MATCHES`` or parenthesised condition, under ``negated``. Inside
        parentheses a bare value comes back as ``_Bare`` for the enclosing comparison, so
        ``(b.price - a.price) / a.price > 0.05`` reads as arithmetic."""
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise self.error(f"a condition has at most {MAX_NODES} parts", code="too_many")
        depth = self._depth
        was_negated = negated
        while not_ := self._match(KW, "not"):
            negated = not negated
            self._deeper(not_)
        try:
            first = self.peek
            if self._match(OP, "("):
                self._deeper(first)
                inner = self._or(scope, negated)
                self._expect(
                    OP, ")", what=f"')' to close the '(' at character {first.position + 1}"
                )
                if isinstance(inner, _Bare):
                    if negated != was_negated:
                        raise QueryError(
                            "NOT applies to a condition, not to a value", first.position
                        )
                    left = self._expr(scope, (inner.expr, inner.type, first))
                    if negated == was_negated and depth > 0 and not self.is_op(*_CMP):
                        return _Bare(left[0], left[1])  # ((b.price)) inside more parentheses
                    return self._compare(scope, left, negated, first)
                if self.is_op(*_CMP, "+", "-", "*", "/"):
                    raise self.error(
                        "a condition in parentheses cannot be compared or computed with"
                    )
                return inner
            if (
                first.kind in (DOTTED, NAME)
                and self.peek_at(1).kind == KW
                and self.peek_at(1).text == "matches"
            ):
                return self._matches(scope, negated)
            left = self._expr(scope)
            if negated == was_negated and depth > 0 and not self.is_op(*_CMP):
                return _Bare(left[0], left[1])
            return self._compare(scope, left, negated, first)
        finally:
            self._depth = depth

    def _matches(self, scope: _Scope, negated: bool) -> pattern_model.Matches:
        tok = self.peek
        ref, _ = self._factor(scope)
        if not isinstance(ref, pattern_model.Ref) or ref.attribute != "subject":
            raise QueryError(
                f"MATCHES takes a subject, as in {'subject' if scope.aliases is None else 'b.subject'}"
                " MATCHES 'office.>'",
                tok.position,
            )
        self.advance()
        string = self._expect(
            STR, what="a quoted subject pattern after MATCHES, such as 'office.>'"
        )
        return pattern_model.Matches(
            ref, ConditionReader(self, EVENT_SCHEMA, None).pattern(string), negated
        )

    def _compare(
        self, scope: _Scope, left: tuple[pattern_model.Expr, str], negated: bool, left_tok: Token
    ) -> pattern_model.Cond:
        op_tok = self.advance()
        if not (op_tok.kind == OP and op_tok.text in _CMP):
            raise self.error(
                f"expected a comparison (=, !=, <, <=, >, >=) or MATCHES; found {describe(op_tok)}",
                op_tok,
            )
        right_tok = self.peek
        right, rt = self._expr(scope)
        if left[1] != rt:
            raise QueryError(
                f"this compares a {left[1]} with a {rt}: both sides must be of one type",
                right_tok.position,
                code="type_mismatch",
            )
        op = "!=" if op_tok.text == "<>" else op_tok.text
        if op == "=" and not negated:
            equality_check(left[0], right, self.text, left_tok.position)
        return pattern_model.Compare(NEGATE[op] if negated else op, left[0], right)

    def _expr(
        self, scope: _Scope, first: tuple[pattern_model.Expr, str, Token] | None = None
    ) -> tuple[pattern_model.Expr, str]:
        """An expression; ``first`` is an operand already read (a parenthesised value)."""
        left_tok = self.peek if first is None else first[2]
        left, lt = self._term(scope, None if first is None else first[:2])
        while True:
            tok = self.peek
            if tok.kind == OP and tok.text in "+-":
                self.advance()
                op = tok.text
                right_tok = self.peek
                right, rt = self._term(scope)
            elif tok.kind == NUM and tok.text.startswith("-"):  # a.price -1 lexes as a number
                self.advance()
                op, right_tok, rt = "-", tok, "number"
                right = pattern_model.Literal(Decimal(tok.text[1:]))
            else:
                return left, lt
            self._arith(left_tok, lt, right_tok, rt, op)
            left = pattern_model.Arithmetic(op, left, right)

    def _term(
        self, scope: _Scope, first: tuple[pattern_model.Expr, str] | None = None
    ) -> tuple[pattern_model.Expr, str]:
        left_tok = self.peek
        left, lt = self._factor(scope) if first is None else first
        while self.is_op("*", "/"):
            op = self.advance().text
            right_tok = self.peek
            right, rt = self._factor(scope)
            self._arith(left_tok, lt, right_tok, rt, op)
            left = pattern_model.Arithmetic(op, left, right)
        return left, lt

    def _arith(self, left_tok: Token, lt: str, right_tok: Token, rt: str, op: str) -> None:
        for tok, t in ((left_tok, lt), (right_tok, rt)):
            if t != "number":
                raise QueryError(
                    f"'{op}' works on numbers and durations, and this is a {t}",
                    tok.position,
                    code="type_mismatch",
                )

    def _factor(self, scope: _Scope) -> tuple[pattern_model.Expr, str]:
        tok = self.advance()
        if tok.kind == NUM:
            try:
                return pattern_model.Literal(Decimal(tok.text)), "number"
            except InvalidOperation:  # pragma: no cover - the lexer admits numbers only
                raise self.error(f"{tok.text} is not a number", tok) from None
        if tok.kind == DURATION:
            self.i -= 1
            return pattern_model.Duration(self.duration_seconds()), "number"
        if tok.kind == STR:
            return pattern_model.Literal(tok.text[1:-1].replace("''", "'")), "string"
        if tok.kind == KW and tok.text == "timestamp":
            self.i -= 1
            at = self.literal(Type.TIMESTAMP, "the time")
            assert isinstance(at, dt.datetime)
            return pattern_model.Literal(at), "timestamp"
        if tok.kind == KW and tok.text == "dur":
            if scope.aliases is None:
                raise QueryError(
                    "a FILTER condition is static: it tests the incoming event alone, and DUR "
                    "belongs to the pattern's conditions",
                    tok.position,
                    code="not_static",
                )
            self._pending.append((pattern_model.Dur(), tok))
            return pattern_model.Dur(), "number"
        if tok.kind == OP and tok.text == "(":
            self._deeper(tok)
            inner = self._expr(scope)
            self._expect(OP, ")", what="')' to close the '('")
            self._depth -= 1
            return inner
        if tok.kind == OP and tok.text == "-":
            operand_tok = self.peek
            self._deeper(tok)  # - - - x nests as ( ( x ) ) does
            operand, t = self._factor(scope)
            self._depth -= 1
            self._arith(operand_tok, t, operand_tok, t, "-")
            return pattern_model.Arithmetic("-", pattern_model.Literal(Decimal(0)), operand), t
        if tok.kind == DOTTED:
            ref = self.ref(tok)
            if scope.aliases is None:
                raise QueryError(
                    f"a FILTER condition is static: it tests the incoming event's own "
                    f"attributes, written bare ({ref.attribute}), and {tok.text} names an alias",
                    tok.position,
                    code="not_static",
                )
            self._pending.append((ref, tok))
            return ref, _kind(EVENT_SCHEMA[ref.attribute])
        if tok.kind in (NAME, QNAME):
            name = self.bare_name(tok)
            if scope.aliases is None:
                check_attribute(name, tok.position)
                return pattern_model.Ref(None, name), _kind(EVENT_SCHEMA[name])
            agg = pattern_model.AggregateRef(name)
            self._pending.append((agg, tok))
            return agg, "number"
        if tok.kind == KW:
            raise self.error(
                f"expected a value, found {describe(tok)} (keywords are reserved; an attribute "
                'named like one is written in double quotes, as in a."limit")',
                tok,
            )
        raise self.error(
            f"expected a value such as 1.00, 'trade', 30m, b.price or DUR; found {describe(tok)}",
            tok,
        )

    # -- names ------------------------------------------------------------------------------

    def bare_name(self, tok: Token) -> str:
        return tok.text[1:-1].replace('""', '"') if tok.kind == QNAME else tok.text

    def ref(self, tok: Token) -> pattern_model.Ref:
        parts = tok.text.split(".")
        if len(parts) == 3 and parts[1] == "last":
            ref = pattern_model.Ref(parts[0], parts[2], last=True)
        elif len(parts) == 2:
            ref = pattern_model.Ref(parts[0], parts[1])
        else:
            raise QueryError(
                f"{tok.text}: write alias.attr or alias.last.attr", tok.position, code="syntax"
            )
        check_attribute(ref.attribute, tok.position + len(tok.text) - len(ref.attribute))
        return ref

    def check(
        self,
        expr: pattern_model.Ref | pattern_model.AggregateRef | pattern_model.Dur,
        tok: Token,
        scope: _Scope,
    ) -> None:
        """``expr`` (read at ``tok``) names only what ``scope`` allows."""
        assert scope.aliases is not None
        if isinstance(expr, pattern_model.Ref):
            if expr.alias not in scope.aliases:
                raise QueryError(
                    f"{expr.alias} is not an alias bound here (bound: {', '.join(scope.aliases)})",
                    tok.position,
                    code="unknown_alias",
                )
            if expr.last and expr.alias not in scope.folds:
                raise QueryError(
                    f"{expr.alias}.last belongs to a FOLD's alias, and {expr.alias} is not one",
                    tok.position,
                    code="unknown_alias",
                )
        elif isinstance(expr, pattern_model.AggregateRef):
            if expr.name in scope.own:
                raise QueryError(
                    f"{expr.name} is this FOLD's own aggregate: it may be used in later steps "
                    "and in WHERE, not in its own conditions",
                    tok.position,
                    code="unknown_attribute",
                )
            if expr.name not in scope.aggregates:
                raise QueryError(
                    f"{expr.name} is not an aggregate of an earlier FOLD; attributes are written "
                    "with their alias, as in b.price",
                    tok.position,
                    code="unknown_attribute",
                )


def _join(parts: list[pattern_model.Cond], *, conjunction: bool) -> pattern_model.Cond:
    """``All`` (or ``Any_``) of ``parts``, flattened; one part stands alone."""
    kind = pattern_model.All if conjunction else pattern_model.Any_
    flat: list[pattern_model.Cond] = []
    for p in parts:
        flat.extend(
            p.parts
            if isinstance(p, pattern_model.All | pattern_model.Any_) and isinstance(p, kind)
            else (p,)
        )
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


def item_key(item: pattern_model.PatternItem) -> str:
    """The key of an item in ``data``: its ``AS`` name, else its canonical text."""
    if item.name is not None:
        return item.name
    expr = item.expr
    if isinstance(expr, pattern_model.Dur):
        return "DUR"
    if isinstance(expr, pattern_model.Bound):
        return expr.which
    if isinstance(expr, pattern_model.AggregateRef):
        return expr.name
    return f"{expr.alias}.{'last.' if expr.last else ''}{expr.attribute}"
