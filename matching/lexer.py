"""The tokenizer of the text syntax: one compiled regular expression.

A ``Token`` has a ``kind``, its ``text`` and its ``position``, the 0-based offset of
its first character. Keywords are recognised case-insensitively and their ``text``
is lower-cased; everything else keeps its spelling.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from .errors import ConstraintError
from .model import Type


class Kind(enum.Enum):
    NAME = "name"
    NUMBER = "number"
    OPERATOR = "operator"  # comparison operators and punctuation
    STRING = "string"
    QUOTED_NAME = "quoted name"
    KEYWORD = "keyword"
    END = "end"
    # Only the subscription language's lexer (``matching.subscriptions.language.lexer``), which
    # reads the same tokens and these two besides, makes them.
    QUALIFIED_NAME = "qualified name"  # alias.attribute
    DURATION = "duration"  # 25m

    # Compared by identity, as Type is: the identity hash agrees with equality and is
    # cheaper than Enum's own.
    __hash__ = object.__hash__


class Token(NamedTuple):
    kind: Kind
    text: str
    position: int


TYPE_KEYWORDS = {
    "int": Type.INT,
    "integer": Type.INT,
    "decimal": Type.DECIMAL,
    "numeric": Type.DECIMAL,
    "float": Type.FLOAT,
    "double": Type.FLOAT,
    "date": Type.DATE,
    "timestamp": Type.TIMESTAMP,
    "string": Type.STRING,
    "text": Type.STRING,
    "point": Type.POINT,
    "box": Type.BOX,
}
# The one keyword table: the subscription language's lexer extends it with its own words.
KEYWORDS = frozenset(
    {"and", "or", "not", "between", "in", "within", "overlaps", "contains", *TYPE_KEYWORDS}
)

# One match per token: (leading whitespace, a good token, a bad one). Alternatives
# are tried in order; the bad ones exist only to explain mistakes. findall() plus a
# first-character table is about twice as fast as finditer() with match objects.
_TOKEN_RE = re.compile(
    r"""
    (\s*)
    (?:
      ( [A-Za-z_][A-Za-z0-9_]*                             # name or keyword
      | -?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![A-Za-z0-9_.])   # number
      | <=|>=|<>|!=|[=<>(),\[\]*]                          # operator or punctuation
      | '[^']*(?:''[^']*)*'                                # string
      | "[^"]*(?:""[^"]*)*"                                # quoted name
      )
    | ( -?\.?\d[A-Za-z0-9_.]*                              # malformed number
      | \S                                                 # anything else
      )
    )""",
    re.VERBOSE | re.DOTALL | re.ASCII,
)

_EXPONENT_START_RE = re.compile(r"-?\d+(?:\.\d+)?[eE]")
_WORD_AFTER_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE]\d+)?[A-Za-z_]")

_KIND_OF_FIRST = {c: Kind.NAME for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"}
_KIND_OF_FIRST.update({c: Kind.NUMBER for c in "-0123456789"})
_KIND_OF_FIRST.update({c: Kind.OPERATOR for c in "=<>!(),[]*"})
_KIND_OF_FIRST.update({"'": Kind.STRING, '"': Kind.QUOTED_NAME})


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` followed by an ``END`` token; ``ConstraintError`` on a bad one."""
    tokens: list[Token] = []
    append = tokens.append
    keywords = KEYWORDS
    kind_of_first = _KIND_OF_FIRST
    name, keyword = Kind.NAME, Kind.KEYWORD
    # tuple.__new__ builds the same Token without the Python-level __new__ NamedTuple
    # generates: the tokenizer runs twice as fast.
    new = tuple.__new__
    pos = 0
    for space, good, bad in _TOKEN_RE.findall(text):
        pos += len(space)
        if bad:
            _bad(bad, pos)
        kind = kind_of_first[good[0]]
        if kind is name:
            lower = good.lower()
            if lower in keywords:
                append(new(Token, (keyword, lower, pos)))
            else:
                append(new(Token, (name, good, pos)))
        else:
            append(new(Token, (kind, good, pos)))
        pos += len(good)
    append(Token(Kind.END, "", len(text)))
    return tokens


def unquote(tok: Token) -> str:
    """The content of a STRING or QUOTED_NAME token, its doubled quotes undone."""
    quote = tok.text[0]
    return tok.text[1:-1].replace(quote + quote, quote)


def _bad(text: str, pos: int) -> None:
    if text[0] in "-.0123456789" and len(text) > 1:
        if _EXPONENT_START_RE.fullmatch(text):
            hint = "an exponent needs digits, as in 1.5e3"
        elif _WORD_AFTER_NUMBER_RE.match(text):
            hint = "put a space between a number and the word after it"
        else:
            hint = "digits are needed on both sides of the point, as in 0.5 or 5.0"
        raise ConstraintError(
            f"'{text}' is not a number ({hint}); numbers look like 42, -7, 1.00 or 1.5e3",
            pos,
            code="syntax",
        )
    if text == "'":
        message = "this string is never closed: add a ' at its end (a quote inside is written '')"
    elif text == '"':
        message = (
            'this quoted name is never closed: add a " at its end (a quote inside is written "")'
        )
    elif text == "-":
        message = "a minus sign must be followed directly by digits, as in -5"
    elif text == "!":
        message = "unexpected '!': did you mean '!='?"
    elif text == "+":
        message = "unexpected '+': write positive numbers without a sign, as in 5"
    elif text == "{":
        message = "unexpected '{': the JSON form must be sent as a JSON object, not inside a string"
    elif text == ".":
        message = "unexpected '.': a decimal needs digits on both sides of the point, as in 0.5"
    elif text.isprintable():
        message = f"unexpected character '{text}'"
    else:
        message = f"unexpected character U+{ord(text):04X}"
    raise ConstraintError(message, pos, code="syntax")


def is_identifier(name: str, keywords: AbstractSet[str] = KEYWORDS) -> bool:
    """Whether ``name`` can be written without double quotes in a language whose keywords
    are ``keywords`` (the subscription language's are more than these)."""
    return _IDENTIFIER_RE.fullmatch(name) is not None and name.lower() not in keywords


_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
