"""Deep nesting is refused by every parser of the subscription language as it descends
(issue 37): a ``too_deep`` ``QueryError`` at the first token past the limit, never a
``RecursionError``, however deep the text and however much stack the caller already uses
(a web request's stack is a few hundred frames deep before the parser starts).
"""

from __future__ import annotations

import sys

import pytest

from matching.subscriptions import QueryError, parse_query
from matching.subscriptions.language.parser import MAX_LENGTH
from matching.subscriptions.patterns.parser import MAX_DEPTH as PATTERN_DEPTH
from matching.syntax import MAX_DEPTH as CONSTRAINT_DEPTH

# The probe of issue 37: 237 levels, 498 characters.
DEEP = "SELECT * WHERE " + "(" * 237 + "price > 1" + ")" * 237
# Frames a web request's handler sits on when it parses (Django's test client through DRF
# uses about 120; uvicorn runs a view in a fresh thread, with fewer)
CALLER_FRAMES = 300
DEEP_MESSAGE = f"parentheses are nested more than {CONSTRAINT_DEPTH} deep; simplify the constraint"


def _nest(prefix: str, depth: int, inner: str, suffix: str, open_: str = "(") -> str:
    return prefix + open_ * depth + inner + (")" * depth if open_ == "(" else "") + suffix


# (prefix, inner, suffix, opener, limit): each place where a query nests
FORMS = {
    "form 1": ("SELECT * WHERE ", "price > 1", "", "(", CONSTRAINT_DEPTH),
    "form 2": (
        "SELECT * FROM a AND b WHERE a.subject = b.subject, ",
        "a.price > 1",
        "",
        "(",
        CONSTRAINT_DEPTH,
    ),
    "form 4": ("SELECT MIN(ask) FROM offers WHERE subject = 'a.b', ", "ask > 1", "", "(", 100),
    "form 3 filter": ("SELECT a.price FROM FILTER{", "price > 1", "}(EVENTS) AS a", "(", 32),
    "form 3 where": ("SELECT a.price FROM EVENTS AS a WHERE ", "a.price > 1", "", "(", 32),
    "form 3 value": (
        "SELECT a.price FROM EVENTS AS a NEXT {b.price > ",
        "a.price",
        "} EVENTS AS b",
        "(",
        32,
    ),
    "form 3 minus": (
        "SELECT a.price FROM EVENTS AS a NEXT {b.price > ",
        "a.price",
        "} EVENTS AS b",
        "-",
        32,
    ),
    "form 3 not": (
        "SELECT a.price FROM EVENTS AS a NEXT {",
        "b.price > 1",
        "} EVENTS AS b",
        "NOT ",
        32,
    ),
}


def test_the_limits_are_the_constraint_languages_and_the_patterns():
    assert (CONSTRAINT_DEPTH, PATTERN_DEPTH) == (100, 32)


@pytest.mark.parametrize("form", FORMS)
def test_nesting_up_to_the_limit_parses_and_one_more_level_is_too_deep(form):
    prefix, inner, suffix, opener, limit = FORMS[form]
    parse_query(_nest(prefix, limit, inner, suffix, opener))

    text = _nest(prefix, limit + 1, inner, suffix, opener)
    with pytest.raises(QueryError) as caught:
        parse_query(text)
    assert caught.value.code == "too_deep"
    # at the opener past the limit
    assert caught.value.position == len(prefix) + limit * len(opener)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("depth", [237, None])
def test_any_depth_is_too_deep_with_a_stack_already_half_used(form, depth):
    # Given a query nested 237 levels, or as deep as fits in MAX_LENGTH, and a caller
    # that already uses a web request's share of the stack
    prefix, inner, suffix, opener, _ = FORMS[form]
    if depth is None:
        per_level = len(opener) + (opener == "(")
        depth = (MAX_LENGTH - len(prefix + inner + suffix)) // per_level
    text = _nest(prefix, depth, inner, suffix, opener)
    assert len(text) <= MAX_LENGTH

    def parse_at(frames: int) -> None:
        if frames:
            parse_at(frames - 1)
        else:
            parse_query(text)

    with pytest.raises(QueryError) as caught:
        parse_at(CALLER_FRAMES - len(_stack()))
    assert caught.value.code == "too_deep"


def _stack() -> list[object]:
    frames = []
    frame = sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]  # None ends the loop
    return frames


def test_the_issues_probe_is_a_too_deep_at_the_hundred_and_first_parenthesis():
    assert len(DEEP) == 498
    with pytest.raises(QueryError) as caught:
        parse_query(DEEP)
    assert (caught.value.code, caught.value.position, caught.value.message) == (
        "too_deep",
        len("SELECT * WHERE ") + CONSTRAINT_DEPTH,
        DEEP_MESSAGE,
    )
