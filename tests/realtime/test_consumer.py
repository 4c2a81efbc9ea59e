"""The WebSocket consumer's logic with WebsocketCommunicator on the real Redis channel layer."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing.websocket import WebsocketCommunicator
from rest_framework.authtoken.models import Token

from exchange.models import Notification
from exchange.notification_texts import note_text
from exchange.realtime import consumers
from exchange.realtime.streams import stream_publish, user_wake
from exchange.services.orders import offer_publish
from matching.values import format_timestamp_body
from tests.factories import StaffFactory, UserFactory, pencils_market
from tests.realtime.client import ask
from tests.realtime.client import connect as connect_to

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(token: str | None = None) -> WebsocketCommunicator:
    return await connect_to("/ws/" + (f"?token={token}" if token else ""))


def token_for(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


@pytest.fixture
def market():
    return pencils_market()


def test_bad_frames_get_errors_and_the_connection_stays_usable(market):
    async def scenario():
        ws = await connect()
        replies = [
            await ask(ws, "not json"),
            await ask(ws, "[1]"),
            await ask(ws, {"action": "fly", "stream": "system"}),
            await ask(ws, {"action": "subscribe"}),
            await ask(ws, {"action": "subscribe", "stream": "market:no.such.market"}),
            await ask(ws, {"action": "subscribe", "stream": "offer:999999"}),
            await ask(ws, {"action": "subscribe", "stream": "x" * 5000}),
            await ask(ws, {"action": "resume", "stream": "me", "after": 0}),
            await ask(ws, {"action": "subscribe", "stream": f"market:{market.subject}"}),
        ]
        await ws.send_to(bytes_data=b"\x00\x01")
        replies.append(json.loads(await ws.receive_from(timeout=5)))
        await ws.disconnect()
        return replies

    replies = asyncio.run(scenario())
    assert [r.get("code") for r in replies] == [
        "bad_frame",
        "bad_frame",
        "unknown_action",
        "unknown_stream",
        "unknown_stream",
        "unknown_stream",
        "too_large",
        "forbidden",
        None,
        "bad_frame",
    ]
    assert replies[8] == {"type": "subscribed", "stream": "market:office.supplies.pencils"}


def test_a_connection_follows_at_most_max_streams_and_may_repeat_one_it_follows(
    market, monkeypatch
):
    monkeypatch.setattr(consumers, "MAX_STREAMS", 2)

    async def scenario():
        ws = await connect()
        answers = [
            await ask(ws, {"action": "subscribe", "stream": "system"}),
            await ask(ws, {"action": "resume", "stream": "events:office.>", "after": 0}),
            await ask(ws, {"action": "subscribe", "stream": "system"}),
            await ask(ws, {"action": "subscribe", "stream": f"market:{market.subject}"}),
            await ask(ws, {"action": "resume", "stream": "events:garden.>", "after": 0}),
            await ask(ws, {"action": "resume", "stream": "events:office.>", "after": 0}),
        ]
        await ws.disconnect()
        return answers

    too_many = {
        "type": "error",
        "code": "too_many_streams",
        "message": "A connection follows at most 2 streams.",
    }
    assert asyncio.run(scenario()) == [
        {"type": "subscribed", "stream": "system"},
        {"type": "subscribed", "stream": "events:office.>"},
        {"type": "subscribed", "stream": "system"},
        too_many,
        too_many,
        {"type": "subscribed", "stream": "events:office.>"},
    ]


def test_public_frames_reach_subscribers_of_that_stream_only(market):
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 1 AND price >= 1.00"
    )

    async def scenario():
        watcher, other = await connect(), await connect()
        await ask(watcher, {"action": "subscribe", "stream": f"offer:{offer.pk}"})
        await ask(other, {"action": "subscribe", "stream": "system"})
        await asyncio.to_thread(
            stream_publish,
            stream=f"offer:{offer.pk}",
            type="best_offer",
            seq=5,
            data={"best_value": "1.10"},
        )
        got = json.loads(await watcher.receive_from(timeout=5))
        nothing = await other.receive_nothing(timeout=0.3)
        await watcher.disconnect()
        await other.disconnect()
        return got, nothing

    got, nothing = asyncio.run(scenario())
    assert got == {
        "stream": f"offer:{offer.pk}",
        "type": "best_offer",
        "seq": 5,
        "data": {"best_value": "1.10"},
    }
    assert nothing


def test_resume_sends_exactly_the_missed_notifications_in_order(market):
    alice = UserFactory(username="alice")
    notes = [
        Notification.objects.create(market=market, recipient=alice, type="best_bid", data={"n": i})
        for i in range(3)
    ]
    Notification.objects.create(
        market=market, recipient=UserFactory(), type="best_bid", data={"n": 99}
    )
    token = token_for(alice)

    async def scenario():
        ws = await connect(token)
        assert await ask(ws, {"action": "resume", "stream": "me", "after": notes[0].pk}) == {
            "type": "subscribed",
            "stream": "me",
        }
        frames = [json.loads(await ws.receive_from(timeout=5)) for _ in range(2)]
        # a new notification, and two wake-ups for it: delivered once
        late = await asyncio.to_thread(
            Notification.objects.create,
            market=market,
            recipient=alice,
            type="outbid",
            data={"n": 3},
        )
        await asyncio.to_thread(user_wake, user_id=alice.pk, seq=late.pk)
        await asyncio.to_thread(user_wake, user_id=alice.pk, seq=late.pk)
        frames.append(json.loads(await ws.receive_from(timeout=5)))
        assert await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return frames, late

    frames, late = asyncio.run(scenario())
    assert [f["seq"] for f in frames] == [notes[1].pk, notes[2].pk, late.pk]
    # each frame says when its notification was written, as an event's time is written
    late.refresh_from_db()
    assert frames[2]["time"] == format_timestamp_body(late.created_at)
    assert frames[2]["time"].endswith("Z")
    assert [f["data"] for f in frames] == [
        {"type": "best_bid", "n": 1},
        {"type": "best_bid", "n": 2},
        {"type": "outbid", "n": 3},
    ]
    assert all(f["stream"] == "me" and f["type"] == "notification" for f in frames)


@pytest.mark.parametrize("batch", [2, 3])
def test_a_resume_of_me_replays_at_most_the_cap_then_says_where_to_go_on(
    market, monkeypatch, batch
):
    monkeypatch.setattr(consumers, "REPLAY_CAP", 3)
    monkeypatch.setattr(consumers, "BACKLOG_BATCH", batch)
    alice = UserFactory(username="alice")
    notes = [
        Notification.objects.create(market=market, recipient=alice, type="best_bid", data={"n": i})
        for i in range(6)
    ]
    token = token_for(alice)

    async def scenario() -> list[list[dict]]:
        ws = await connect(token)
        answers = []
        after = 0
        for _ in range(2):
            assert await ask(ws, {"action": "resume", "stream": "me", "after": after}) == {
                "type": "subscribed",
                "stream": "me",
            }
            # What the resume sends, then a barrier: the answer to a frame sent after it.
            await ws.send_to(text_data=json.dumps({"action": "barrier"}))
            frames = []
            while not frames or frames[-1].get("code") != "unknown_action":
                frames.append(json.loads(await ws.receive_from(timeout=5)))
            answers.append(frames[:-1])
            if answers[-1] and answers[-1][-1].get("code") == "replay_limit":
                after = answers[-1][-1]["after"]
        await ws.disconnect()
        return answers

    first, second = asyncio.run(scenario())
    ids = [n.pk for n in notes]
    assert [f["seq"] for f in first[:-1]] == ids[:3]
    assert first[-1] == {
        "type": "error",
        "code": "replay_limit",
        "message": f"One resume replays at most 3 notifications: 'me' stopped after {ids[2]}; "
        f"resume it after {ids[2]} for the rest.",
        "stream": "me",
        "after": ids[2],
    }
    # Exactly the cap left: all of it, and no error, since nothing more is there.
    assert [f.get("seq") for f in second] == ids[3:]


def test_a_personal_frame_carries_its_sentence_and_tone(market):
    # Given an outbid notification with a price in the thousands and the market's currency
    alice = UserFactory(username="alice")
    note = Notification.objects.create(
        market=market,
        recipient=alice,
        type="outbid",
        data={"offer": 3, "bid": 7, "status": "outbid", "best_value": "1700.50", "unit": "EUR"},
    )
    token = token_for(alice)

    async def scenario():
        ws = await connect(token)
        await ask(ws, {"action": "resume", "stream": "me", "after": note.pk - 1})
        frame = json.loads(await ws.receive_from(timeout=5))
        await ws.disconnect()
        return frame

    # When alice's page resumes her notifications
    frame = asyncio.run(scenario())

    # Then the frame says it in the pages' words (grouped digits, the unit), with its tone
    assert (frame["text"], frame["tone"]) == (
        "Bid #7 was outbid on offer #3: the best bid is now 1,700.50 EUR.",
        "bad",
    )
    assert (frame["text"], frame["tone"]) == note_text(note.type, note.data)
    assert frame["data"] == {"type": "outbid", **note.data}


def test_presence_counts_watchers_and_names_them_for_staff():
    # A market of its own: presence lives in Redis, shared with the live servers of other
    # tests in the run, whose pages may still be watching the pencils market.
    market = pencils_market(subject="office.supplies.presence")
    alice, staff = UserFactory(username="alice"), StaffFactory(username="boss")
    stream = f"market:{market.subject}"
    alice_token, staff_token = token_for(alice), token_for(staff)

    async def scenario():
        a, anon, boss = await connect(alice_token), await connect(), await connect(staff_token)
        for ws in (a, anon):
            await ask(ws, {"action": "subscribe", "stream": stream})
        public = await ask(anon, {"action": "presence", "stream": stream})
        private = await ask(boss, {"action": "presence", "stream": stream})
        await a.disconnect()
        after = await ask(boss, {"action": "presence", "stream": stream})
        await anon.disconnect()
        await boss.disconnect()
        return public, private, after

    public, private, after = asyncio.run(scenario())
    assert public["data"] == {"count": 2}
    assert private["data"] == {"count": 2, "watchers": ["alice", "anonymous"]}
    assert after["data"] == {"count": 1, "watchers": ["anonymous"]}


@pytest.mark.parametrize("token", ["not-a-token", "0" * 40])
def test_a_bad_token_is_told_and_closed_with_4001_not_served_as_anonymous(token):
    # A bot that mistypes its token, or uses one revoked or regenerated, must notice
    async def scenario():
        ws = await connect(token)
        frame = json.loads(await ws.receive_from(timeout=5))
        closed = await ws.receive_output(timeout=5)
        return frame, closed

    frame, closed = asyncio.run(scenario())
    assert frame == {
        "type": "error",
        "code": "bad_token",
        "message": "This token is not valid (mistyped, regenerated or revoked): get a new one "
        "with POST /api/v1/auth/token/. This connection closes (4001).",
    }
    assert closed == {"type": "websocket.close", "code": 4001}


def test_a_connection_without_a_token_is_served_as_anonymous():
    async def scenario():
        ws = await connect()
        reply = await ask(ws, {"action": "subscribe", "stream": "me"})
        await ws.disconnect()
        return reply

    assert asyncio.run(scenario())["code"] == "forbidden"


def test_a_wake_whose_client_left_meanwhile_ends_the_connection_without_an_error(
    market, monkeypatch, caplog
):
    # Given alice on "me", and a wake whose catch-up is still reading the outbox when her
    # client leaves (a consumer handles one message at a time: the disconnect waits)
    alice = UserFactory(username="alice")
    token = token_for(alice)
    reading, release, resumed = asyncio.Event(), asyncio.Event(), asyncio.Event()
    real_after = consumers._notifications_after
    held = []

    async def after(**kwargs):
        if held:
            reading.set()
            await release.wait()
        rows = await real_after(**kwargs)
        resumed.set()
        return rows

    monkeypatch.setattr(consumers, "_notifications_after", after)
    forgotten = []
    monkeypatch.setattr(
        consumers, "forget_buffer_later", lambda layer, channel: forgotten.append(channel)
    )

    async def scenario():
        ws = await connect(token)
        await ask(ws, {"action": "resume", "stream": "me", "after": 0})
        # The answer comes before the resume's own read of the outbox: held back until that
        # read is done, the notification below could be read by it instead of by the wake
        # (which then finds nothing new and never reads)
        await resumed.wait()
        held.append(True)
        note = await asyncio.to_thread(
            Notification.objects.create, market=market, recipient=alice, type="outbid", data={}
        )
        await asyncio.to_thread(user_wake, user_id=alice.pk, seq=note.pk)
        await reading.wait()
        await ws.send_input({"type": "websocket.disconnect", "code": 1001})
        while not ws.input_queue.empty():  # the consumer's receive has taken the disconnect
            await asyncio.sleep(0)
        release.set()
        return await ws.ended()

    with caplog.at_level("INFO", logger="exchange.realtime.consumers"):
        sent = asyncio.run(scenario())

    # Then the frame is not sent, the connection ends quietly, and no ERROR is logged; its
    # layer buffer goes as a disconnect's does
    assert sent == []
    assert len(forgotten) == 1 and forgotten[0].startswith("specific.")
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert "WebSocket client left during user.wake" in caplog.text
