"""Discovery (SPEC 8.2): per market matching a pattern, how many connections watch it and
the names announced on it. The WebSocket ``who`` frame and ``GET /api/v1/presence/`` both
answer with ``presence_who``."""

from __future__ import annotations

from typing import Any

from exchange.models import Market
from exchange.realtime.presence import presence_facts
from exchange.selectors.subjects import subject_matching
from matching.subjects import SubjectError, SubjectPattern, compile_pattern

# A who answers for at most this many markets (the first by subject) and says when it cut.
MAX_WHO_MARKETS = 500
MARKET_PREFIX = "market:"


def presence_who(*, pattern: str | None, parameter: str = "subject") -> dict[str, Any]:
    """``{"subject": pattern, "markets": [{"subject", "watchers", "names"}], "truncated"}``
    for the existing markets whose subject matches ``pattern``, by subject.

    ``watchers`` counts the live connections that follow the market through a market stream
    (its subject or a pattern matching it) or announced themselves on it, each once;
    ``names`` are the names announced on it, sorted (a connection's user name is never
    shown: names are public only when announced). A malformed or missing pattern is
    ``InvalidInput`` naming ``parameter`` and the position.
    """
    text = pattern or ""
    subjects = list(
        Market.objects.filter(subject_matching(field="subject", pattern=text, parameter=parameter))
        .order_by("subject")
        .values_list("subject", flat=True)[: MAX_WHO_MARKETS + 1]
    )
    truncated = len(subjects) > MAX_WHO_MARKETS
    subjects = subjects[:MAX_WHO_MARKETS]
    connections = [
        (_followed(connection.streams), connection.announced)
        for connection in (presence_facts() if subjects else [])
    ]
    markets = []
    for subject in subjects:
        watchers = 0
        names = []
        for followed, announced in connections:
            if subject in announced:
                names.append(announced[subject])
            if subject in announced or any(p.matches(subject) for p in followed):
                watchers += 1
        markets.append({"subject": subject, "watchers": watchers, "names": sorted(names)})
    return {"subject": text, "markets": markets, "truncated": truncated}


def _followed(streams: set[str]) -> list[SubjectPattern]:
    """The patterns of a connection's market streams (a plain subject is a one-subject
    pattern)."""
    patterns = []
    for stream in streams:
        if stream.startswith(MARKET_PREFIX):
            try:
                patterns.append(compile_pattern(stream.removeprefix(MARKET_PREFIX)))
            except SubjectError:  # written by a server of another version: not a market
                continue
    return patterns
