"""``query_subject_patterns``: the subjects and patterns a query requires, in every form,
each once, negated tests left out (issue 39, item 4)."""

from __future__ import annotations

import pytest

from matching.subscriptions import parse_query
from matching.subscriptions.language.subject_patterns import query_subject_patterns

T = "FILTER{type = 'trade'}(EVENTS)"


@pytest.mark.parametrize(
    ("query", "patterns"),
    [
        ("SELECT price WHERE type = 'trade'", ()),
        (
            "SELECT * WHERE subject MATCHES 'a.>', (subject = 'b.c' OR subject MATCHES 'a.>')",
            ("a.>", "b.c"),
        ),
        # negated, or not an equality: nothing required
        ("SELECT * WHERE (NOT subject MATCHES 'a.>'), subject != 'b.c', subject > 'd'", ()),
        (
            "SELECT a.seq FROM a AND b WHERE a.subject = 'x.y', b.subject MATCHES 'z.*'",
            ("x.y", "z.*"),
        ),
        (
            f"SELECT a.price FROM FILTER{{type = 'trade' AND subject MATCHES 'p.>'}}(EVENTS) AS a "
            f"FOLD{{b.subject = a.subject AND 'q.r' = b.subject, "
            f"b.price >= b.last.price AND NOT b.subject MATCHES 's.>', COUNT AS n}} {T} AS b "
            "WHERE a.subject = 'p.t' OR a.subject MATCHES 'u.*'",
            ("p.>", "q.r", "p.t", "u.*"),
        ),
        ("SELECT MIN(ask) FROM offers WHERE subject MATCHES 'office.>'", ("office.>",)),
        ("SELECT best_value FROM offers WHERE offer = 3", ()),
    ],
)
def test_the_required_subjects_and_patterns(query, patterns):
    assert query_subject_patterns(parse_query(query)) == patterns
