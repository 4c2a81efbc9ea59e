"""Runs an order flow through a producer and in-process consumers, and through the one
evaluator, collecting each watch's notifications as ``(seq, data)`` lists."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from matching.dissemination import Consumer, Producer
from matching.subscriptions import parse_query
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.watches.watch import WatchEngine

Notified = dict[int, list[tuple[int | None, dict[str, Any]]]]


def disseminate(
    events: list[dict[str, Any]],
    texts: list[str],
    *,
    registered: int,
    consumers: int,
    producer: Producer,
) -> Notified:
    """Watch ``i`` is held by consumer ``i % consumers`` and registered after the first
    ``registered`` events."""
    held = [Consumer() for _ in range(consumers)]
    got: Notified = defaultdict(list)

    def deliver(consumer: int, message: dict[str, Any]) -> None:
        for n in held[consumer].handle(message):
            got[n.watch].append((n.seq, n.data))

    for raw in events[:registered]:
        for consumer, message in producer.change(event_from_dict(raw)):
            deliver(consumer, message)
    for i, text in enumerate(texts):
        deliver(i % consumers, producer.register(i, text, i % consumers))
    for raw in events[registered:]:
        for consumer, message in producer.change(event_from_dict(raw)):
            deliver(consumer, message)
    return dict(got)


def evaluate(events: list[dict[str, Any]], texts: list[str], *, registered: int) -> Notified:
    """The one evaluator's notifications, with the first one's seq left out (``None``) as
    a consumer has no event to number it by."""
    out: Notified = {}
    typed = [event_from_dict(raw) for raw in events]
    for i, text in enumerate(texts):
        engine = WatchEngine(parse_query(text))
        for e in typed[:registered]:
            engine.event(e)
        lines = [(None, data) for _, data in engine.register()]
        for e in typed[registered:]:
            lines.extend(engine.event(e))
        out[i] = lines
    return out
