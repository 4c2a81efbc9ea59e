"""Conditions on a JSON column for CheckConstraints, so PostgreSQL checks a document's shape.

Each returns a lookup that compares a PostgreSQL jsonb function of the column with a constant;
a constraint built from them deconstructs the same way wherever it is written, so migrations
see one condition, not a new one per spelling.
"""

from __future__ import annotations

from django.db import models
from django.db.models.lookups import Exact


def jsonb_is(field: str, kind: str) -> Exact:
    """True when the column's document is of that JSON kind: "object", "array", "string"..."""
    return Exact(
        models.Func(models.F(field), function="jsonb_typeof", output_field=models.TextField()),
        kind,
    )


def jsonb_matches_none(field: str, path: str) -> Exact:
    """True when nothing in the column's document matches the jsonpath ``path``."""
    return Exact(
        models.Func(
            models.F(field),
            models.Value(path),
            function="jsonb_path_exists",
            output_field=models.BooleanField(),
        ),
        False,
    )
