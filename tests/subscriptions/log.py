"""Helpers of the subscription tests: append to the log, drive the subscription engine (an
``Engine`` in the test's own process, stepped synchronously), read the outbox, and run the
same subscription offline for comparison."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from django.db import connection, transaction

from exchange.models import EventCounter, Subscription
from exchange.selectors.events import events_log_end
from exchange.selectors.history import history_events
from exchange.selectors.subscriptions import subscription_notifications
from exchange.services.events import EventRow, events_append, events_insert
from exchange.services.matching import cycle_lock
from exchange.services.subscriptions import CHUNK, subscription_create
from exchange.subscription_engine import engine as engine_module
from exchange.subscription_engine.engine import BATCH, Engine
from matching.subscriptions import parse_query, run_offline
from tests.conftest import live_engines_stop

PENCILS = "office.supplies.pencils"


def owner_log(user: Any) -> list[dict[str, Any]]:
    """The whole log as ``user`` may see it, each event as SPEC 8.1 writes it."""
    return list(history_events(user=user, after=0, upto=events_log_end()))


DAY = dt.datetime(2031, 3, 4, tzinfo=dt.UTC)


def trade(price: str, *, trade_id: int = 1, subject: str = PENCILS) -> EventRow:
    return ("trade", subject, None, {"offer": 1, "trade": trade_id, "price": price})


def bid_placed(owner_id: int, bid: int, limit: str, *, subject: str = PENCILS) -> EventRow:
    return (
        "bid_placed",
        subject,
        owner_id,
        {"bid": bid, "version": 1, "limit": limit, "constraint": f"price <= {limit}"},
    )


def append(rows: list[EventRow]) -> None:
    """Append ``rows`` through the log's writer, as a matching cycle does (clock times)."""
    with transaction.atomic():
        cycle_lock()
        events_append(closed=rows)


def append_at(rows: list[EventRow], time: dt.datetime) -> None:
    """Append ``rows`` at ``time`` (not before the log's last time), numbered as the writer
    numbers them: what the writer does when its clock reads ``time``."""
    with transaction.atomic():
        cycle_lock()
        counter = EventCounter.objects.select_for_update().get_or_create(id=1)[0]
        assert counter.last_time is None or counter.last_time <= time
        events_insert([(row, time) for row in rows], first_seq=counter.last_seq + 1)
        counter.last_seq += len(rows)
        counter.last_time = time
        counter.save()


# The test's engine (``engine``), forgotten after each test (``tests/conftest.py``).
_engine: list[Engine] = []


def engine() -> Engine:
    """The test's subscription engine: one process in this one, holding every partition
    (the live stack's engine processes, if they run, are stopped first), its clock standing
    still and its leases and checkpoints far apart, so nothing moves unless the test says
    so. The same one for the whole test, as a long-lived process keeps its evaluators."""
    if not _engine:
        live_engines_stop()
        _engine.append(
            Engine(
                "test",
                lease_seconds=600,
                checkpoint_events=10**9,
                checkpoint_seconds=10**9,
                clock=lambda: 0.0,
            )
        )
    return _engine[0]


def engine_forget() -> None:
    _engine.clear()


def advance(*_subscriptions: Subscription, chunks: list[int] | None = None) -> None:
    """Step the test's engine until every subscription has read the whole log (the engine
    advances them all; the arguments name the ones the test looks at). ``chunks``: the
    batch and history slice sizes of the steps, cycled (one event at a time, say)."""
    sizes = chunks or [CHUNK]
    i = 0
    while step(sizes[i % len(sizes)]):
        i += 1


def step(size: int | None = None) -> bool:
    """One batch of the test's engine, of at most ``size`` events (and history slices of
    at most ``size``); True if it has more to read right away."""
    running = engine()
    running.changed = True  # what a process is told through Redis after a change
    running.batch, running.chunk = (size, size) if size else (BATCH, CHUNK)
    try:
        return running.step()
    finally:
        running.batch, running.chunk = BATCH, CHUNK


def outbox(subscription: Subscription) -> list[dict[str, Any]]:
    """What the subscription sent, as the offline contract prints it (``end`` included)."""
    subscription.refresh_from_db()
    lines = subscription_notifications(subscription_id=subscription.pk, after=0, limit=10**6)
    if subscription.state == "done" and subscription.reason == "completed":
        lines.append({"end": True})
    return lines


def offline(subscription: Subscription) -> list[dict[str, Any]]:
    """``run_offline`` over the log as the owner sees it, registered at the subscription's
    ``now``: what ``subscription_run`` prints for it."""
    events = owner_log(subscription.owner)
    return list(run_offline(parse_query(subscription.query), events, now=subscription.now))


def log_times() -> list[dt.datetime]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT time FROM exchange_event ORDER BY seq")
        return [row[0] for row in cursor.fetchall()]


SPADES = "garden.tools.spades"
T = "FILTER{type = 'trade'}(EVENTS)"
# {p} a price, {k} a window, {m} minutes, {f} a factor, {T} trades: every form, history
# and live parts, ends, visibility
TEMPLATES = [
    "SELECT price WHERE type = 'trade', price > {p}",
    "SELECT price WHERE type = 'trade', price > {p}, start_time = NOW - {m}m",
    "SELECT * WHERE type = 'trade', subject MATCHES 'office.>', start_time = NOW - 1d",
    "SELECT price WHERE type = 'trade', end_time = NOW + {m}m",
    "SELECT price WHERE type = 'trade', start_time = NOW - {m}m, end_time = NOW",
    "SELECT AVG(price, {k}) WHERE type = 'trade', start_time = NOW - {m}m",
    "SELECT subject, COUNT(price, {k}) WHERE type = 'trade' GROUP BY subject",
    "SELECT price WHERE type = 'trade', start_time = NOW - {m}m HAVING AVG(price, 2) > {p}",
    "SELECT * WHERE type = 'bid_placed', start_time = NOW - 1d",
    "SELECT limit WHERE limit >= {p}",
    "SELECT offer, ask WHERE type = 'offer_posted', ask <= {p}, start_time = NOW - {m}m",
    "SELECT b.offer, b.ask FROM a AND b WHERE a.type = 'trade', a.price >= {p}, "
    "a.start_time = NOW - {m}m, b.type = 'offer_posted', b.subject = a.subject",
    "SELECT a.price, b.price FROM {T} AS a "
    "NEXT{{b.subject = a.subject AND b.price > {f} * a.price}} {T} AS b",
    "SELECT a.price, b.price, n FROM {T} AS a "
    "FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} {T} AS b WHERE n >= 2",
    "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils'",
]


class Log:
    """The test's log: events at one minute apart from ``DAY``, of both markets, trades,
    offers and the users' bids."""

    def __init__(self, users, rng: random.Random) -> None:
        self.users = users
        self.rng = rng
        self.minute = 0
        self.offer = self.bid = 0

    def add(self, count: int) -> None:
        for _ in range(count):
            subject = self.rng.choice((PENCILS, PENCILS, SPADES))
            price = f"{self.rng.randint(80, 130) / 100:.2f}"
            kind = self.rng.random()
            if kind < 0.55:
                row = trade(price, trade_id=self.minute + 1, subject=subject)
            elif kind < 0.8:
                self.offer += 1
                row = (
                    "offer_posted",
                    subject,
                    None,
                    {"offer": self.offer, "version": 1, "ask": price, "constraint": "lot = 1"},
                )
            else:
                self.bid += 1
                row = bid_placed(self.rng.choice(self.users).pk, self.bid, price, subject=subject)
            self.minute += 1
            append_at([row], DAY + dt.timedelta(minutes=self.minute))


def register(users, rng: random.Random, count: int) -> list[Subscription]:
    subs = []
    for _ in range(count):
        query = rng.choice(TEMPLATES).format(
            p=f"{rng.randint(85, 125) / 100:.2f}",
            k=rng.randint(1, 4),
            m=rng.choice((5, 20, 90)),
            f=rng.choice(("1.01", "1.05", "1.10")),
            T=T,
        )
        subs.append(subscription_create(owner=rng.choice(users), query=query))
    return subs


def rebuilds_counted(monkeypatch: Any) -> list[int]:
    """The seams of the subscriptions the engine rebuilds by replay from now on (a
    checkpoint it could not restore), in order; the rebuilds themselves run as before."""
    rebuilt: list[int] = []
    rebuild = engine_module.subscription_rebuilt

    def counted(**kwargs: Any) -> Any:
        rebuilt.append(kwargs["seam"])
        return rebuild(**kwargs)

    monkeypatch.setattr(engine_module, "subscription_rebuilt", counted)
    return rebuilt
