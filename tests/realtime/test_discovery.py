"""Discovery (SPEC 8.2) over the real Redis: ``announce`` and ``who`` frames and
``GET /api/v1/presence/`` answer the same; names are public only when announced;
announcements end with the connection; what a client sends is bounded."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exchange.realtime import consumers, presence
from exchange.selectors.presence import presence_who
from tests.factories import UserFactory, pencils_market
from tests.realtime.client import ask, connect

pytestmark = pytest.mark.django_db(transaction=True)

# Subjects of their own: presence is shared with the live servers of the run's other tests.
PENCILS, PENS, STAPLERS = "disco.supplies.pencils", "disco.supplies.pens", "disco.tools.staplers"


@pytest.fixture
def markets():
    for subject in (PENCILS, PENS, STAPLERS, "elsewhere.pencils"):
        pencils_market(subject=subject)


def _api(subject: str | None):
    params = {} if subject is None else {"subject": subject}
    return database_sync_to_async(APIClient().get)("/api/v1/presence/", params)


def test_who_counts_watchers_per_matching_market_and_shows_only_announced_names(markets):
    alice = UserFactory(username="alice")
    token = Token.objects.create(user=alice).key

    async def scenario():
        a, anon, bot, asker = (
            await connect(f"/ws/?token={token}"),
            await connect(),
            await connect(),
            await connect(),
        )
        await ask(a, {"action": "subscribe", "stream": f"market:{PENCILS}"})
        await ask(anon, {"action": "subscribe", "stream": "market:disco.>"})
        announced = await ask(bot, {"action": "announce", "subject": PENS, "name": "pen-bot"})
        again = await ask(bot, {"action": "announce", "subject": PENS, "name": "pen-bot 2"})
        who = await ask(asker, {"action": "who", "subject": "disco.>"})
        api = await _api("disco.>")
        await bot.disconnect()
        after = await ask(asker, {"action": "who", "subject": "disco.*.pens"})
        for ws in (a, anon, asker):
            await ws.disconnect()
        gone = await _api("disco.>")
        return announced, again, who, api, after, gone

    announced, again, who, api, after, gone = asyncio.run(scenario())
    assert announced == {"type": "announced", "subject": PENS, "name": "pen-bot"}
    assert again == {"type": "announced", "subject": PENS, "name": "pen-bot 2"}
    expected = {
        "subject": "disco.>",
        "markets": [
            {"subject": PENCILS, "watchers": 2, "names": []},
            {"subject": PENS, "watchers": 2, "names": ["pen-bot 2"]},
            {"subject": STAPLERS, "watchers": 1, "names": []},
        ],
        "truncated": False,
    }
    assert who == {"type": "who", **expected}
    assert api.status_code == 200 and api.json() == expected
    assert after == {
        "type": "who",
        "subject": "disco.*.pens",
        "markets": [{"subject": PENS, "watchers": 1, "names": []}],
        "truncated": False,
    }
    assert gone.json()["markets"] == [
        {"subject": s, "watchers": 0, "names": []} for s in (PENCILS, PENS, STAPLERS)
    ]


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (
            {"action": "announce", "subject": "disco.", "name": "x"},
            {
                "code": "bad_subject",
                "message": "'disco.' is not a subject: empty token in the subject 'disco.': "
                "tokens are separated by a single '.', with no '.' at either end (at character 6).",
                "subject": "disco.",
                "position": 6,
            },
        ),
        (
            {"action": "announce", "subject": "disco.*", "name": "x"},
            {
                "code": "bad_subject",
                "message": "'disco.*' is not a subject: a subject cannot contain '*': "
                "wildcards belong in patterns (at character 6).",
                "subject": "disco.*",
                "position": 6,
            },
        ),
        (
            {"action": "announce", "subject": "disco.nothing", "name": "x"},
            {
                "code": "unknown_market",
                "message": "There is no market disco.nothing.",
                "subject": "disco.nothing",
            },
        ),
        (
            {"action": "announce", "name": "x"},
            {"code": "bad_subject", "message": 'Name a market "subject", such as office.supplies.'},
        ),
        *[
            (
                {"action": "announce", "subject": PENCILS, "name": name},
                {
                    "code": "bad_name",
                    "message": 'The "name" is printable text of 1 to 64 characters.',
                },
            )
            for name in ["", "   ", "x" * 65, "tab\there", 7, None]
        ],
        (
            {"action": "who", "subject": "disco.>.x"},
            {
                "code": "bad_pattern",
                "message": "'disco.>.x' is not a subject pattern: '>' (one or more tokens) may "
                "only be the last token of a pattern (at character 6).",
                "subject": "disco.>.x",
                "position": 6,
            },
        ),
        (
            {"action": "who"},
            {"code": "bad_pattern", "message": 'Name a "subject" pattern, such as office.>.'},
        ),
    ],
)
def test_bad_announcements_and_questions_get_errors_and_announce_nothing(markets, frame, expected):
    async def scenario():
        ws = await connect()
        error = await ask(ws, frame)
        who = await ask(ws, {"action": "who", "subject": "disco.>"})
        await ws.disconnect()
        return error, who

    error, who = asyncio.run(scenario())
    assert error == {"type": "error", **expected}
    assert [m["names"] for m in who["markets"]] == [[], [], []]


def test_a_connection_announces_on_a_bounded_number_of_subjects(markets, monkeypatch):
    monkeypatch.setattr(consumers, "MAX_ANNOUNCEMENTS", 2)

    async def scenario():
        ws = await connect()
        replies = [
            await ask(ws, {"action": "announce", "subject": subject, "name": "n"})
            for subject in (PENCILS, PENS, STAPLERS, PENS)
        ]
        who = await ask(ws, {"action": "who", "subject": "disco.>"})
        await ws.disconnect()
        return replies, who

    replies, who = asyncio.run(scenario())
    assert [r["type"] for r in replies] == ["announced", "announced", "error", "announced"]
    assert replies[2] == {
        "type": "error",
        "code": "too_many_announcements",
        "message": "A connection announces itself on at most 2 subjects.",
    }
    assert [m["names"] for m in who["markets"]] == [["n"], ["n"], []]


@pytest.mark.parametrize(
    ("subject", "position", "message"),
    [
        (None, 0, "a pattern cannot be empty: write tokens such as office.supplies"),
        (
            "disco.",
            6,
            "empty token in the pattern 'disco.': tokens are separated by a single "
            "'.', with no '.' at either end",
        ),
    ],
)
def test_the_presence_api_refuses_a_bad_pattern_with_its_position(
    markets, subject, position, message
):
    response = asyncio.run(_api(subject))
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "invalid_pattern",
            "message": f"subject is not a subject pattern: {message}.",
            "field": "subject",
            "position": position,
        }
    }


def test_entries_of_a_server_that_stopped_beating_are_not_read(markets, settings):
    """A hash left by a dead server is ignored once its beat is older than the TTL, even
    before Redis expires it (the reader and the TTL agree on one bound)."""
    client = presence.redis_client()
    dead = "dead-server"
    key = presence._server_key(dead)
    client.hset(key, mapping={"c1|u": "", f"c1|a|{PENS}": "ghost"})
    client.expire(key, 600)
    client.zadd(presence.servers_key(), {dead: time.time() - settings.PRESENCE_TTL_SECONDS - 1})
    try:
        assert presence_who(pattern=PENS)["markets"] == [
            {"subject": PENS, "watchers": 0, "names": []}
        ]
        client.zadd(presence.servers_key(), {dead: time.time()})
        assert presence_who(pattern=PENS)["markets"] == [
            {"subject": PENS, "watchers": 1, "names": ["ghost"]}
        ]
    finally:
        client.delete(key)
        client.zrem(presence.servers_key(), dead)


def test_a_beat_writes_back_the_entries_of_live_connections_when_redis_lost_them(markets):
    async def scenario():
        ws = await connect()
        await ask(ws, {"action": "announce", "subject": PENS, "name": "still-here"})
        await presence._redis().delete(presence._server_key(presence.SERVER_ID))
        lost = await asyncio.to_thread(presence_who, pattern=PENS)
        await presence.presence_beat()
        back = await asyncio.to_thread(presence_who, pattern=PENS)
        await ws.disconnect()
        return lost, back

    lost, back = asyncio.run(scenario())
    assert lost["markets"] == [{"subject": PENS, "watchers": 0, "names": []}]
    assert back["markets"] == [{"subject": PENS, "watchers": 1, "names": ["still-here"]}]
