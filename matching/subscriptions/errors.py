"""The errors of the subscription language and of event files."""

from __future__ import annotations

from matching import ConstraintError


class QueryError(ConstraintError):
    """A query that cannot be accepted: what is wrong, and the 0-based character position
    in the query text where it was found. A subclass of ``ConstraintError`` so that a
    caller handling constraint errors (code, message, position) handles these too.
    """

    def __init__(self, message: str, position: int, *, code: str = "syntax") -> None:
        super().__init__(message, position, code=code)


class EventError(ValueError):
    """An event (a plain dict, SPEC 8.1) that is not well formed; ``field`` names the part."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
