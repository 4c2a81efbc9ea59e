"""The subscription language's parser (SPEC 8.3, forms 1 and 2), by recursive descent.

    query       := SELECT select ( composite | atomic )
    select      := '*' | item ( ',' item )*
    item        := attr [ AS name ] | aggregate [ AS name ]        (form 1)
                 | alias '.' attr                                  (form 2; no AS)
    aggregate   := ( AVG | MIN | MAX | SUM | COUNT ) '(' attr ',' integer ')'
    atomic      := [ WHERE conjuncts ] [ group [ having ] | having [ group ] ]
    composite   := FROM alias AND alias [ AND alias [ AND alias ] ] WHERE conjuncts
    conjuncts   := conjunct ( ( ',' | AND ) conjunct )*
    conjunct    := bound | join | condition                        (condition: see conditions.py)
    bound       := [ alias '.' ] ( start_time | end_time ) '=' time
    time        := NOW [ ( '+' | '-' ) duration ] | TIMESTAMP string
    duration    := integer ( s | m | h | d | w ), as in 25m
    join        := alias '.' attr cmp alias '.' attr               (two different aliases)
    group       := GROUP BY attr ( ',' attr )*
    having      := HAVING aggregate cmp literal [ RESET ]
    cmp         := '=' | '!=' | '<>' | '<' | '<=' | '>' | '>='

The query's shape is recognised before anything else is read (``kind_of``): a ``FROM``
followed by a pattern's words is form 3 (read by ``patterns.parser``), ``FROM offers``
form 4 (read by ``watches.parser``, whose docstring has its grammar).

Every refusal is a ``QueryError`` at a 0-based character position; limits (``MAX_*``
below) are checked as the text is read, so an oversized query fails before any work.
"""

from __future__ import annotations

from matching.subscriptions.errors import QueryError
from matching.subscriptions.patterns.parser import PatternReader
from matching.subscriptions.watches.parser import WatchReader

from . import model
from .clauses import MAX_ITEMS, NUMERIC, ClauseReader
from .conditions import COMPARISONS, ConditionReader
from .forms import Kind
from .lexer import DOTTED, END, KW, NAME, OP, Token, describe, tokenize
from .schema import END_TIME, EVENT_SCHEMA, START_TIME, check_attribute

MAX_LENGTH = 10_000
MAX_CONJUNCTS = 64
MIN_ALIASES, MAX_ALIASES = 2, 4

_PATTERN_WORDS = frozenset({"next", "fold", "filter", "events", "union"})


def parse_query(text: str) -> model.Query:
    """The query written in ``text``; ``QueryError`` for anything that is not one."""
    if not isinstance(text, str):
        raise QueryError("a query is text, such as SELECT price WHERE type = 'trade'", 0)
    if len(text) > MAX_LENGTH:
        raise QueryError(
            f"a query may be at most {MAX_LENGTH:,} characters long; this one has {len(text):,}",
            MAX_LENGTH,
            code="too_long",
        )
    return _Parser(text, tokenize(text)).query()


def kind_of(tokens: list[Token]) -> tuple[Kind, Token | None]:
    """The form a token list has, and the token its source starts at (after ``FROM``).

    Only what follows ``FROM`` decides: a pattern's words there (``FILTER``, ``EVENTS``,
    ``NEXT``, ``FOLD``, ``UNION``) make form 3, ``FROM offers`` (then the end, ``WHERE`` or
    ``NOTIFY``) form 4, other names form 2.
    """
    for i, tok in enumerate(tokens):
        if tok.kind == KW and tok.text == "from" and not (i and tokens[i - 1].text == "as"):
            source = tokens[i + 1]
            for later in tokens[i + 1 :]:
                if later.kind == KW and later.text in _PATTERN_WORDS:
                    return Kind.PATTERN, later
            after = tokens[min(i + 2, len(tokens) - 1)]
            if (
                source.kind == NAME
                and source.text.lower() == "offers"
                and (after.kind == END or (after.kind == KW and after.text in ("where", "notify")))
            ):
                return Kind.STATE, source
            return Kind.COMPOSITE, source
    return Kind.EVENTS, None


class _Parser(ClauseReader):
    def query(self) -> model.Query:
        self._expect(KW, "select", what="SELECT at the start of a subscription")
        kind, source = kind_of(self.tokens)
        if kind is Kind.PATTERN:
            reader = PatternReader(self.text, self.tokens)
            reader.i = self.i
            return reader.patterns()
        if kind is Kind.STATE:
            watch = WatchReader(self.text, self.tokens)
            watch.i = self.i
            return watch.watch()
        if kind is Kind.COMPOSITE:
            return self.composite()
        return self.atomic()

    # -- form 1 -----------------------------------------------------------------------------

    def atomic(self) -> model.AtomicQuery:
        select = self.select_list(self.item)
        reader = ConditionReader(self, EVENT_SCHEMA, None)
        conditions: list[model.Condition] = []
        bounds: dict[str, model.TimeBound] = {}
        if self._match(KW, "where"):
            self.conjuncts(reader, conditions, bounds, None)
        group_by: tuple[str, ...] = ()
        having: model.Having | None = None
        group_tok = having_tok = None
        for _ in range(2):
            if group_tok is None and self.is_kw("group"):
                group_tok = self.peek
                group_by = self.group_by()
            elif having_tok is None and self.is_kw("having"):
                having_tok = self.peek
                having = self.having()
        self.expect_end("GROUP BY, HAVING" if group_tok is None or having_tok is None else "")
        items = select or ()
        aggregates = [i for i in items if isinstance(i, model.Aggregate)]
        if aggregates:
            n = aggregates[0].n
            for item, tok in zip(items, self.item_tokens, strict=True):
                if isinstance(item, model.Aggregate) and item.n != n:
                    raise QueryError(
                        f"all aggregates of one SELECT share their window: this one has "
                        f"{item.n} events, the first {n}",
                        tok.position,
                        code="bad_aggregate",
                    )
                if isinstance(item, model.Attr) and item.attribute not in group_by:
                    raise QueryError(
                        f"{item.attribute} is selected beside aggregates, so it must be "
                        f"grouped: add GROUP BY {item.attribute}, or aggregate it",
                        tok.position,
                        code="bad_aggregate",
                    )
            if having_tok is not None:
                raise QueryError(
                    "HAVING selects events and cannot be combined with aggregates in SELECT: "
                    "use one or the other",
                    having_tok.position,
                    code="bad_aggregate",
                )
        elif group_tok is not None and having_tok is None:
            raise QueryError(
                "GROUP BY needs aggregates in SELECT (such as AVG(price, 10)) or a HAVING",
                group_tok.position,
                code="bad_aggregate",
            )
        return model.AtomicQuery(
            select,
            tuple(conditions),
            model.TimeRange(bounds.get(START_TIME), bounds.get(END_TIME)),
            group_by,
            having,
        )

    def item(self) -> model.Item:
        tok = self.peek
        if tok.kind == KW and tok.text.upper() in model.AGGREGATES:
            aggregate = self.aggregate()
            return model.Aggregate(
                aggregate.func, aggregate.attribute, aggregate.n, aggregate.type, self.as_name()
            )
        if tok.kind == DOTTED:
            raise self.error(
                f"{tok.text}: alias.attr belongs to composite subscriptions (FROM a AND b); "
                "here select the attribute alone",
                code="unknown_attribute",
            )
        attribute = self.attribute()
        return model.Attr(attribute, self.as_name())

    def composite(self) -> model.CompositeQuery:
        select_tokens: list[Token] = []
        if not self._match(OP, "*"):
            while True:
                tok = self.peek
                if tok.kind != DOTTED or tok.text.count(".") != 1:
                    raise self.error(
                        f"a composite subscription selects alias.attr items, such as b.offer; "
                        f"found {describe(tok)}"
                        + (" (no AS here: data is keyed by alias)" if tok.kind == KW else "")
                    )
                select_tokens.append(self.advance())
                self.at_most(
                    len(select_tokens), MAX_ITEMS, f"at most {MAX_ITEMS} items in SELECT", tok
                )
                if not self._match(OP, ","):
                    break
            if self.is_kw("as"):
                raise self.error(
                    "a composite subscription takes no AS: its data is keyed by alias",
                    code="syntax",
                )
        self._expect(KW, "from", what="FROM and the aliases, as in FROM a AND b")
        aliases: list[str] = []
        while True:
            tok = self.alias_token()
            if tok.text in aliases:
                raise QueryError(
                    f"the alias {tok.text} is already used", tok.position, code="duplicate"
                )
            aliases.append(tok.text)
            self.at_most(
                len(aliases),
                MAX_ALIASES,
                f"a composite subscription joins at most {MAX_ALIASES} aliases",
                tok,
            )
            if not self._match(KW, "and"):
                break
        if len(aliases) < MIN_ALIASES:
            raise self.error(
                "a composite subscription joins two to four aliases: FROM a AND b", code="syntax"
            )
        select: tuple[model.Attr, ...] | None = None
        if select_tokens:
            items = []
            for tok in select_tokens:
                alias, _, attribute = tok.text.partition(".")
                self.check_alias(alias, tuple(aliases), tok)
                check_attribute(attribute, tok.position + len(alias) + 1)
                item = model.Attr(attribute, None, alias)
                if item in items:
                    raise QueryError(
                        f"{tok.text} is selected twice", tok.position, code="duplicate"
                    )
                items.append(item)
            select = tuple(items)
        self._expect(KW, "where", what="WHERE and the conditions of the join")
        reader = ConditionReader(self, EVENT_SCHEMA, tuple(aliases))
        conditions: list[model.Condition] = []
        joins: list[model.Join] = []
        bounds: dict[str, model.TimeBound] = {}
        self.conjuncts(reader, conditions, bounds, joins)
        self.expect_end("")
        alias_times = []
        for alias in aliases:
            start, end = bounds.get(f"{alias}.{START_TIME}"), bounds.get(f"{alias}.{END_TIME}")
            if start is not None or end is not None:
                alias_times.append((alias, model.TimeRange(start, end)))
        return model.CompositeQuery(
            select,
            tuple(aliases),
            tuple(conditions),
            tuple(joins),
            model.TimeRange(bounds.get(START_TIME), bounds.get(END_TIME)),
            tuple(alias_times),
        )

    def join(self, aliases: tuple[str, ...]) -> model.Join:
        left_tok = self.advance()
        op_tok = self.advance()
        right_tok = self.advance()
        sides = []
        for tok in (left_tok, right_tok):
            alias, _, attribute = tok.text.partition(".")
            self.check_alias(alias, aliases, tok)
            check_attribute(attribute, tok.position + len(alias) + 1)
            sides.append((alias, attribute))
        (la, lattr), (ra, rattr) = sides
        if la == ra:
            raise QueryError(
                "a join compares attributes of two different aliases, as in b.subject = a.subject",
                left_tok.position,
                code="bad_join",
            )
        lt, rt = EVENT_SCHEMA[lattr], EVENT_SCHEMA[rattr]
        if lt is not rt and not (lt in NUMERIC and rt in NUMERIC):
            raise QueryError(
                f"{left_tok.text} is {lt.value} and {right_tok.text} is {rt.value}: "
                "a join compares values of one type",
                op_tok.position,
                code="type_mismatch",
            )
        op = "!=" if op_tok.text == "<>" else op_tok.text
        return model.Join(la, lattr, op, ra, rattr)

    # -- shared -----------------------------------------------------------------------------

    def conjuncts(
        self,
        reader: ConditionReader,
        conditions: list[model.Condition],
        bounds: dict[str, model.TimeBound],
        joins: list[model.Join] | None,
    ) -> None:
        count = 0
        while True:
            tok = self.peek
            count += 1
            self.at_most(count, MAX_CONJUNCTS, f"at most {MAX_CONJUNCTS} conjuncts in WHERE", tok)
            if self.is_bound():
                key, bound = self.bound(reader.aliases)
                if key in bounds:
                    raise QueryError(f"{key} is set twice", tok.position, code="duplicate")
                bounds[key] = bound
            elif (
                joins is not None
                and tok.kind == DOTTED
                and self.peek_at(1).kind == OP
                and self.peek_at(1).text in COMPARISONS
                and self.peek_at(2).kind == DOTTED
            ):
                assert reader.aliases is not None
                joins.append(self.join(reader.aliases))
            else:
                conditions.append(reader.conjunct())
            if not (self._match(OP, ",") or self._match(KW, "and")):
                return
