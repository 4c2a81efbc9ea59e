"""Filtering rows by a market subject pattern (SPEC 8.2) for every list that takes one."""

from __future__ import annotations

from django.db.models import Q

from exchange.errors import InvalidInput
from matching.subjects import SubjectError, compile_pattern


def subject_matching(*, field: str, pattern: str, parameter: str) -> Q:
    """Rows whose ``field`` (a market subject) matches ``pattern``: an equality for a plain
    subject (the unique index answers it), PostgreSQL's ``~`` with the pattern's anchored
    regex otherwise. A malformed pattern is ``InvalidInput`` naming ``parameter`` (the
    query parameter it came in) and the position inside it."""
    try:
        compiled = compile_pattern(pattern)
    except SubjectError as exc:
        raise InvalidInput(
            "invalid_pattern",
            f"{parameter} is not a subject pattern: {exc.message}.",
            field=parameter,
            position=exc.position,
        ) from exc
    if compiled.is_literal:
        return Q(**{field: pattern})
    return Q(**{f"{field}__regex": compiled.regex})
