"""The one exception the constraint language raises."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

# Where an error was found: a 0-based character offset into the text form, or a
# JSON pointer (RFC 6901) into the JSON form.
Loc = int | str


@dataclass(eq=False, repr=False)  # compared and hashed by identity, as exceptions are
class ConstraintError(Exception):
    """A constraint that cannot be accepted, explained for the trader who wrote it.

    ``message`` says what is wrong and what would be right. ``position`` is the
    0-based character offset into the text (``None`` for the JSON form), ``path``
    the JSON pointer into the JSON form (``None`` for text). ``code`` is a short,
    stable slug for programs (``syntax``, ``type_mismatch``, ``empty_range``, ...).
    """

    message: str
    position: int | None = None
    _: KW_ONLY
    code: str = "syntax"
    path: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        if self.position is not None:
            return f"{self.message} (at character {self.position})"
        if self.path is not None:
            return f"{self.message} (at {self.path or 'the top level'})"
        return self.message

    def __repr__(self) -> str:
        where = f"position={self.position}" if self.path is None else f"path={self.path!r}"
        return f"ConstraintError({self.code!r}, {self.message!r}, {where})"


def error(code: str, message: str, loc: Loc | None) -> ConstraintError:
    """Build an error located in either form: an ``int`` is a text offset, a ``str`` a path."""
    if isinstance(loc, str):
        return ConstraintError(message, None, code=code, path=loc)
    return ConstraintError(message, loc, code=code)
