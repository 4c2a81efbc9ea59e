"""The clauses both forms share: items, aggregates, names, literals, time bounds.

``ClauseReader`` reads them from a ``Cursor``; the query-level parser (``parser``) is
built on it. ``output_key`` is the one rule for the keys of a notification's ``data``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

import matching
from matching import ConstraintError, Type
from matching.subscriptions.errors import QueryError

from .conditions import COMPARISONS
from .cursor import Cursor
from .lexer import DOTTED, DURATION, END, KW, NAME, NUM, OP, QNAME, STR, Token, describe
from .model import AGGREGATES, Aggregate, Having, Item, TimeBound
from .schema import END_TIME, EVENT_SCHEMA, START_TIME, check_attribute

MAX_ITEMS = 64
MAX_GROUP_BY = 16
MAX_WINDOW = 10_000
MAX_DURATION = 36_500 * 86_400  # 100 years of days, in seconds

UNITS = {"w": 7 * 86_400, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
NUMERIC = (Type.INT, Type.DECIMAL)


class ClauseReader(Cursor):
    item_tokens: list[Token]

    def as_name(self) -> str | None:
        if not self._match(KW, "as"):
            return None
        tok = self.advance()
        if tok.kind == NAME:
            return tok.text
        if tok.kind == QNAME and len(tok.text) > 2:
            return tok.text[1:-1].replace('""', '"')
        if tok.kind == KW:
            raise self.error(
                f"{tok.text.upper()} is a reserved keyword and cannot be a name after AS; "
                "choose another name",
                tok,
                code="reserved_word",
            )
        raise self.error(f"expected a name after AS, found {describe(tok)}", tok)

    def attribute(self, schema: Mapping[str, Type] = EVENT_SCHEMA) -> str:
        """The attribute of ``schema`` at the cursor, consumed."""
        tok = self.peek
        if tok.kind == NAME:
            name = tok.text
        elif tok.kind == QNAME:
            name = tok.text[1:-1].replace('""', '"')
        elif tok.kind == KW:
            raise self.error(
                f"expected an attribute, found {describe(tok)} (keywords are reserved)",
                code="reserved_word",
            )
        else:
            raise self.error(f"expected an attribute, found {describe(tok)}")
        check_attribute(name, tok.position, schema)
        self.advance()
        return name

    def aggregate(self) -> Aggregate:
        func_tok = self.advance()
        func = func_tok.text.upper()
        self._expect(OP, "(", what=f"'(' after {func}, as in {func}(price, 10)")
        attr_tok = self.peek
        attribute = self.attribute()
        t = EVENT_SCHEMA[attribute]
        if func in ("AVG", "SUM") and t not in NUMERIC:
            raise QueryError(
                f"{func} needs a numeric attribute; {attribute} is {t.value}",
                attr_tok.position,
                code="bad_aggregate",
            )
        self._expect(OP, ",", what=f"',' and the window size, as in {func}({attribute}, 10)")
        n_tok = self._expect(NUM, what="the window size, a whole number of events such as 10")
        if not n_tok.text.isdigit() or not 1 <= int(n_tok.text) <= MAX_WINDOW:
            raise QueryError(
                f"the window size is a whole number of events from 1 to {MAX_WINDOW:,}",
                n_tok.position,
                code="bad_window",
            )
        self._expect(OP, ")", what=f"')' to close {func}(")
        return Aggregate(func, attribute, int(n_tok.text), t)

    def group_by(self) -> tuple[str, ...]:
        self.advance()
        self._expect(KW, "by", what="BY after GROUP")
        names: list[str] = []
        while True:
            tok = self.peek
            name = self.attribute()
            if name in names:
                raise QueryError(f"{name} is already grouped", tok.position, code="duplicate")
            names.append(name)
            self.at_most(
                len(names), MAX_GROUP_BY, f"at most {MAX_GROUP_BY} attributes in GROUP BY", tok
            )
            if not self._match(OP, ","):
                return tuple(names)

    def having(self) -> Having:
        self.advance()
        if not (self.peek.kind == KW and self.peek.text.upper() in AGGREGATES):
            raise self.error(
                f"expected an aggregate after HAVING, such as AVG(price, 3) > 1.05; "
                f"found {describe(self.peek)}"
            )
        aggregate = self.aggregate()
        op_tok = self.advance()
        if not (op_tok.kind == OP and op_tok.text in COMPARISONS):
            raise self.error(
                f"expected a comparison (=, !=, <, <=, >, >=) after {aggregate.func}(...), "
                f"found {describe(op_tok)}",
                op_tok,
            )
        result = result_type(aggregate)
        value = self.literal(result, f"{aggregate.func}({aggregate.attribute}, {aggregate.n})")
        reset = self._match(KW, "reset") is not None
        op = "!=" if op_tok.text == "<>" else op_tok.text
        return Having(aggregate, op, value, reset)  # type: ignore[arg-type]  # value parsed for the aggregate's type

    def literal(self, t: Type, what: str) -> object:
        """One literal of type ``t``, converted by the constraint language's own rules."""
        start = self.peek
        if self._match(KW, "timestamp", "date"):
            last = self._expect(STR, what=f"a quoted value after {start.text.upper()}")
        elif start.kind in (NUM, STR):
            last = self.advance()
        else:
            raise self.error(f"expected a value to compare {what} with, found {describe(start)}")
        source = self.text[start.position : self.end_of(last)]
        try:
            return matching.parse_literal(source, t)
        except ConstraintError as exc:
            raise QueryError(
                exc.message.replace(" the value ", f" {what} "),
                start.position + (exc.position or 0),
                code=exc.code,
            ) from None

    # -- form 2 -----------------------------------------------------------------------------

    def check_alias(self, alias: str, aliases: tuple[str, ...], tok: Token) -> None:
        if alias not in aliases:
            raise QueryError(
                f"{alias} is not an alias of this subscription (FROM {' AND '.join(aliases)})",
                tok.position,
                code="unknown_alias",
            )

    def select_list(self, item: Callable[[], Item]) -> tuple[Item, ...] | None:
        self.item_tokens = []
        if self._match(OP, "*"):
            return None
        items: list[Item] = []
        keys: set[str] = set()
        while True:
            tok = self.peek
            it = item()
            self.unique_key(output_key(it), keys, tok)
            items.append(it)
            self.item_tokens.append(tok)
            self.at_most(len(items), MAX_ITEMS, f"at most {MAX_ITEMS} items in SELECT", tok)
            if not self._match(OP, ","):
                return tuple(items)

    def unique_key(self, key: str, keys: set[str], tok: Token) -> None:
        """Adds ``key`` to the ``data`` keys of ``SELECT``; a repeated key is an error."""
        if key in keys:
            raise QueryError(
                f"two items of SELECT would both be called {key} in data: rename one with AS",
                tok.position,
                code="duplicate",
            )
        keys.add(key)

    def alias_token(self) -> Token:
        """The alias at the cursor (a plain name, not a keyword), consumed."""
        tok = self.peek
        if tok.kind == KW:
            raise self.error(
                f"{tok.text.upper()} is a reserved keyword and cannot be an alias",
                code="reserved_word",
            )
        self._expect(NAME, what="an alias such as a")
        return tok

    def is_bound(self) -> bool:
        tok = self.peek
        if tok.kind == NAME:
            return tok.text in (START_TIME, END_TIME)
        if tok.kind == DOTTED:
            return tok.text.partition(".")[2] in (START_TIME, END_TIME)
        return False

    def bound(self, aliases: tuple[str, ...] | None) -> tuple[str, TimeBound]:
        tok = self.peek
        name = tok.text
        if tok.kind == DOTTED:
            alias, _, name = tok.text.partition(".")
            if aliases is None:
                raise self.error(
                    f"{tok.text}: alias.{name} belongs to composite subscriptions; "
                    f"here write {name} alone",
                    code="unknown_alias",
                )
            self.check_alias(alias, aliases, tok)
        self.advance()
        self._expect(OP, "=", what=f"'=' after {name}, as in {name} = NOW - 1h")
        start = self.peek
        if self._match(KW, "now"):
            sign_tok = self._match(OP, "+", "-")
            if sign_tok is None:
                return tok.text, TimeBound(0)
            d = self._expect(DURATION, what="a duration such as 30s, 25m, 2h, 7d or 1w")
            seconds = int(d.text[:-1]) * UNITS[d.text[-1]]
            if seconds > MAX_DURATION:
                raise QueryError(
                    "a duration may be at most 36500d (100 years)", d.position, code="bad_literal"
                )
            return tok.text, TimeBound(seconds if sign_tok.text == "+" else -seconds)
        if self.is_kw("timestamp"):
            at = self.literal(Type.TIMESTAMP, name)
            assert isinstance(at, dt.datetime)
            return tok.text, TimeBound(0, at)
        raise QueryError(
            f"{name} takes NOW, NOW - <d>, NOW + <d> (d such as 30s, 25m, 2h, 7d, 1w) or "
            f"TIMESTAMP '2026-11-20T10:00:00Z'; found {describe(start)}",
            start.position,
        )

    def expect_end(self, more: str) -> None:
        tok = self.peek
        if tok.kind != END:
            options = ", ".join(x for x in ("',' or AND and another conjunct", more) if x)
            raise self.error(f"expected {options} or the end of the query; found {describe(tok)}")


def output_key(item: Item) -> str:
    """The key of an item in a notification's ``data`` (SPEC 8.3: AS name, else its text)."""
    if item.name is not None:
        return item.name
    if isinstance(item, Aggregate):
        return f"{item.func}({item.attribute}, {item.n})"
    return item.attribute


def result_type(aggregate: Aggregate) -> Type:
    if aggregate.func == "AVG":
        return Type.DECIMAL
    if aggregate.func == "COUNT":
        return Type.INT
    return aggregate.type
