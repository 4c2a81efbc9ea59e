"""``events:<pattern>`` streams (SPEC 8.1, 8.2) on the real Redis channel layer: the events a
cycle committed, pushed after commit to the matching streams of those who may see them
(SPEC 5.6); ``resume`` replays the log then goes on live, each event once and in order, also
across a lost push; ``after`` checked; a replay bounded."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser
from uvicorn.protocols.utils import ClientDisconnected

from exchange.models import Offer
from exchange.realtime import consumers, replay
from exchange.realtime.streams import events_messages, group_send_all
from exchange.selectors.events import event_json, events_read
from exchange.services import events as event_service
from exchange.services.closing import offer_close
from exchange.services.markets import market_create
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from exchange.services.tokens import token_issue
from tests.factories import PENCILS_SCHEMA, StaffFactory, UserFactory, pencils_market
from tests.realtime.client import ask, connect

pytestmark = pytest.mark.django_db(transaction=True)

STREAM = "events:office.>"


@pytest.fixture
def book():
    """Two markets, one under ``office``; a seller, two bidders, staff; their tokens."""
    users = {
        "seller": UserFactory(username="seller"),
        "alice": UserFactory(username="alice"),
        "bob": UserFactory(username="bob"),
        "staff": StaffFactory(username="staff"),
    }
    return {
        "pencils": pencils_market(),
        "spades": market_create(
            subject="garden.tools.spades", title="Spades", schema=PENCILS_SCHEMA
        ),
        "users": users,
        "keys": {name: token_issue(user=user).key for name, user in users.items()},
    }


def trade_round(book, *, price: str = "1.50") -> None:
    """An offer on each market and alice's bid on pencils, then a cycle."""
    seller, alice = book["users"]["seller"], book["users"]["alice"]
    for market in (book["pencils"], book["spades"]):
        offer_publish(seller=seller, market=market, constraint="lot = 10 AND price >= 1.00")
    bid_place(buyer=alice, market=book["pencils"], constraint=f"lot = 10 AND price <= {price}")
    matching_cycle_run()


def logged(user, *, after: int = 0) -> list[dict]:
    """What ``GET /api/v1/events/?subject=office.>`` gives ``user``, after ``after``."""
    reader = user if user is not None else AnonymousUser()
    return [event_json(e) for e in events_read(user=reader, subject="office.>", after=after)]


async def take(ws, count: int) -> list[dict]:
    return [json.loads(await ws.receive_from(timeout=10)) for _ in range(count)]


def framed(events: list[dict], stream: str = STREAM) -> list[dict]:
    return [{"stream": stream, "type": "event", "seq": e["seq"], "data": e} for e in events]


def test_each_role_gets_the_matching_events_it_may_see_live_in_order(book):
    users = book["users"]

    async def scenario():
        sockets = {
            who: await connect(f"/ws/?token={book['keys'][who]}")
            for who in ("alice", "bob", "staff")
        }
        sockets["anonymous"] = await connect()
        answers = {
            who: await ask(ws, {"action": "subscribe", "stream": STREAM})
            for who, ws in sockets.items()
        }
        await database_sync_to_async(trade_round)(book)
        expected = {who: await database_sync_to_async(logged)(users.get(who)) for who in sockets}
        got = {}
        for who, ws in sockets.items():
            got[who] = await take(ws, len(expected[who]))
            assert await ws.receive_nothing(timeout=0.5)
            await ws.disconnect()
        return answers, expected, got

    answers, expected, got = asyncio.run(scenario())
    assert all(a == {"type": "subscribed", "stream": STREAM} for a in answers.values())
    for who in got:
        assert got[who] == framed(expected[who])
    types = {who: [f["data"]["type"] for f in frames] for who, frames in got.items()}
    assert types["alice"] == types["staff"] == ["offer_posted", "bid_placed", "best_offer"]
    assert types["bob"] == types["anonymous"] == ["offer_posted", "best_offer"]
    assert {f["data"]["subject"] for frames in got.values() for f in frames} == {
        "office.supplies.pencils"
    }


def test_a_literal_subject_follows_that_market_only_and_unsubscribing_stops_it(book):
    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['staff']}")
        await ask(ws, {"action": "subscribe", "stream": "events:garden.tools.spades"})
        await database_sync_to_async(trade_round)(book)
        got = await take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.5)
        left = await ask(ws, {"action": "unsubscribe", "stream": "events:garden.tools.spades"})
        await database_sync_to_async(trade_round)(book, price="1.60")
        after_leaving = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return got, quiet, left, after_leaving

    got, quiet, left, after_leaving = asyncio.run(scenario())
    assert [(f["stream"], f["data"]["type"], f["data"]["subject"]) for f in got] == [
        ("events:garden.tools.spades", "offer_posted", "garden.tools.spades")
    ]
    assert quiet and after_leaving
    assert left == {"type": "unsubscribed", "stream": "events:garden.tools.spades"}


def test_resume_replays_the_log_after_the_seq_then_goes_on_live_without_duplicates(book):
    alice = book["users"]["alice"]
    trade_round(book)
    first_round = logged(alice)
    seen = first_round[0]["seq"]  # the client saw the first event, then lost the socket

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['alice']}")
        answer = await ask(ws, {"action": "resume", "stream": STREAM, "after": seen})
        replayed = await take(ws, len(first_round) - 1)
        # A live run the replay already served (a push that was late) adds nothing.
        run = [{"owner": None, "data": e} for e in first_round]
        await asyncio.to_thread(group_send_all, events_messages(run))
        await database_sync_to_async(trade_round)(book, price="1.60")
        expected_live = await database_sync_to_async(logged)(alice, after=first_round[-1]["seq"])
        live = await take(ws, len(expected_live))
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, replayed, expected_live, live, quiet

    answer, replayed, expected_live, live, quiet = asyncio.run(scenario())
    assert answer == {"type": "subscribed", "stream": STREAM}
    assert replayed == framed(first_round[1:])
    assert live == framed(expected_live) and expected_live
    assert quiet


@pytest.fixture
def sent():
    """The log's first push after this is lost (Redis is down); the runs lost, listed."""
    lost: list = []
    real_push = event_service.events_push

    def lost_once(events):
        if not lost:
            lost.append(events)
            raise ConnectionError("Redis is down")
        real_push(events)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(event_service, "events_push", lost_once)
        yield lost


def test_a_lost_push_is_read_from_the_log_when_the_next_run_skips_ahead(book, sent):
    alice = book["users"]["alice"]

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['alice']}")
        await ask(ws, {"action": "subscribe", "stream": STREAM})
        await database_sync_to_async(trade_round)(book)  # its push fails
        nothing = await ws.receive_nothing(timeout=0.5)
        await database_sync_to_async(trade_round)(book, price="1.60")
        expected = await database_sync_to_async(logged)(alice)
        got = await take(ws, len(expected))
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return nothing, expected, got, quiet

    nothing, expected, got, quiet = asyncio.run(scenario())
    assert nothing and quiet and len(sent) == 1
    assert got == framed(expected)
    seqs = [f["seq"] for f in got]
    assert seqs == sorted(set(seqs))


@pytest.mark.parametrize(
    "after", [-1, 1.5, True, None, "x", "٣", "9223372036854775808", [1]], ids=repr
)
def test_a_bad_after_is_refused_and_follows_nothing(book, after):
    async def scenario():
        ws = await connect()
        answer = await ask(ws, {"action": "resume", "stream": STREAM, "after": after})
        await database_sync_to_async(trade_round)(book)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, quiet

    answer, quiet = asyncio.run(scenario())
    assert answer == {
        "type": "error",
        "code": "bad_frame",
        "message": f'Resume {STREAM!r} after a sequence number, a whole number: {{"after": 42}}.',
        "stream": STREAM,
    }
    assert quiet


def test_a_bad_pattern_is_refused_with_its_position(book):
    async def scenario():
        ws = await connect()
        answer = await ask(ws, {"action": "resume", "stream": "events:office..x", "after": 0})
        await ws.disconnect()
        return answer

    answer = asyncio.run(scenario())
    assert (answer["code"], answer["stream"], answer["position"]) == (
        "bad_pattern",
        "events:office..x",
        7,
    )


def test_a_replay_stops_at_its_cap_and_says_where_to_resume(book, monkeypatch):
    monkeypatch.setattr(consumers, "REPLAY_BATCH", 1)
    monkeypatch.setattr(consumers, "REPLAY_CAP", 2)
    staff = book["users"]["staff"]
    trade_round(book)
    trade_round(book, price="1.60")
    log = logged(staff)
    assert len(log) > 3

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['staff']}")
        await ask(ws, {"action": "resume", "stream": STREAM, "after": 0})
        first = await take(ws, 3)
        await database_sync_to_async(trade_round)(book, price="1.70")
        quiet = await ws.receive_nothing(timeout=0.5)
        await ask(ws, {"action": "unsubscribe", "stream": STREAM})
        answer = await ask(ws, {"action": "resume", "stream": STREAM, "after": log[1]["seq"]})
        rest = await take(ws, 2)
        await ws.disconnect()
        return first, quiet, answer, rest

    first, quiet, answer, rest = asyncio.run(scenario())
    stop = log[1]["seq"]
    assert first[:2] == framed(log[:2])
    assert first[2] == {
        "type": "error",
        "code": "replay_limit",
        "message": f"One resume replays at most 2 events: {STREAM!r} stopped after {stop}; "
        f"resume it after {stop} for the rest.",
        "stream": STREAM,
        "after": stop,
    }
    assert quiet  # the stream was left: nothing live either
    assert answer == {"type": "subscribed", "stream": STREAM}
    assert rest == framed(log[2:4])


def test_closing_pushes_its_events_and_the_filled_bid_only_to_its_bidder(book):
    users = book["users"]
    trade_round(book)
    offer = Offer.objects.get(market=book["pencils"])

    async def scenario():
        sockets = {
            who: await connect(f"/ws/?token={book['keys'][who]}") for who in ("alice", "bob")
        }
        for ws in sockets.values():
            await ask(ws, {"action": "subscribe", "stream": "events:office.supplies.pencils"})
        start = await database_sync_to_async(logged)(users["staff"])
        await database_sync_to_async(offer_close)(offer_id=offer.pk, staff=users["staff"])
        got = {}
        for who, ws in sockets.items():
            expected = await database_sync_to_async(logged)(users[who], after=start[-1]["seq"])
            got[who] = (expected, await take(ws, len(expected)))
            assert await ws.receive_nothing(timeout=0.5)
            await ws.disconnect()
        return got

    got = asyncio.run(scenario())
    stream = "events:office.supplies.pencils"
    for expected, frames in got.values():
        assert frames == framed(expected, stream)
    types = {who: [f["data"]["type"] for f in frames] for who, (_, frames) in got.items()}
    assert types["alice"][:2] == ["offer_closed", "trade"] and "bid_filled" in types["alice"]
    assert "bid_filled" not in types["bob"] and types["bob"][:2] == ["offer_closed", "trade"]


def test_each_matching_stream_of_a_connection_gets_each_event_once(book):
    staff = book["users"]["staff"]
    other = "events:*.supplies.pencils"

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['staff']}")
        await ask(ws, {"action": "subscribe", "stream": STREAM})
        await ask(ws, {"action": "subscribe", "stream": other})
        await ask(ws, {"action": "subscribe", "stream": STREAM})  # again: nothing doubles
        await database_sync_to_async(trade_round)(book)
        expected = await database_sync_to_async(logged)(staff)
        got = await take(ws, 2 * len(expected))
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return expected, got, quiet

    expected, got, quiet = asyncio.run(scenario())
    assert quiet
    # In seq order; for each event, the streams in the order they were subscribed.
    assert got == [
        frame for event in expected for frame in framed([event], STREAM) + framed([event], other)
    ]


def batched(events: list[dict], size: int, stream: str = STREAM) -> list[dict]:
    """``events`` as a batched replay frames them, ``size`` a frame."""
    runs = [events[i : i + size] for i in range(0, len(events), size)]
    return [{"stream": stream, "type": "batch", "seq": r[-1]["seq"], "data": r} for r in runs]


def test_a_batched_resume_replays_in_batch_frames_then_goes_on_live_one_frame_each(
    book, monkeypatch
):
    monkeypatch.setattr(replay, "FRAME_ITEMS", 2)
    alice = book["users"]["alice"]
    trade_round(book)
    trade_round(book, price="1.60")
    history = logged(alice)
    seen = history[0]["seq"]

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['alice']}")
        answer = await ask(ws, {"action": "resume", "stream": STREAM, "after": seen, "batch": True})
        replayed = await take(ws, len(history) // 2)  # len - 1 events, two a frame
        # A live run the replay already served adds nothing.
        run = [{"owner": None, "data": e} for e in history]
        await asyncio.to_thread(group_send_all, events_messages(run))
        await database_sync_to_async(trade_round)(book, price="1.70")
        expected_live = await database_sync_to_async(logged)(alice, after=history[-1]["seq"])
        live = await take(ws, len(expected_live))
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, replayed, expected_live, live, quiet

    answer, replayed, expected_live, live, quiet = asyncio.run(scenario())
    assert answer == {"type": "subscribed", "stream": STREAM}
    assert len(history) > 3
    assert replayed == batched(history[1:], 2)
    assert live == framed(expected_live) and expected_live
    assert quiet


def test_a_batch_frame_holds_one_event_past_the_byte_bound(book, monkeypatch):
    monkeypatch.setattr(replay, "FRAME_BYTES", 1)
    staff = book["users"]["staff"]
    trade_round(book)
    history = logged(staff)

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['staff']}")
        await ask(ws, {"action": "resume", "stream": STREAM, "after": 0, "batch": True})
        got = await take(ws, len(history))
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return got, quiet

    got, quiet = asyncio.run(scenario())
    assert got == batched(history, 1) and quiet


def test_a_batched_replay_stops_at_its_cap_and_says_where_to_resume(book, monkeypatch):
    monkeypatch.setattr(consumers, "REPLAY_READ", 2)
    monkeypatch.setattr(consumers, "REPLAY_CAP", 3)
    staff = book["users"]["staff"]
    trade_round(book)
    trade_round(book, price="1.60")
    log = logged(staff)
    assert len(log) > 5

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['staff']}")
        await ask(ws, {"action": "resume", "stream": STREAM, "after": 0, "batch": True})
        first = await take(ws, 3)
        await database_sync_to_async(trade_round)(book, price="1.70")
        quiet = await ws.receive_nothing(timeout=0.5)
        stop = log[2]["seq"]
        answer = await ask(ws, {"action": "resume", "stream": STREAM, "after": stop, "batch": True})
        rest = await take(ws, 1)
        await ws.disconnect()
        return first, quiet, answer, rest

    first, quiet, answer, rest = asyncio.run(scenario())
    stop = log[2]["seq"]
    # two reads: 2 events, then the 1 the cap leaves
    assert first[:2] == batched(log[:2], 2) + batched(log[2:3], 1)
    assert first[2] == {
        "type": "error",
        "code": "replay_limit",
        "message": f"One resume replays at most 3 events: {STREAM!r} stopped after {stop}; "
        f"resume it after {stop} for the rest.",
        "stream": STREAM,
        "after": stop,
    }
    assert quiet
    assert answer == {"type": "subscribed", "stream": STREAM}
    assert rest == batched(log[3:5], 2)


def test_a_lost_push_on_a_batched_stream_is_read_from_the_log_in_one_batch(book, sent):
    alice = book["users"]["alice"]

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['alice']}")
        await ask(ws, {"action": "subscribe", "stream": STREAM, "batch": True})
        await database_sync_to_async(trade_round)(book)  # its push fails
        await database_sync_to_async(trade_round)(book, price="1.60")
        expected = await database_sync_to_async(logged)(alice)
        got = await take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.5)
        await database_sync_to_async(trade_round)(book, price="1.70")
        live = await database_sync_to_async(logged)(alice, after=expected[-1]["seq"])
        got_live = await take(ws, len(live))
        await ws.disconnect()
        return expected, got, quiet, live, got_live

    expected, got, quiet, live, got_live = asyncio.run(scenario())
    # the gap and the run that revealed it, in one batch frame; then live, one frame each
    assert got == batched(expected, 500) and len(expected) > 3
    assert quiet and len(sent) == 1
    assert got_live == framed(live) and live


@pytest.mark.parametrize("action", ["subscribe", "resume"])
@pytest.mark.parametrize("flag", [1, "true", None, [True]], ids=repr)
def test_a_bad_batch_flag_is_refused_and_follows_nothing(book, action, flag):
    async def scenario():
        ws = await connect()
        answer = await ask(ws, {"action": action, "stream": STREAM, "after": 0, "batch": flag})
        await database_sync_to_async(trade_round)(book)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, quiet

    answer, quiet = asyncio.run(scenario())
    assert answer == {
        "type": "error",
        "code": "bad_frame",
        "message": f'"batch" is true (replays come in batch frames) or false. ({STREAM!r})',
        "stream": STREAM,
    }
    assert quiet


def test_event_runs_cut_frames_within_each_read_and_stop_reading_when_closed(book, monkeypatch):
    monkeypatch.setattr(replay, "FRAME_ITEMS", 2)
    staff = book["users"]["staff"]
    for price in ("1.50", "1.60"):
        trade_round(book, price=price)
    log = logged(staff)
    upto = log[-1]["seq"]
    assert len(log) > 5
    reads = []
    original = replay.history_texts

    def counted(**kwargs):
        reads.append((kwargs["after"], kwargs["limit"]))
        return original(**kwargs)

    monkeypatch.setattr(replay, "history_texts", counted)
    chunks = replay.frame_chunks
    closing = threading.Event()

    def held(texts):
        """The runs, the reading thread held after the first until the test closes."""
        for i, run in enumerate(chunks(texts)):
            if i == 1:
                closing.wait()
            yield run

    async def scenario():
        whole = [
            run
            async for run in replay.event_runs(
                user=staff, subject="office.>", after=0, upto=upto, cap=5, read=3
            )
        ]
        reads_whole = list(reads)
        reads.clear()
        runs = replay.event_runs(user=staff, subject="office.>", after=0, upto=upto, cap=5, read=3)
        monkeypatch.setattr(replay, "frame_chunks", held)
        first = await anext(runs)
        closed = asyncio.ensure_future(runs.aclose())  # sets its stop, waits for the thread
        await asyncio.sleep(0)
        closing.set()
        await closed
        rest = [run async for run in runs]
        return whole, reads_whole, first, rest

    whole, reads_whole, first, rest = asyncio.run(scenario())
    # two reads (3 events, then the 2 the cap leaves), frames of 2 cut within each read
    assert reads_whole == [(0, 3), (log[2]["seq"], 2)]
    assert [[json.loads(t) for t in run.texts] for run in whole] == [
        log[0:2],
        log[2:3],
        log[3:5],
    ]
    assert [(run.last, run.count) for run in whole] == [
        (log[1]["seq"], 2),
        (log[2]["seq"], 1),
        (log[4]["seq"], 2),
    ]
    # closed after its first run, the read went no further than its first query
    assert first.last == log[1]["seq"] and reads == [(0, 3)] and rest == []


def test_a_client_leaving_mid_replay_ends_its_connection_without_an_error(
    book, monkeypatch, caplog
):
    # Given events in the log and a client that leaves once its replay's first frame is
    # on its way (uvicorn raises ClientDisconnected from the send)
    trade_round(book)
    gone = []
    real_send = consumers.StreamConsumer._send

    async def leaving(self, payload):
        if payload.get("type") == "event":
            gone.append(payload["seq"])
            raise ClientDisconnected()
        await real_send(self, payload)

    monkeypatch.setattr(consumers.StreamConsumer, "_send", leaving)

    async def scenario():
        ws = await connect(f"/ws/?token={book['keys']['alice']}")
        await ws.send_to(text_data=json.dumps({"action": "resume", "stream": STREAM, "after": 0}))
        return await ws.ended()

    with caplog.at_level("INFO", logger="exchange.realtime.consumers"):
        sent = asyncio.run(scenario())

    # Then the connection ends quietly: nothing sent after the answer, no ERROR in the log
    assert gone, "the replay did not start"
    answer = json.dumps({"type": "subscribed", "stream": STREAM}, separators=(",", ":"))
    assert sent == [{"type": "websocket.send", "text": answer}]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert "WebSocket client left during websocket.receive" in caplog.text
