"""The parser of form 4, watches over the open offers (SPEC 8.3).

    watch     := SELECT ( MIN | MAX ) '(' attr ')' FROM offers WHERE conjuncts [ notify ]
               | SELECT attr FROM offers WHERE offer '=' integer [ notify ]
    conjuncts := conjunct ( ( ',' | AND ) conjunct )*          (conjunct: see conditions.py)
    notify    := NOTIFY WHEN CHANGED BY number [ '%' ]

``attr`` is an attribute of the open offers (``offers.OFFER_SCHEMA``) and must be numeric.
The conjuncts of a range watch, read and normalized by ``ConditionReader`` against the
offers' schema, must together hold exactly one subject test (``subject = '<subject>'``
or ``subject MATCHES '<pattern>'``) and otherwise only range predicates (``<``, ``<=``,
``>``, ``>=``, ``=``, ``BETWEEN``, ``IN``, ``= *``) on one numeric attribute, the key.
Anything else is refused at the token that breaks the rule: ``!=`` or ``<>`` at the
operator (``bad_operator``), an ``OR`` or a ``NOT`` that splits a conjunct into several
ranges at the conjunct (``bad_key``), a second key or a non-numeric one (``bad_key``), a
subject written any other way or missing (``bad_subject``), a second subject
(``duplicate``), a non-numeric selected attribute (``type_mismatch``), a window or an
``AS`` name (``bad_aggregate``, ``syntax``), a negative threshold (``bad_threshold``).
"""

from __future__ import annotations

from matching import Interval, Type
from matching.subjects import SubjectError, validate_subject
from matching.subscriptions.errors import QueryError
from matching.subscriptions.language.clauses import ClauseReader
from matching.subscriptions.language.conditions import ConditionReader
from matching.subscriptions.language.lexer import END, KW, NAME, NUM, OP, STR, Token, describe
from matching.subscriptions.language.model import (
    AGGREGATES,
    AttrTest,
    Condition,
    SubjectTest,
    Threshold,
    WatchQuery,
)
from matching.subscriptions.language.schema import END_TIME, START_TIME

from .offers import NUMERIC_ATTRIBUTES, OFFER_SCHEMA

MAX_CONJUNCTS = 64
_EXAMPLE = "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils'"
_SINGLE = "SELECT best_value FROM offers WHERE offer = 1"


class WatchReader(ClauseReader):
    """Reads a form 4 query from just after ``SELECT``."""

    def watch(self) -> WatchQuery:
        func, attribute = self.selected()
        self._expect(KW, "from", what="FROM offers")
        self.advance()  # "offers": kind_of recognised the form by it
        where = self._match(KW, "where")
        offer: int | None = None
        conditions: tuple[Condition, ...] = ()
        if func is None:
            if where is None:
                raise self.error(
                    f"a watch of one attribute names its offer, as in {_SINGLE}; to watch "
                    "many offers select MIN(attr) or MAX(attr) with a subject",
                    code="syntax",
                )
            offer = self.single_offer()
        else:
            if where is None:
                raise self.error(
                    f"a watch over open offers needs WHERE and a subject, as in {_EXAMPLE}",
                    code="bad_subject",
                )
            conditions = self.range_conditions(where)
        threshold = self.threshold()
        if self.peek.kind != END:
            if threshold is not None:
                more = ""
            elif func is None:
                more = "NOTIFY WHEN CHANGED BY or "
            else:
                more = "',' or AND and another conjunct, NOTIFY WHEN CHANGED BY or "
            raise self.error(f"expected {more}the end of the query; found {describe(self.peek)}")
        return WatchQuery(attribute, func, offer, conditions, threshold)

    # -- SELECT -----------------------------------------------------------------------------

    def selected(self) -> tuple[str | None, str]:
        """``(func, attribute)``: ``MIN``/``MAX`` and its attribute, or ``None`` and one attribute."""
        tok = self.peek
        func: str | None = None
        if tok.kind == KW and tok.text in ("min", "max"):
            func = tok.text.upper()
            self.advance()
            self._expect(OP, "(", what=f"'(' after {func}, as in {func}(ask)")
            attribute = self.offer_attribute()
            if self.is_op(","):
                raise self.error(
                    f"{func} over open offers takes the attribute alone, as in {func}(ask): "
                    "it watches the current offers, not a window of events",
                    code="bad_aggregate",
                )
            self._expect(OP, ")", what=f"')' to close {func}(")
        elif tok.kind == KW and tok.text.upper() in AGGREGATES:
            raise self.error(
                f"a watch over open offers selects MIN(attr) or MAX(attr), not {tok.text.upper()}",
                code="bad_aggregate",
            )
        elif tok.kind == OP and tok.text == "*":
            raise self.error(
                f"a watch over open offers selects MIN(attr), MAX(attr) or, for one offer, "
                f"one attribute (as in {_SINGLE}); not *"
            )
        else:
            attribute = self.offer_attribute()
        if self.is_kw("as"):
            raise self.error(
                'a watch takes no AS: its data is always {"offer", "value"}', code="syntax"
            )
        if self.is_op(","):
            raise self.error("a watch over open offers selects one thing", code="syntax")
        return func, attribute

    def offer_attribute(self) -> str:
        """A numeric attribute of the open offers at the cursor, consumed."""
        tok = self.peek
        name = self.attribute(OFFER_SCHEMA)
        if name not in NUMERIC_ATTRIBUTES:
            raise QueryError(
                f"{name} is {OFFER_SCHEMA[name].value}: a watch selects a numeric attribute "
                f"({', '.join(sorted(NUMERIC_ATTRIBUTES))})",
                tok.position,
                code="type_mismatch",
            )
        return name

    # -- WHERE ------------------------------------------------------------------------------

    def single_offer(self) -> int:
        tok = self.peek
        if not (tok.kind == NAME and tok.text == "offer"):
            hint = (
                "; a watch over a subject selects MIN(attr) or MAX(attr)"
                if tok.kind == NAME and tok.text == "subject"
                else ""
            )
            raise self.error(
                f"a watch of one attribute is WHERE offer = <id>, as in {_SINGLE}{hint}"
            )
        self.advance()
        self._expect(
            OP, "=", what="'=' and the offer's id: a single-offer watch is WHERE offer = <id>"
        )
        num = self.peek
        if num.kind != NUM:
            raise self.error(f"expected the offer's id, a whole number; found {describe(num)}")
        if not num.text.isdigit() or not 1 <= int(num.text) <= 2**63 - 1:
            raise self.error(
                f"an offer's id is a whole number from 1 up, not {num.text}", code="bad_literal"
            )
        self.advance()
        if self.is_op(",") or self.is_kw("and"):
            raise self.error(
                "a single-offer watch has no other condition: WHERE offer = <id> names everything"
            )
        return int(num.text)

    def range_conditions(self, where: Token) -> tuple[Condition, ...]:
        reader = ConditionReader(self, OFFER_SCHEMA, None)
        conditions: list[Condition] = []
        subject: Token | None = None
        key: str | None = None
        while True:
            first = self.peek
            if len(conditions) == MAX_CONJUNCTS:
                raise self.error(f"at most {MAX_CONJUNCTS} conjuncts in WHERE", code="too_many")
            if first.kind == NAME and first.text in (START_TIME, END_TIME):
                raise self.error(
                    "a watch follows the offers open now and from now on: it takes no "
                    f"{first.text}",
                    code="unknown_attribute",
                )
            start = self.i
            condition = reader.conjunct()
            tokens = self.tokens[start : self.i]
            for tok in tokens:
                if tok.kind == OP and tok.text in ("!=", "<>"):
                    raise self.error(
                        "a watch takes range predicates only (<, <=, >, >=, =, BETWEEN, IN): "
                        f"{tok.text} would leave two ranges",
                        tok,
                        code="bad_operator",
                    )
            if len(condition.disjuncts) != 1:
                raise self.error(
                    "each condition of a watch is one range: an OR (or a NOT that makes one) "
                    "would leave several",
                    first,
                    code="bad_key",
                )
            for test in condition.disjuncts[0]:
                if _is_subject(test):
                    if subject is not None:
                        raise self.error(
                            f"the subject is already given at character {subject.position + 1}: "
                            "a watch has one subject",
                            first,
                            code="duplicate",
                        )
                    self._check_subject(test, tokens, first)
                    subject = first
                    continue
                assert isinstance(test, AttrTest)
                if test.type not in (Type.INT, Type.DECIMAL):
                    raise self.error(
                        f"{test.attribute} is {test.type.value}: the key of a watch is a numeric "
                        f"attribute ({', '.join(sorted(NUMERIC_ATTRIBUTES))})",
                        first,
                        code="bad_key",
                    )
                if key is not None and test.attribute != key:
                    raise self.error(
                        f"a watch has one key and it is {key}: {test.attribute} cannot be "
                        "a second one",
                        first,
                        code="bad_key",
                    )
                key = test.attribute
            conditions.append(condition)
            if not (self._match(OP, ",") or self._match(KW, "and")):
                break
        if subject is None:
            raise self.error(
                f"a watch over open offers needs its subject (subject = '...' or subject "
                f"MATCHES '...'), as in {_EXAMPLE}",
                where,
                code="bad_subject",
            )
        return tuple(conditions)

    def _check_subject(
        self, test: AttrTest | SubjectTest, tokens: list[Token], first: Token
    ) -> None:
        if isinstance(test, SubjectTest):
            if test.negated:
                raise self.error(
                    "a watch's subject is subject = '...' or subject MATCHES '...', "
                    "not its negation",
                    first,
                    code="bad_subject",
                )
            return
        pred = test.predicate
        if not (isinstance(pred, Interval) and pred.lo is not None and pred.lo == pred.hi):
            raise self.error(
                "a watch's subject is one market's (subject = '...') or a pattern's "
                "(subject MATCHES '...'), not a range of subjects",
                first,
                code="bad_subject",
            )
        try:
            validate_subject(str(pred.lo))
        except SubjectError as exc:
            string = next((t for t in tokens if t.kind == STR), first)
            raise QueryError(
                exc.message,
                string.position + (1 + exc.position if string.kind == STR else 0),
                code="bad_subject",
            ) from None

    # -- NOTIFY -----------------------------------------------------------------------------

    def threshold(self) -> Threshold | None:
        if not self._match(KW, "notify"):
            return None
        self._expect(KW, "when", what="WHEN after NOTIFY: NOTIFY WHEN CHANGED BY 5%")
        self._expect(KW, "changed", what="CHANGED after NOTIFY WHEN: NOTIFY WHEN CHANGED BY 5%")
        self._expect(KW, "by", what="BY after NOTIFY WHEN CHANGED: NOTIFY WHEN CHANGED BY 5%")
        tok = self.peek
        if tok.kind != NUM:
            raise self.error(
                f"expected the threshold, a number such as 0.05 or 5%; found {describe(tok)}"
            )
        amount = self.literal(Type.DECIMAL, "the threshold")
        if amount < 0:  # type: ignore[operator]  # a DECIMAL literal is a Decimal
            raise QueryError(
                "the threshold is a change size, 0 or more", tok.position, code="bad_threshold"
            )
        percent = self._match(OP, "%") is not None
        return Threshold(amount, percent)  # type: ignore[arg-type]  # as above


def _is_subject(test: AttrTest | SubjectTest) -> bool:
    return isinstance(test, SubjectTest) or test.attribute == "subject"
