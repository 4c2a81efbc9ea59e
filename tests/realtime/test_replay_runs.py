"""``replay.event_runs``: the log's lines in frame runs, read by a database thread while the
runs are sent; every line as the Python path spells it, also unusual ones; a reader that
leaves early stops the read there, closing it."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading

import pytest
from django.contrib.auth.models import AnonymousUser

from exchange.realtime import replay
from exchange.selectors import history
from tests.history.logs import log_write, python_lines

pytestmark = pytest.mark.django_db(transaction=True)

AT = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
# Constraint texts around what the line's spelling must get right (non-ASCII, escapes,
# separators inside strings), and a key the type does not have.
DATA = [
    {"offer": 1, "constraint": "lot >= 5"},
    {"offer": 2, "constraint": "colour = 'vert é'"},
    {"offer": 3, "constraint": 'say "hi", ": '},
    {"offer": 4, "constraint": ": lot, "},
    {"offer": 5, "zz": [1, {"b": 2}]},
    {"offer": 6, "constraint": "\\ \t"},
    {"offer": 7},
    {"offer": 8, "type": "x"},
    {"offer": 9, "constraint": "lot IN [1, 5)"},
    {"offer": 10},
]


@pytest.fixture
def log(monkeypatch):
    """The ten events of ``DATA`` on one market, one on another among them (seq 5); parts
    of three lines, frames of two; the Python path's lines of the first market's events."""
    monkeypatch.setattr(history, "PART_ROWS", 3)
    monkeypatch.setattr(replay, "FRAME_ITEMS", 2)
    rows = [
        (("offer_posted", "office.supplies.pencils", None, data), AT + dt.timedelta(hours=i))
        for i, data in enumerate(DATA)
    ]
    garden = ("offer_withdrawn", "garden.tools.spades", None, {"offer": 0})
    rows.insert(4, (garden, AT + dt.timedelta(hours=3, minutes=30)))
    log_write(rows)
    lines = python_lines(AnonymousUser()).decode().splitlines()
    return [line for line in lines if '"subject":"office.' in line]


def runs(**bounds):
    return replay.event_runs(user=AnonymousUser(), subject="office.>", cap=100, read=100, **bounds)


def test_runs_carry_the_python_paths_lines_in_order(log):
    async def whole():
        return [run async for run in runs(after=0, upto=11)]

    got = asyncio.run(whole())
    assert [run.texts for run in got] == [log[i : i + 2] for i in range(0, 10, 2)]
    assert [run.count for run in got] == [2] * 5
    # each run names the seq of its last event (seq 5 is the other market's)
    assert [run.last for run in got] == [2, 4, 7, 9, 11]


def test_a_reader_that_leaves_stops_the_read_and_closes_it(log, monkeypatch):
    # Given a read whose second part waits until the reader has left
    gate = threading.Event()
    parts: list[int] = []
    closed = []
    real = replay.history_texts

    def held(**kwargs):
        texts = real(**kwargs)

        def gen():
            try:
                for lines in texts:
                    if parts:
                        gate.wait()
                    parts.append(len(lines))
                    yield lines
            finally:
                texts.close()
                closed.append(True)

        return gen()

    monkeypatch.setattr(replay, "history_texts", held)

    async def leave():
        read = runs(after=0, upto=11)
        first = await anext(read)
        asyncio.get_running_loop().call_soon(gate.set)  # once the reader has said stop
        await read.aclose()
        return first

    # When the reader takes one run and leaves
    first = asyncio.run(leave())
    # Then it got the first two lines, and the read stopped after the part being read
    # (two of four), closed
    assert first.texts == log[:2]
    assert parts == [3, 3] and closed == [True]
