"""Subjects and subject patterns (SPEC 8.2, NATS semantics).

A *subject* is one or more dot-separated tokens, each ``[a-z0-9]+``:
``office.supplies.pencils``. A *pattern* is the same, except that a token may also be
``*`` (exactly one token) or, as the last token only, ``>`` (one or more tokens). So
``office.>`` matches ``office.supplies.pencils`` but not ``office``, and
``office.*.pencils`` matches ``office.supplies.pencils`` but not ``office.pencils``.

Every refusal is a ``SubjectError`` carrying the 0-based character position of the
first offending character, so that callers embedding a pattern in a larger text
(``subject MATCHES '<pattern>'``) can point at it.

This module is the one home of the subject rule: the market services check subjects with
``validate_subject``, and the database's check constraint on markets uses ``SUBJECT_REGEX``
and ``SUBJECT_MAX_LENGTH`` from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ONE = "*"
REST = ">"

# The longest subject a market may have. A pattern longer than this matches no subject
# (every token of a pattern stands for at least as many characters as it has, except '>',
# which stands for at least one), so patterns share the bound.
SUBJECT_MAX_LENGTH = 200
_TOKEN = "[a-z0-9]+"
# A subject as one regular expression, in the dialect Python and PostgreSQL (``~``) share.
SUBJECT_REGEX = rf"^{_TOKEN}(\.{_TOKEN})*$"

_TOKEN_RE = re.compile(_TOKEN, re.ASCII)


class SubjectError(ValueError):
    """A subject or pattern that is not well formed; ``position`` is 0-based."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position

    def __str__(self) -> str:
        return f"{self.message} (at character {self.position})"


def _check(text: str, *, pattern: bool) -> tuple[str, ...]:
    what = "pattern" if pattern else "subject"
    if not text:
        raise SubjectError(f"a {what} cannot be empty: write tokens such as office.supplies", 0)
    if len(text) > SUBJECT_MAX_LENGTH:
        raise SubjectError(
            f"a {what} has at most {SUBJECT_MAX_LENGTH} characters", SUBJECT_MAX_LENGTH
        )
    tokens = text.split(".")
    pos = 0
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if not token:
            raise SubjectError(
                f"empty token in the {what} {text!r}: tokens are separated by a single '.', "
                "with no '.' at either end",
                pos,
            )
        if pattern and token == REST:
            if i != last:
                raise SubjectError(
                    "'>' (one or more tokens) may only be the last token of a pattern", pos
                )
        elif pattern and token == ONE:
            pass
        elif _TOKEN_RE.fullmatch(token) is None:
            bad = next(k for k, c in enumerate(token) if not ("a" <= c <= "z" or "0" <= c <= "9"))
            char = token[bad]
            if pattern and char in "*>":
                message = f"'{char}' must be a whole token on its own, as in office.{char}"
            elif not pattern and char in "*>":
                message = f"a subject cannot contain '{char}': wildcards belong in patterns"
            elif "A" <= char <= "Z":
                message = f"{what} tokens are lower case: write {token.lower()!r}"
            else:
                shown = repr(char) if char.isprintable() else f"U+{ord(char):04X}"
                message = (
                    f"{shown} cannot appear in a {what}: tokens are lower-case letters and "
                    "digits (a-z, 0-9)"
                )
            raise SubjectError(message, pos + bad)
        pos += len(token) + 1
    return tuple(tokens)


def validate_subject(text: str) -> str:
    """``text`` if it is a subject (no wildcards); ``SubjectError`` otherwise."""
    _check(text, pattern=False)
    return text


@dataclass(frozen=True)
class SubjectPattern:
    """A checked pattern. ``tokens`` holds each token (``*`` and ``>`` as written), for
    indexes that walk subjects token by token; ``matches`` answers for one subject;
    ``regex`` is the same set as an anchored regular expression that PostgreSQL's ``~``
    reads as Python does (for filtering rows in the database).
    """

    text: str
    tokens: tuple[str, ...]
    regex: str = field(repr=False, compare=False, hash=False)
    _regex: re.Pattern[str] = field(repr=False, compare=False, hash=False)

    @property
    def is_literal(self) -> bool:
        """Whether the pattern has no wildcard, i.e. names exactly one subject."""
        return ONE not in self.tokens and REST not in self.tokens

    def matches(self, subject: str) -> bool:
        """Whether ``subject`` is in the pattern's set. Only well-formed subjects are in
        any pattern's set, so a malformed ``subject`` matches nothing (never an error).
        """
        return self._regex.fullmatch(subject) is not None


def compile_pattern(text: str) -> SubjectPattern:
    """The compiled pattern; ``SubjectError`` (with its position) if ``text`` is not one."""
    tokens = _check(text, pattern=True)
    parts = []
    for token in tokens:
        if token == ONE:
            parts.append(_TOKEN)
        elif token == REST:
            parts.append(_TOKEN + r"(?:\." + _TOKEN + ")*")
        else:
            parts.append(token)  # [a-z0-9]+: nothing to escape
    regex = "^" + r"\.".join(parts) + "$"
    return SubjectPattern(text, tokens, regex, re.compile(regex, re.ASCII))


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether ``subject`` matches ``pattern``; ``SubjectError`` for a malformed pattern."""
    return compile_pattern(pattern).matches(subject)
