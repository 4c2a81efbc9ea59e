"""Per-user caps on WebSocket connections and streams (issue 37): one user keeps at most
``WS_MAX_CONNECTIONS_PER_USER`` connections open (one more gets ``too_many_connections``
and close 4013) and follows at most ``WS_MAX_STREAMS_PER_USER`` streams over all of them
(one more gets ``too_many_streams`` and the connection stays); so what one user adds to a
presence read is bounded. Counts live in Redis, so they hold across server processes; a
dead server's connections stop counting. Anonymous connections count per client address:
through the real uvicorn in tests/stack/test_ws_caps.py."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from exchange.realtime import limits, presence
from exchange.services.tokens import token_issue
from tests.factories import UserFactory
from tests.realtime.client import ask, connect

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = {"action": "subscribe", "stream": "system"}


def _subscribe(stream: str) -> dict:
    return {"action": "subscribe", "stream": stream}


@pytest.fixture
def caps(settings):
    settings.WS_MAX_CONNECTIONS_PER_USER = 2
    settings.WS_MAX_STREAMS_PER_USER = 3


def _path(user) -> str:
    return f"/ws/?token={token_issue(user=user).key}"


def test_a_users_connection_past_the_cap_is_told_and_closed_with_4013(caps):
    alice, bob = UserFactory(), UserFactory()
    alice_path, bob_path = _path(alice), _path(bob)

    async def scenario():
        first, second = await connect(alice_path), await connect(alice_path)
        third = await connect(alice_path)  # accepted to be told
        refused = json.loads(await third.receive_from(timeout=5))
        closed = await third.receive_output(timeout=5)
        await third.disconnect()
        still = await ask(second, SYSTEM)
        other = await connect(bob_path)
        others = await ask(other, SYSTEM)
        # one of hers closes: a new one has room
        await first.disconnect()
        again = await connect(alice_path)
        room = await ask(again, SYSTEM)
        for ws in (second, other, again):
            await ws.disconnect()
        return refused, closed, still, others, room

    refused, closed, still, others, room = asyncio.run(scenario())
    assert refused == {
        "type": "error",
        "code": "too_many_connections",
        "message": "A user keeps at most 2 WebSocket connections open (without a login, one "
        "client address); close one first. This one closes (4013).",
    }
    assert closed == {"type": "websocket.close", "code": 4013}
    subscribed = {"type": "subscribed", "stream": "system"}
    assert still == others == room == subscribed


def test_a_refused_connection_leaves_no_presence_and_frees_nothing(caps):
    alice = UserFactory(username="caps-alice")
    path = _path(alice)

    async def scenario():
        kept = [await connect(path), await connect(path)]
        third = await connect(path)
        await third.receive_from(timeout=5)
        await third.receive_output(timeout=5)
        await third.disconnect()  # its disconnect must not release one of the two
        facts = await asyncio.to_thread(presence.presence_facts)
        fourth = await connect(path)
        refused = json.loads(await fourth.receive_from(timeout=5))["code"]
        for ws in kept:
            await ws.disconnect()
        return facts, refused

    facts, refused = asyncio.run(scenario())
    assert [c.user for c in facts].count("caps-alice") == 2
    assert refused == "too_many_connections"


def test_streams_are_capped_over_all_of_a_users_connections(caps):
    alice = UserFactory(username="caps-streams")
    path = _path(alice)

    async def scenario():
        one, two = await connect(path), await connect(path)
        answers = [
            await ask(one, SYSTEM),
            await ask(one, _subscribe("market:a.>")),
            await ask(two, _subscribe("market:b.>")),
            await ask(two, _subscribe("market:c.>")),  # the fourth of hers
            await ask(one, SYSTEM),  # one she follows already: no new place needed
        ]
        facts = await asyncio.to_thread(presence.presence_facts)
        streams = sorted(s for c in facts if c.user == "caps-streams" for s in c.streams)
        # unsubscribing frees a place; closing a connection frees all of its own
        await ask(one, {"action": "unsubscribe", "stream": "market:a.>"})
        answers.append(await ask(two, _subscribe("market:c.>")))
        answers.append(await ask(two, _subscribe("market:d.>")))
        await one.disconnect()
        answers.append(await ask(two, _subscribe("market:d.>")))
        await two.disconnect()
        return answers, streams

    answers, streams = asyncio.run(scenario())
    too_many = {
        "type": "error",
        "code": "too_many_streams",
        "message": "A user follows at most 3 streams over all their connections (without a "
        "login, one client address); unsubscribe from one first.",
    }
    assert answers == [
        {"type": "subscribed", "stream": "system"},
        {"type": "subscribed", "stream": "market:a.>"},
        {"type": "subscribed", "stream": "market:b.>"},
        too_many,
        {"type": "subscribed", "stream": "system"},
        {"type": "subscribed", "stream": "market:c.>"},
        too_many,
        {"type": "subscribed", "stream": "market:d.>"},
    ]
    assert streams == ["market:a.>", "market:b.>", "system"]


def test_the_connections_of_a_server_that_stopped_beating_do_not_count(caps, settings):
    alice = UserFactory()
    path = _path(alice)
    client = presence.redis_client()
    key = limits._key("connections", f"user:{alice.pk}")
    dead = "dead-server"
    # Two connections of hers on a server whose last beat is older than the TTL
    client.sadd(key, f"{dead}|c1", f"{dead}|c2")
    client.zadd(presence.servers_key(), {dead: time.time() - settings.PRESENCE_TTL_SECONDS - 1})

    async def scenario():
        ws = await connect(path)
        answer = await ask(ws, SYSTEM)
        await ws.disconnect()
        return answer

    try:
        assert asyncio.run(scenario()) == {"type": "subscribed", "stream": "system"}
        assert client.smembers(key) == set()  # the dead ones were dropped, hers released
        # while that server still beats, they count
        client.sadd(key, f"{dead}|c1", f"{dead}|c2")
        client.zadd(presence.servers_key(), {dead: time.time()})

        async def refused():
            ws = await connect(path)
            code = json.loads(await ws.receive_from(timeout=5))["code"]
            await ws.receive_output(timeout=5)
            await ws.disconnect()
            return code

        assert asyncio.run(refused()) == "too_many_connections"
    finally:
        client.delete(key)
        client.zrem(presence.servers_key(), dead)
