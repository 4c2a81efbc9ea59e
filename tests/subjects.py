"""Malformed subject patterns with where and why they are refused (``matching.subjects``),
for the tests of every surface that takes a pattern (streams, API filters)."""

BAD_PATTERNS = [
    (
        "office.",
        7,
        "empty token in the pattern 'office.': tokens are separated by a single '.', "
        "with no '.' at either end",
    ),
    ("foo*", 3, "'*' must be a whole token on its own, as in office.*"),
    (">.x", 0, "'>' (one or more tokens) may only be the last token of a pattern"),
    ("Office.>", 0, "pattern tokens are lower case: write 'office'"),
]
