"""Small inline SVG charts drawn on the server: no JavaScript library, nothing from a CDN.

Each function takes the days of a series and the matching rows (``None`` where a day has
no row) and returns SVG markup that is safe to put into a page: every text in it is
escaped, every number is formatted here.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from decimal import Decimal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from exchange.models import MarketDay
from exchange.numbers import number_text

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 24, 28
GRID_LINES = 4

Rows = Sequence[MarketDay | None]
Number = float | int | Decimal


def _nice_step(span: float) -> float:
    """A step of 1, 2 or 5 times a power of ten that cuts ``span`` into about 4 parts."""
    raw = span / GRID_LINES
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def _label(value: float, step: float) -> str:
    places = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:,.{places}f}"


class _Plot:
    """Maps day slots and values to coordinates; collects the SVG elements."""

    def __init__(self, days: Sequence[dt.date], lo: float, hi: float, title: str) -> None:
        self.days = days
        if hi <= lo:  # one value: give it some room
            pad = abs(lo) * 0.05 or 1.0
            lo, hi = lo - pad, hi + pad
        step = _nice_step(hi - lo)
        self.lo = math.floor(lo / step) * step
        self.hi = math.ceil(hi / step) * step
        self.step = step
        self.title = title
        self.parts: list[str] = []
        self.slot = (WIDTH - LEFT - RIGHT) / max(1, len(days))

    def x(self, i: int) -> float:
        return LEFT + self.slot * (i + 0.5)

    def y(self, value: Number) -> float:
        span = self.hi - self.lo
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (float(value) - self.lo) / span)

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def render(self, label: str) -> SafeString:
        axes = []
        n = round((self.hi - self.lo) / self.step)
        for k in range(n + 1):
            value = self.lo + k * self.step
            y = self.y(value)
            axes.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" class="grid"/>'
                f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{escape(_label(value, self.step))}</text>"
            )
        if self.days:
            picks = sorted({0, len(self.days) // 2, len(self.days) - 1})
            for i in picks:
                axes.append(
                    f'<text x="{self.x(i):.1f}" y="{HEIGHT - 8}" text-anchor="middle">'
                    f"{self.days[i]:%m-%d}</text>"
                )
        body = "".join(axes + self.parts)
        return mark_safe(
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(label)}" '
            f'class="analytics-chart"><title>{escape(label)}</title>'
            f'<text x="{LEFT}" y="15" class="chart-title">{escape(self.title)}</text>'
            f"{body}</svg>"
        )


def _values(rows: Rows, get: Callable[[MarketDay], Number | None]) -> list[Number | None]:
    return [None if r is None else get(r) for r in rows]


def trades_chart(days: Sequence[dt.date], rows: Rows, *, label: str) -> SafeString:
    """Bars: the number of trades per day."""
    counts = _values(rows, lambda r: r.trades)
    top = max([float(c) for c in counts if c is not None] or [0])
    plot = _Plot(days, 0, max(top, 1), "Trades per day")
    width = max(1.0, plot.slot * 0.7)
    for i, count in enumerate(counts):
        if count:
            y = plot.y(count)
            plot.add(
                f'<rect x="{plot.x(i) - width / 2:.1f}" y="{y:.1f}" width="{width:.1f}" '
                f'height="{plot.y(0) - y:.1f}" class="bar"><title>{days[i]}: {count} trade(s)'
                f"</title></rect>"
            )
    return plot.render(label)


def price_chart(days: Sequence[dt.date], rows: Rows, *, label: str) -> SafeString:
    """Candles (open, high, low, close) per day and the VWAP as a line."""
    traded = [r for r in rows if r is not None and r.trades]
    if not traded:
        plot = _Plot(days, 0, 1, "Price: no trades in this period")
        return plot.render(label)
    lows = [float(r.low) for r in traded if r.low is not None]
    highs = [float(r.high) for r in traded if r.high is not None]
    plot = _Plot(days, min(lows), max(highs), "Price (candles) and VWAP (line)")
    width = max(1.0, plot.slot * 0.6)
    vwap_points: list[str] = []
    for i, r in enumerate(rows):
        if r is None or not r.trades:
            continue
        if r.open is None or r.high is None or r.low is None or r.close is None:
            continue
        up = r.close >= r.open
        top, bottom = plot.y(max(r.open, r.close)), plot.y(min(r.open, r.close))
        tip = (
            f"<title>{days[i]}: open {number_text(r.open)}, high {number_text(r.high)}, "
            f"low {number_text(r.low)}, close {number_text(r.close)}"
            + (f", VWAP {number_text(r.vwap)}" if r.vwap is not None else "")
            + "</title>"
        )
        plot.add(
            f'<g class="candle {"up" if up else "down"}">{tip}'
            f'<line x1="{plot.x(i):.1f}" y1="{plot.y(r.high):.1f}" x2="{plot.x(i):.1f}" '
            f'y2="{plot.y(r.low):.1f}"/>'
            f'<rect x="{plot.x(i) - width / 2:.1f}" y="{top:.1f}" width="{width:.1f}" '
            f'height="{max(1.0, bottom - top):.1f}"/></g>'
        )
        if r.vwap is not None:
            vwap_points.append(f"{plot.x(i):.1f},{plot.y(r.vwap):.1f}")
    if vwap_points:
        plot.add(f'<polyline points="{" ".join(vwap_points)}" class="vwap"/>')
    return plot.render(label)


def match_rate_chart(days: Sequence[dt.date], rows: Rows, *, label: str) -> SafeString:
    """A line: the share of the day's new offers that found a matching bid, in percent."""
    plot = _Plot(days, 0, 100, "Match rate (%)")
    points = []
    for i, r in enumerate(rows):
        if r is None or r.match_rate is None:
            continue
        x, y = plot.x(i), plot.y(r.match_rate * 100)
        points.append(f"{x:.1f},{y:.1f}")
        plot.add(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="dot"><title>{days[i]}: '
            f"{r.offers_matched} of {r.offers_posted} offer(s), {r.match_rate:.0%}</title></circle>"
        )
    if len(points) > 1:
        plot.add(f'<polyline points="{" ".join(points)}" class="rate"/>')
    return plot.render(label)
