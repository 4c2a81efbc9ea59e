"""The dissemination optimizer on the live log, beside the subscription engine's delivery
of form 4 watches.

Live watches are delivered by the subscription engine (``exchange/subscription_engine``),
which keeps SPEC 8.3's guarantees (each ``n`` once, in order, nothing lost across a
process's restart) by committing the outbox with the partitions' cursors and restoring
its evaluators from their checkpoints. Routing the deliveries through
``matching.dissemination`` would need the open offers stored once for all watches rather
than in every watch's evaluator, which is not built yet (``docs/dissemination.md``, *Live watches*).

What runs here is the dissemination of the same changes, in the worker that runs the
shadow task, so that the optimizer chooses and is measured on the real flow: a
``Producer`` follows the log's public events (form 4 reads only offer and ``best_offer``
events, which are public) and holds every active range watch, spread over ``CONSUMERS``
in-process ``Consumer``s. Per change that reaches a watch the optimizer picks a strategy,
the messages are handled by the consumers, and the choice goes to the Redis log the staff
dashboard reads with its estimates and the seconds the change measured (producer and
consumers together). The consumers' notifications are kept for the last round
(``Shadow.notified``) so that tests compare them with the outboxes.

The state is the process's own: a new worker starts again from the stored state of one
watch (its open offers at its cursor). A watch joins with the answer it was last notified
when its stored cursor is where the producer is, else with the producer's answer there;
without a threshold the two are the same.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import zlib
from collections import defaultdict
from collections.abc import Hashable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from exchange.dissemination.choices import choices_record
from exchange.models import Subscription
from exchange.redis_clients import redis_client
from exchange.selectors.events import events_log_end
from exchange.selectors.history import HistoryWhere, history_events
from matching.dissemination import Consumer, Notification, Optimizer, Producer
from matching.subscriptions import parse_query
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.language.model import WatchQuery
from matching.subscriptions.language.schema import EVENT_TYPES
from matching.subscriptions.run.snapshot import SnapshotError, snapshot_load
from matching.subscriptions.watches.watch import WatchEngine

log = logging.getLogger(__name__)

CONSUMERS = 4
# Seconds one worker process keeps the shadow before another may take it over.
OWNER_TTL = 60
# Events one round follows at most (the shadow task asks for rounds until the log is read).
CHUNK = 5000
# The event types that change the open offers.
OFFER_TYPES = frozenset(t for t in EVENT_TYPES if t.startswith("offer_") or t == "best_offer")


def _consumer_of(watch: int) -> int:
    return zlib.crc32(str(watch).encode()) % CONSUMERS


def _engine(raw: bytes | memoryview | None) -> WatchEngine | None:
    if raw is None:
        return None
    try:
        engine = snapshot_load(bytes(raw)).engine
    except SnapshotError:  # of another version: the engine rebuilds it, the shadow waits
        return None
    return engine if isinstance(engine, WatchEngine) else None


class Shadow:
    """One worker's producer and consumers over the live range watches; ``round`` follows
    the log's next events."""

    def __init__(self) -> None:
        self.producer: Producer | None = None
        self.position = 0  # the last seq the producer has applied
        self.consumers = [Consumer() for _ in range(CONSUMERS)]
        self.notified: dict[Hashable, list[tuple[int | None, dict[str, Any]]]] = defaultdict(list)

    def round(self, *, chunk: int = CHUNK) -> bool:
        """Follows at most ``chunk`` events; True if the log holds more. Watches that
        became active join first and those no longer active leave."""
        self.notified = defaultdict(list)
        rows = list(
            Subscription.objects.filter(
                kind=Subscription.Kind.STATE, state=Subscription.State.ACTIVE
            ).values_list("id", "query", "cursor")
        )
        if not rows:
            self.producer = None  # nothing to follow: start afresh when a watch comes
            return False
        if self.producer is None and not self._start(rows):
            return False
        self._sync(rows)
        end = min(events_log_end(), self.position + chunk)
        if end <= self.position:
            return False
        entries = []
        where = HistoryWhere(types=OFFER_TYPES)
        for raw in history_events(user=AnonymousUser(), after=self.position, upto=end, where=where):
            entry = self._change(event_from_dict(raw))
            if entry is not None:
                entries.append(entry)
        self.position = end
        if entries:
            choices_record(entries)
        return end < events_log_end()

    def _start(self, rows: list[tuple[int, str, int]]) -> bool:
        """Takes the open offers from the watch furthest along the log."""
        for sub_id, _, _ in sorted(rows, key=lambda r: -r[2]):
            # The state and the cursor are read together: they are written together.
            stored = Subscription.objects.filter(id=sub_id).values_list("evaluator", "cursor")
            raw, cursor = stored.first() or (None, 0)
            engine = _engine(raw)
            if engine is not None:
                self.producer = Producer("auto", Optimizer())
                self.producer.book.offers = engine.offers
                self.position = cursor
                self.consumers = [Consumer() for _ in range(CONSUMERS)]
                return True
        return False

    def _sync(self, rows: list[tuple[int, str, int]]) -> None:
        producer = self.producer
        assert producer is not None
        active = {sub_id for sub_id, _, _ in rows}
        for watch in [w for w in producer.home if w not in active]:
            consumer = producer.unregister(watch)
            self.consumers[consumer].handle({"unregister": [watch]})
        for sub_id, query, _ in rows:
            if sub_id in producer.home:
                continue
            q = parse_query(query)
            if not isinstance(q, WatchQuery) or q.func is None:
                continue  # a single-offer watch follows its offer id, not a range
            consumer = _consumer_of(sub_id)
            self.consumers[consumer].handle(producer.register(sub_id, q, consumer))
            stored = Subscription.objects.filter(id=sub_id).values_list("evaluator", "cursor")
            raw, cursor = stored.first() or (None, None)
            engine = _engine(raw) if cursor == self.position else None
            if engine is not None and engine.registered:
                self.consumers[consumer].last[sub_id] = engine.last

    def _change(self, e: Any) -> dict[str, Any] | None:
        """Disseminates one event; the optimizer's log entry with the measured seconds, or
        None when the change reached no watch."""
        producer = self.producer
        assert producer is not None
        started = time.perf_counter()
        messages = producer.change(e)
        found: list[Notification] = []
        busy = watches = 0.0
        for consumer, message in messages:
            found.extend(self.consumers[consumer].handle(message))
            busy += self.consumers[consumer].work["seconds"]
            watches += self.consumers[consumer].work["watches"]
        seconds = time.perf_counter() - started
        for n in found:
            self.notified[n.watch].append((n.seq, n.data))
        if producer.last_choice is None:
            return None
        producer.optimizer.observe("watch", busy, watches)
        return {**producer.optimizer.log[-1], "measured_seconds": seconds}


_SHADOW = Shadow()


def _token() -> str:
    """This process's name in ``owner_key``. Read at each call, not at import: Celery's
    prefork children import this module in their parent, before they fork."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_key() -> str:
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}:dissemination-shadow"


def _ownership() -> str | None:
    """One worker process at a time runs the shadow (each would log the same choices):
    the one whose token is in ``owner_key``, renewed every round, free after ``OWNER_TTL``
    seconds without one. ``"taken"`` when this process has just taken it (its shadow, if
    it ran one before, may have missed what another owner followed since), ``"kept"``
    when it held it already, None when another process holds it."""
    client, token = redis_client(), _token()
    if client.set(owner_key(), token, nx=True, ex=OWNER_TTL):
        return "taken"
    if client.get(owner_key()) == token:
        client.expire(owner_key(), OWNER_TTL)
        return "kept"
    return None


def dissemination_round() -> bool:
    """The shadow task's call (``exchange/subscription_tasks.py``): one round of the
    shadow in the worker process that owns it (``settings.DISSEMINATION_SHADOW`` False
    turns it off); True if it is behind the log. A failure is logged and the shadow starts afresh next time; it never stops the
    task."""
    global _SHADOW
    if not getattr(settings, "DISSEMINATION_SHADOW", True):
        return False
    try:
        ownership = _ownership()
        if ownership is None:
            return False
        if ownership == "taken":
            _SHADOW = Shadow()  # start where the watches are, not where it stopped
        return _SHADOW.round()
    except Exception:  # the shadow must never stop the deliveries
        log.warning("the dissemination shadow failed; it starts afresh", exc_info=True)
        _SHADOW = Shadow()
        return False
