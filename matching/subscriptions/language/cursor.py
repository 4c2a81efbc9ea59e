"""A position in a token list, with the ``_match``/``_expect`` helpers the parsers share."""

from __future__ import annotations

from matching.lexer import Kind
from matching.subscriptions.errors import QueryError

from .closed_sets import nearest
from .lexer import END, KEYWORDS, KW, NAME, OP, Token, describe


class Cursor:
    """Reads tokens left to right; every refusal is a ``QueryError`` at a token."""

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    def peek_at(self, ahead: int) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != END:
            self.i += 1
        return tok

    def is_kw(self, *words: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == KW and tok.text in words

    def is_op(self, *ops: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == OP and tok.text in ops

    def _match(self, kind: Kind, *texts: str) -> Token | None:
        """The next token if it has this kind (and one of these texts); it is consumed."""
        tok = self.tokens[self.i]
        if tok.kind == kind and (not texts or tok.text in texts):
            self.i += 1
            return tok
        return None

    def _expect(self, kind: Kind, *texts: str, what: str) -> Token:
        """Like ``_match``, but a missing token is an error saying ``what`` was expected."""
        tok = self._match(kind, *texts)
        if tok is None:
            raise self.error(f"expected {what}, found {describe(self.peek)}")
        return tok

    def error(
        self, message: str, token: Token | None = None, *, code: str = "syntax"
    ) -> QueryError:
        tok = token or self.peek
        if tok.kind == NAME and "did you mean" not in message:
            # A name where the grammar wanted something else is most often a keyword
            # misspelt (NXT for NEXT, WHER for WHERE): say which (issue 39).
            keyword = nearest(tok.text, KEYWORDS)
            if keyword is not None:
                message += f" (did you mean {keyword.upper()}?)"
        return QueryError(message, tok.position, code=code)

    def at_most(self, count: int, limit: int, message: str, token: Token) -> None:
        """Refuse the ``count``-th entry of a list the language allows ``limit`` of: a
        ``too_many`` error at ``token`` saying ``message``."""
        if count > limit:
            raise self.error(message, token, code="too_many")

    def end_of(self, token: Token) -> int:
        """The offset just after ``token`` in the text (keywords keep their length)."""
        return token.position + len(token.text)
