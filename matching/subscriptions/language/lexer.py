"""The tokenizer of the subscription language.

Its tokens are the constraint lexer's (``matching.lexer.Token``, whose ``kind`` is a
``Kind``) so that the constraint parser reads a subscription's conditions directly, with
a 0-based ``position``. Keywords are case-insensitive and come out lower-cased as ``KW``;
the keyword table extends SPEC 2's (``matching.lexer.KEYWORDS``) with every keyword of
the four forms, all reserved now (SPEC 8.3: ``AS avg`` is an error), so that adding forms
3 and 4 never turns a valid query into an invalid one. Literal syntax follows SPEC 2
(numbers, ``'strings'`` with ``''`` for a quote, ``"quoted names"``); on top of it come
durations (``25m``), dotted names (``a.price``) and the punctuation of forms 3 and 4
(``{ } + - / %``), so that the parser can recognise their shapes and refuse them clearly.
"""

from __future__ import annotations

import re

from matching import lexer
from matching.lexer import Kind, Token
from matching.printer import quote_name
from matching.subscriptions.errors import QueryError

NAME = Kind.NAME
DOTTED = Kind.QUALIFIED_NAME
QNAME = Kind.QUOTED_NAME
NUM = Kind.NUMBER
DURATION = Kind.DURATION
STR = Kind.STRING
OP = Kind.OPERATOR
KW = Kind.KEYWORD
END = Kind.END

# SPEC 2's keywords and those of the four forms of SPEC 8.3.
KEYWORDS = lexer.KEYWORDS | {
    "select", "from", "where", "group", "by", "having", "reset", "as", "matches", "now",
    "avg", "min", "max", "sum", "count",
    "next", "fold", "filter", "events", "union", "dur",
    "notify", "when", "changed",
}  # fmt: skip

# Token is the constraint lexer's, named here for the parsers of the language.
__all__ = [
    "DOTTED", "DURATION", "END", "KEYWORDS", "KW", "NAME", "NUM", "OP", "QNAME", "STR",
    "Token", "describe", "tokenize",
]  # fmt: skip

_WORD_END = r"(?![A-Za-z0-9_.])"

_TOKEN_RE = re.compile(
    rf"""
    (\s*)
    (?:
      (?P<minus>-(?=\d+[smhdw]{_WORD_END}))                  # NOW - 25m, written NOW -25m
    | (?P<duration>\d+[smhdw]{_WORD_END})
    | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?{_WORD_END})
    | (?P<dotted>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><=|>=|<>|!=|[=<>(),\[\]*{{}}+\-/%])
    | (?P<string>'[^']*(?:''[^']*)*')
    | (?P<qname>"[^"]*(?:""[^"]*)*")
    | (?P<bad>\S)
    )""",
    re.VERBOSE | re.DOTALL | re.ASCII,
)

_KINDS = {
    "minus": OP,
    "duration": DURATION,
    "number": NUM,
    "dotted": DOTTED,
    "name": NAME,
    "op": OP,
    "string": STR,
    "qname": QNAME,
}


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` and a final ``END``; ``QueryError`` at the first bad character."""
    tokens: list[Token] = []
    pos = 0
    for m in _TOKEN_RE.finditer(text):
        pos = m.start() + len(m.group(1))
        group = m.lastgroup
        if group is None:  # only trailing whitespace
            break
        word = m.group(group)
        if group == "bad":
            raise QueryError(_bad_message(text, pos), pos)
        kind = _KINDS[group]
        if kind == NAME and word.lower() in KEYWORDS:
            tokens.append(Token(KW, word.lower(), pos))
        else:
            tokens.append(Token(kind, word, pos))
    tokens.append(Token(END, "", len(text)))
    return tokens


def _bad_message(text: str, pos: int) -> str:
    char = text[pos]
    if char == "'":
        return "this string is never closed: add a ' at its end (a quote inside is written '')"
    if char == '"':
        return 'this quoted name is never closed: add a " at its end'
    if char.isdigit() or char == ".":
        return (
            "this is not a number or a duration: numbers look like 42, -7 or 1.00, "
            "durations like 30s, 25m, 2h, 7d or 1w"
        )
    if char == "!":
        return "unexpected '!': did you mean '!='?"
    shown = f"'{char}'" if char.isprintable() else f"U+{ord(char):04X}"
    return f"unexpected character {shown}"


def describe(token: Token) -> str:
    """A token as an error message names it."""
    kind, text, _ = token
    if kind == END:
        return "the end of the query"
    if kind == KW:
        return f"the keyword {text.upper()}"
    if kind == OP:
        return f"'{text}'"
    if len(text) > 30:
        text = text[:27] + "..."
    return {
        NAME: "the name",
        DOTTED: "the name",
        QNAME: "the name",
        NUM: "the number",
        DURATION: "the duration",
        STR: "the string",
    }[kind] + f" {text}"


def name_text(name: str) -> str:
    """``name`` as a query writes it: bare when this lexer would read it back as that name,
    quoted otherwise (both printers' one rule)."""
    return quote_name(name, KEYWORDS)
