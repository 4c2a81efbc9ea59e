"""Subjects and subject patterns (SPEC 8.2): validation with positions, and matching
checked against a plain recursive reading of the definition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from matching.subjects import (
    SUBJECT_MAX_LENGTH,
    SubjectError,
    compile_pattern,
    subject_matches,
    validate_subject,
)


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        ("office.>", "office.supplies.pencils", True),
        ("office.>", "office.supplies", True),
        ("office.>", "office", False),
        ("office.*.pencils", "office.supplies.pencils", True),
        ("office.*.pencils", "office.pencils", False),
        ("office.*", "office.supplies.pencils", False),
        ("*", "office", True),
        ("*", "office.supplies", False),
        (">", "office", True),
        (">", "a.b.c", True),
        ("office.supplies", "office.supplies", True),
        ("office.supplies", "office.supplie", False),
        ("office.*", "office.", False),  # '*' never matches an empty token
        ("office.>", "office..x", False),
        ("office.*", "office.Pens", False),  # a malformed subject matches nothing
    ],
)
def test_matching(pattern, subject, expected):
    assert subject_matches(pattern, subject) is expected


@pytest.mark.parametrize(
    ("pattern", "position", "fragment"),
    [
        ("office.", 7, "empty token"),
        ("..", 0, "empty token"),
        ("a..b", 2, "empty token"),
        (".a", 0, "empty token"),
        ("foo*", 3, "'*' must be a whole token"),
        ("a.b>", 3, "'>' must be a whole token"),
        (">.x", 0, "'>' (one or more tokens) may only be the last"),
        ("a.>.>", 2, "may only be the last"),
        ("", 0, "cannot be empty"),
        ("Office", 0, "lower case"),
        ("office.sup plies", 10, "' ' cannot appear"),
        ("office.sup-plies", 10, "'-' cannot appear"),
    ],
)
def test_bad_patterns_are_refused_with_their_position(pattern, position, fragment):
    with pytest.raises(SubjectError) as info:
        compile_pattern(pattern)
    assert info.value.position == position
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("subject", "position"), [("office.*", 7), ("a.>", 2), ("a.", 2), ("", 0), ("a.B", 2)]
)
def test_bad_subjects_are_refused_with_their_position(subject, position):
    with pytest.raises(SubjectError) as info:
        validate_subject(subject)
    assert info.value.position == position


def test_a_good_subject_is_returned_unchanged():
    assert validate_subject("office.supplies.pencils") == "office.supplies.pencils"


def test_compiled_form_exposes_tokens():
    p = compile_pattern("office.*.>")
    assert p.tokens == ("office", "*", ">")
    assert not p.is_literal
    assert compile_pattern("office.pens").is_literal
    assert p == compile_pattern("office.*.>")


# -- brute force ----------------------------------------------------------------------------

ALPHABET = "ab1"


def brute_valid_token(token: str) -> bool:
    return token != "" and all(c in "abcdefghijklmnopqrstuvwxyz0123456789" for c in token)


def brute_matches(ptoks: list[str], stoks: list[str]) -> bool:
    """SPEC 8.2 read literally: '*' one non-empty token, '>' one or more, the rest equal."""
    if not ptoks:
        return not stoks
    head, rest = ptoks[0], ptoks[1:]
    if head == ">":
        return len(stoks) >= 1 and all(brute_valid_token(t) for t in stoks)
    if not stoks:
        return False
    if head == "*":
        return brute_valid_token(stoks[0]) and brute_matches(rest, stoks[1:])
    return head == stoks[0] and brute_matches(rest, stoks[1:])


tokens = st.text(alphabet=ALPHABET, min_size=1, max_size=2)
pattern_tokens = st.one_of(tokens, st.just("*"))
subjects = st.lists(
    st.text(alphabet=ALPHABET + "A", min_size=0, max_size=2), min_size=1, max_size=4
)


@st.composite
def patterns(draw):
    toks = draw(st.lists(pattern_tokens, min_size=1, max_size=4))
    if draw(st.booleans()):
        toks = [*toks[:-1], ">"]
    return toks


@given(patterns(), subjects)
def test_matching_agrees_with_the_definition(ptoks, stoks):
    assert subject_matches(".".join(ptoks), ".".join(stoks)) is brute_matches(ptoks, stoks)


@given(st.text(alphabet="ab.*>A -", max_size=8))
def test_any_text_is_either_a_pattern_or_a_located_error(text):
    try:
        p = compile_pattern(text)
    except SubjectError as exc:
        assert 0 <= exc.position <= len(text)
        return
    toks = text.split(".")
    assert all(brute_valid_token(t) or t == "*" for t in toks[:-1])
    assert brute_valid_token(toks[-1]) or toks[-1] in ("*", ">")
    assert p.tokens == tuple(toks)


def test_length_is_bounded_for_subjects_and_patterns_alike():
    longest = ".".join(["a"] * 100)[: SUBJECT_MAX_LENGTH - 1] + "a"
    assert len(longest) == SUBJECT_MAX_LENGTH and validate_subject(longest) == longest
    for check in (validate_subject, compile_pattern):
        with pytest.raises(SubjectError) as info:
            check(longest + "a")
        assert info.value.position == SUBJECT_MAX_LENGTH
        assert info.value.message == (
            f"a {'subject' if check is validate_subject else 'pattern'} has at most 200 characters"
        )


@pytest.mark.parametrize(
    ("pattern", "regex"),
    [
        ("office.*.pencils", r"^office\.[a-z0-9]+\.pencils$"),
        ("office.>", r"^office\.[a-z0-9]+(?:\.[a-z0-9]+)*$"),
    ],
)
def test_the_regex_form_is_anchored_and_names_the_same_set(pattern, regex):
    assert compile_pattern(pattern).regex == regex
