"""Streams named by a subject pattern (SPEC 8.2): ``market:office.>``, ``market:*.tools.*``.

How a pattern stream's frames reach a connection
------------------------------------------------

Channels groups are exact names: a group cannot stand for "every market under ``office``",
and a market created after a client subscribed has no group the client could have joined.
So every public market frame is sent twice by the publisher (``streams.public_messages``):
to the market's own group, which the connections following that one market joined, and to
one group per stream kind shared by the whole site, ``pattern_group("market")``. A
connection joins that shared group while it follows at least one pattern of the kind, and
keeps, in a ``PatternStreams``, its patterns compiled once; each frame from the shared group
is matched against them and sent once per matching stream, named as the client subscribed.

Why this scheme:

* Dynamic classing comes for free: the shared group carries the frames of every market,
  including one created a second ago, and the match happens when the frame arrives, so no
  subscription has to be re-resolved against the market list.
* Plain ``market:<subject>`` streams (a market page, a bot on one market) keep their own
  groups, so they never pay for the other markets' traffic; only pattern followers do.
* The cost of a pattern follower is one channel-layer message per public market frame,
  whatever its number of patterns: per connection, not per pattern.

The seam: ``PatternStreams`` is the only thing that answers "which of this connection's
streams does this subject match". A matching index (SPEC 8.2, issue 20) replaces it behind
the same three calls (``add``, ``remove``, ``matching``), first per connection and then, if
wanted, per server process (one reader of the shared group fanning out in memory).

Other pattern kinds reuse the same machinery: add the kind to ``PATTERN_KINDS``, publish
with ``pattern_message`` (its ``owner`` limits a frame to one user and staff), and the
consumer's ``pattern_frame`` handler delivers; a kind that has no per-subject groups leaves
``LITERAL_GROUPS`` alone, so that its plain subjects go through the shared group as
one-subject patterns. ``events:<pattern>`` is such a kind with a handler of its own
(``events.batch``, see ``consumers.py``): its messages carry runs of the log, so that each
connection can tell a missed run and read it from the log.
"""

from __future__ import annotations

from matching.subjects import SubjectPattern, compile_pattern

# Stream kinds whose name after the colon is a subject pattern.
PATTERN_KINDS = frozenset({"market", "events"})
# Of those, the kinds whose plain subjects have a group of their own (``market:<subject>``,
# which must name an existing market, as before patterns existed).
LITERAL_GROUPS = frozenset({"market"})


def pattern_group(kind: str) -> str:
    """The site-wide group that carries every public frame of streams of ``kind`` to the
    connections following a pattern of that kind."""
    return f"patterns.{kind}"


def pattern_of(stream: str) -> SubjectPattern | None:
    """The compiled pattern of a pattern stream (``market:office.>``); None for any other
    stream, including a plain subject of a kind in ``LITERAL_GROUPS``. ``SubjectError``
    (with the position inside the pattern) when the stream is of a pattern kind and what
    follows the colon is not a pattern."""
    kind, colon, name = stream.partition(":")
    if not colon or kind not in PATTERN_KINDS:
        return None
    pattern = compile_pattern(name)
    if pattern.is_literal and kind in LITERAL_GROUPS:
        return None
    return pattern


class PatternStreams:
    """The pattern streams one connection follows, by kind, each compiled once."""

    def __init__(self) -> None:
        self._kinds: dict[str, dict[str, SubjectPattern]] = {}

    def __contains__(self, stream: str) -> bool:
        return stream in self._kinds.get(stream.partition(":")[0], {})

    def add(self, stream: str, pattern: SubjectPattern) -> bool:
        """Follow ``stream``; True when it is the first of its kind (join the group)."""
        streams = self._kinds.setdefault(stream.partition(":")[0], {})
        streams[stream] = pattern
        return len(streams) == 1

    def remove(self, stream: str) -> bool:
        """Stop following ``stream``; True when it was the last of its kind (leave the
        group)."""
        kind = stream.partition(":")[0]
        streams = self._kinds.get(kind, {})
        if streams.pop(stream, None) is None:
            return False
        if streams:
            return False
        del self._kinds[kind]
        return True

    def matching(self, kind: str, subject: str) -> list[str]:
        """The followed streams of ``kind`` whose pattern matches ``subject``, in the order
        they were subscribed."""
        return [s for s, p in self._kinds.get(kind, {}).items() if p.matches(subject)]
