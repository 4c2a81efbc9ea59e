"""The bots' guide stays true about subscriptions: every query quoted in section 9 of
docs/api.md parses with the language's own parser, as the kind the text says."""

from __future__ import annotations

import re

from matching.subscriptions import parse_query
from tests.livestack import ROOT

GUIDE = (ROOT / "docs" / "api.md").read_text()
SECTION = GUIDE.split("## 9. Subscriptions")[1]


def test_every_query_quoted_in_the_subscriptions_section_parses():
    quoted = [" ".join(text.split()) for text in re.findall(r"`(SELECT [^`]*)`", SECTION, re.S)]
    kinds = [parse_query(text).kind.value for text in quoted]  # raises at a bad one
    # one paragraph per form, each with its example (form 1 has two)
    assert kinds == ["events", "events", "composite", "pattern", "state", "state"]
