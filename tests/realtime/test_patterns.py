"""``market:<pattern>`` streams (SPEC 8.2) on the real Redis channel layer: frames of every
matching market, markets created after the subscription included, once per matching
stream; bad patterns refused with their position; nothing reaches a connection that left."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from exchange.realtime.patterns import PatternStreams, pattern_of
from exchange.realtime.streams import group_send_all, pattern_message, stream_publish
from exchange.services.orders import offer_publish
from exchange.services.tokens import token_issue
from matching.subjects import compile_pattern
from tests.factories import StaffFactory, UserFactory, pencils_market
from tests.realtime.client import ask, connect
from tests.subjects import BAD_PATTERNS

pytestmark = pytest.mark.django_db(transaction=True)


def _publish(subject: str, seq: int):
    return asyncio.to_thread(
        stream_publish, stream=f"market:{subject}", type="best_offer", seq=seq, data={"n": seq}
    )


async def _frame(ws) -> dict:
    return json.loads(await ws.receive_from(timeout=5))


def test_a_pattern_stream_gets_the_frames_of_matching_markets_only():
    async def scenario():
        ws = await connect()
        subscribed = await ask(ws, {"action": "subscribe", "stream": "market:office.>"})
        await _publish("garden.tools.spades", 1)
        await _publish("office", 2)  # '>' needs at least one more token
        await _publish("office.supplies.pencils", 3)
        got = await _frame(ws)
        nothing = await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return subscribed, got, nothing

    subscribed, got, nothing = asyncio.run(scenario())
    assert subscribed == {"type": "subscribed", "stream": "market:office.>"}
    assert got == {"stream": "market:office.>", "type": "best_offer", "seq": 3, "data": {"n": 3}}
    assert nothing


def test_a_market_created_after_subscribing_reaches_the_pattern_without_reconnecting():
    seller = UserFactory()

    async def scenario():
        ws = await connect()
        await ask(ws, {"action": "subscribe", "stream": "market:office.*.pencils"})
        market = await database_sync_to_async(pencils_market)(subject="office.new.pencils")
        offer = await database_sync_to_async(offer_publish)(
            seller=seller, market=market, constraint="lot = 10 AND price >= 1.00"
        )
        got = await _frame(ws)
        await ws.disconnect()
        return offer, got

    offer, got = asyncio.run(scenario())
    assert got["stream"] == "market:office.*.pencils"
    assert got["type"] == "offer"
    assert got["data"] == {
        "offer": offer.pk,
        "market": "office.new.pencils",
        "state": "open",
        "version": 1,
        "constraint": offer.constraint_text,
    }


def test_each_matching_stream_gets_its_own_frame_until_it_is_unsubscribed():
    pencils_market()

    async def scenario():
        ws = await connect()
        for stream in ("market:office.>", "market:*.supplies.*", "market:office.supplies.pencils"):
            assert (await ask(ws, {"action": "subscribe", "stream": stream}))[
                "type"
            ] == "subscribed"
        await _publish("office.supplies.pencils", 1)
        first = sorted([(await _frame(ws))["stream"] for _ in range(3)])
        await ask(ws, {"action": "unsubscribe", "stream": "market:office.>"})
        await _publish("office.supplies.pencils", 2)
        second = sorted([(await _frame(ws))["stream"] for _ in range(2)])
        await ask(ws, {"action": "unsubscribe", "stream": "market:*.supplies.*"})
        await ask(ws, {"action": "unsubscribe", "stream": "market:office.supplies.pencils"})
        await _publish("office.supplies.pencils", 3)
        nothing = await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return first, second, nothing

    first, second, nothing = asyncio.run(scenario())
    assert first == ["market:*.supplies.*", "market:office.>", "market:office.supplies.pencils"]
    assert second == ["market:*.supplies.*", "market:office.supplies.pencils"]
    assert nothing


@pytest.mark.parametrize(
    ("stream", "position", "message"),
    [(f"market:{pattern}", position, message) for pattern, position, message in BAD_PATTERNS]
    + [("market:", 0, "a pattern cannot be empty: write tokens such as office.supplies")],
)
def test_a_bad_pattern_gets_an_error_with_its_position_and_follows_nothing(
    stream, position, message
):
    async def scenario():
        ws = await connect()
        error = await ask(ws, {"action": "subscribe", "stream": stream})
        await _publish("office.supplies.pencils", 1)
        nothing = await ws.receive_nothing(timeout=0.3)
        after = await ask(ws, {"action": "subscribe", "stream": "system"})
        await ws.disconnect()
        return error, nothing, after

    error, nothing, after = asyncio.run(scenario())
    assert error == {
        "type": "error",
        "code": "bad_pattern",
        "message": f"{stream.removeprefix('market:')!r} is not a subject pattern: {message} "
        f"(at character {position}).",
        "stream": stream,
        "position": position,
    }
    assert nothing
    assert after == {"type": "subscribed", "stream": "system"}


def test_a_plain_subject_is_still_a_market_of_its_own_that_must_exist():
    assert pattern_of("market:office.supplies.pencils") is None
    assert pattern_of("offer:12") is None
    assert pattern_of("system") is None
    assert pattern_of("market:office.*") == compile_pattern("office.*")


def test_pattern_streams_say_when_a_kind_is_first_followed_and_last_left():
    streams = PatternStreams()
    assert streams.add("market:office.>", compile_pattern("office.>")) is True
    assert streams.add("market:*.tools.*", compile_pattern("*.tools.*")) is False
    assert "market:office.>" in streams and "market:garden.>" not in streams
    assert streams.matching("market", "office.tools.saws") == [
        "market:office.>",
        "market:*.tools.*",
    ]
    assert streams.matching("market", "garden.tools.spades") == ["market:*.tools.*"]
    assert streams.matching("events", "office.tools.saws") == []
    assert streams.remove("market:garden.>") is False
    assert streams.remove("market:office.>") is False
    assert streams.remove("market:*.tools.*") is True
    assert streams.matching("market", "garden.tools.spades") == []


def test_a_frame_with_an_owner_reaches_only_that_users_and_staffs_pattern_streams():
    owner, other, staff = UserFactory(), UserFactory(), StaffFactory()
    keys = {
        who: token_issue(user=user).key
        for who, user in [("owner", owner), ("other", other), ("staff", staff)]
    }
    message = pattern_message(
        kind="market",
        subject="office.supplies.pencils",
        frame={"stream": "market:office.supplies.pencils", "type": "bid", "seq": 1, "data": {}},
        owner=owner.pk,
    )

    async def scenario():
        sockets = {who: await connect(f"/ws/?token={key}") for who, key in keys.items()}
        sockets["anonymous"] = await connect()
        for ws in sockets.values():
            await ask(ws, {"action": "subscribe", "stream": "market:office.>"})
        await asyncio.to_thread(group_send_all, [message])
        got = {}
        for who, ws in sockets.items():
            got[who] = None if await ws.receive_nothing(timeout=0.5) else await _frame(ws)
            await ws.disconnect()
        return got

    got = asyncio.run(scenario())
    frame = {"stream": "market:office.>", "type": "bid", "seq": 1, "data": {}}
    assert got == {"owner": frame, "staff": frame, "other": None, "anonymous": None}
