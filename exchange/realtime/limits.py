"""What one WebSocket connection may cost: the rate of its frames and the answer to a flood.

A flood is answered by the server, never echoed: frames past the rate are dropped before
they are parsed, the client hears ``rate_limited`` at most once per ``RATE_WINDOW`` (not
once per dropped frame, nor once each time a frame slips through between drops), and a
client still dropping frames in ``WS_FLOOD_WINDOWS`` consecutive windows is closed with
``CLOSE_FLOODED`` (docs/api.md, WebSocket).
"""

from __future__ import annotations

import enum
import time

# The frame rate's clock (tests replace it to refill the bucket without waiting).
_clock = time.monotonic

# Seconds of one window of the flood answer: at most one ``rate_limited`` error in each.
RATE_WINDOW = 1.0
# Application close code (the 4000s): frames came past the rate for too long. 4029, as
# HTTP's 429.
CLOSE_FLOODED = 4029


class Verdict(enum.Enum):
    PASS = "pass"  # handle the frame
    DROP = "drop"  # drop it silently: the client was told in this window
    WARN = "warn"  # drop it and send one ``rate_limited`` error: a new window
    CLOSE = "close"  # sustained overflow: close the connection with ``CLOSE_FLOODED``


class FrameRate:
    """A token bucket per connection: ``burst`` frames at once, then ``per_second`` frames a
    second, checked before a frame is parsed, so a flood costs one comparison per frame.

    A dropped frame opens a window of ``RATE_WINDOW`` seconds unless one is open; the first
    drop of a window is a ``WARN``, the others ``DROP``. Windows that follow one another
    (the next opens within a window's length of the last one's end) are counted, and the
    ``flood_windows``-th in a row is a ``CLOSE``; a quiet window resets the count."""

    def __init__(self, *, per_second: float, burst: int, flood_windows: int) -> None:
        self.per_second = per_second
        self.burst = burst
        self.flood_windows = flood_windows
        self.tokens = float(burst)
        self.stamp = _clock()
        self.window_start: float | None = None
        self.windows = 0  # consecutive windows with drops, the open one included

    def check(self) -> Verdict:
        now = _clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return Verdict.PASS
        start = self.window_start
        if start is not None and now - start < RATE_WINDOW:
            return Verdict.DROP
        following = start is not None and now - start < 2 * RATE_WINDOW
        self.windows = self.windows + 1 if following else 1
        self.window_start = now
        return Verdict.CLOSE if self.windows >= self.flood_windows else Verdict.WARN
