"""Batched replays of the ``events:<pattern>`` and ``sub:<id>`` streams.

A client that resumes with ``"batch": true`` gets the replayed part of the stream (the log
or the outbox after its position) in ``batch`` frames of many items rather than one frame
per item; live pushes stay one frame per item. Why: a replay is bound by the number of
WebSocket messages, not by the reads (one message costs the consumer, the server and the
client about as much as a few hundred events' JSON), so a frame of hundreds of events
replays tens of thousands a second where single frames gave under two thousand.

A frame holds at most ``FRAME_ITEMS`` items and, past its first item, at most
``FRAME_BYTES`` bytes of item text (an item larger than that goes alone): a client's buffer
and the server's memory per send stay bounded.

The items are the JSON text the single frames would carry, never parsed here: the log's
lines come from PostgreSQL already spelled as ``json.dumps`` writes them
(``selectors/history.py``), and the frame is that text joined under an envelope.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser, User

from exchange.selectors.history import HistoryWhere, history_texts

FRAME_ITEMS = 500
FRAME_BYTES = 256 * 1024
# The head of a log line as ``history_texts`` writes it.
_SEQ = re.compile(r'\{"seq":(\d+),')


BATCH_USAGE = '"batch" is true (replays come in batch frames) or false.'


def batch_flag(message: dict[str, Any]) -> bool | None:
    """A client frame's ``batch``: False when absent, None when it is not a boolean."""
    flag = message.get("batch", False)
    return flag if isinstance(flag, bool) else None


def compact(value: Any) -> str:
    """``value`` as the consumer writes a frame's JSON (compact, decimals as text)."""
    return json.dumps(value, separators=(",", ":"), default=str)


def frame_chunks(
    texts: Iterable[str], *, items: int | None = None, size: int | None = None
) -> Iterator[list[str]]:
    """``texts`` in order, cut into runs of at most ``items`` (``FRAME_ITEMS``) texts and,
    past a run's first text, at most ``size`` (``FRAME_BYTES``) characters in all."""
    items = FRAME_ITEMS if items is None else items
    size = FRAME_BYTES if size is None else size
    run: list[str] = []
    used = 0
    for text in texts:
        if run and (len(run) >= items or used + len(text) > size):
            yield run
            run, used = [], 0
        run.append(text)
        used += len(text) + 1
    if run:
        yield run


def batch_frame(envelope: dict[str, Any], key: str, texts: list[str]) -> str:
    """The text of ``envelope`` with one more key, ``key``, whose value is the JSON array of
    ``texts`` (each already JSON): what ``compact(envelope | {key: [...]})`` would write."""
    head = compact(envelope)
    return f"{head[:-1]},{compact(key)}:[{','.join(texts)}]}}"


@dataclass(frozen=True)
class EventBatch:
    """A run of the log's events for one ``batch`` frame: the last event's ``seq``, how
    many events, and their JSON texts."""

    last: int
    count: int
    texts: list[str]


def _read_runs(
    hand: Callable[[EventBatch | None], None],
    stop: threading.Event,
    *,
    user: User | AnonymousUser,
    subject: str,
    after: int,
    upto: int,
    cap: int,
    read: int,
) -> None:
    """In a database thread: the events ``user`` may see about subjects matching
    ``subject`` with ``after < seq <= upto``, at most ``cap`` of them, read ``read`` at a
    time (one query each), cut into frame runs within each read and handed over one run at
    a time as the rows arrive; then None. Stops early, cancelling the query, once ``stop``
    is set."""
    sent = 0
    try:
        while after < upto and sent < cap and not stop.is_set():
            want = min(read, cap - sent)
            got = 0
            parts = history_texts(
                user=user, after=after, upto=upto, where=HistoryWhere(subject=subject), limit=want
            )
            try:
                for run in frame_chunks(chain.from_iterable(parts)):
                    if stop.is_set():
                        return
                    head = _SEQ.match(run[-1])
                    assert head is not None, run[-1]
                    after = int(head[1])
                    got += len(run)
                    hand(EventBatch(after, len(run), run))
            finally:
                parts.close()
            sent += got
            if got < want:
                return
    finally:
        hand(None)


async def event_runs(
    *, user: User | AnonymousUser, subject: str, after: int, upto: int, cap: int, read: int
) -> AsyncGenerator[EventBatch, None]:
    """The runs of ``_read_runs`` as they arrive, while the next ones are being read.

    Why a reading thread that hands runs over: the log's query (PostgreSQL building the
    lines) and the frames' sends (the socket, the client) then overlap instead of taking
    turns, and one query reads a whole resume instead of a query per few thousand events
    (each costs tens of milliseconds of planning over the daily partitions). The thread
    never waits for the sends: what it reads is bounded by ``cap`` and the connection is
    given back as soon as the read ends, however slow the client. Closing the iterator
    early (the socket failed) stops the read and waits for the thread."""
    loop = asyncio.get_running_loop()
    runs: asyncio.Queue[EventBatch | None] = asyncio.Queue()
    stop = threading.Event()

    def hand(run: EventBatch | None) -> None:
        loop.call_soon_threadsafe(runs.put_nowait, run)

    reading = asyncio.ensure_future(
        database_sync_to_async(_read_runs)(
            hand, stop, user=user, subject=subject, after=after, upto=upto, cap=cap, read=read
        )
    )
    try:
        while (run := await runs.get()) is not None:
            yield run
    finally:
        stop.set()
        await reading  # its failure, if any, is the replay's
