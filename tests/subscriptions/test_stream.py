"""The ``sub:<id>`` WebSocket stream (SPEC 8.3) on the real Redis channel layer: the owner
gets each notification once and in order, live and after a resume (outbox, then live),
across duplicated and lost pushes; ``end`` once; nobody else may follow it."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from exchange.realtime import replay
from exchange.realtime import subscriptions as stream_module
from exchange.realtime.streams import group_send_all
from exchange.services import events as event_service
from exchange.services import subscriptions as service
from exchange.services.tokens import token_issue
from exchange.subscription_engine import engine as engine_module
from tests.factories import UserFactory
from tests.realtime.client import ask, connect
from tests.subscriptions.log import advance, append, append_at, trade

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "SELECT price WHERE type = 'trade'"


@pytest.fixture(autouse=True)
def no_advance_requests(monkeypatch):
    """The tests advance subscriptions themselves: no task request reaches a worker that a
    live stack started earlier in the run may have on this run's queue."""
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)


@pytest.fixture
def alice():
    user = UserFactory(username="alice")
    return user, token_issue(user=user).key


def made(makers) -> list[tuple[str, dict]]:
    """What the engine's ``group_send_made`` would send, each group's messages made."""
    return [(group, message) for group, make in makers.items() for message in make()]


def prices(*values: str) -> None:
    for value in values:
        append([trade(value)])


def frames_of(stream: str, pairs: list[tuple[int, int, str]]) -> list[dict]:
    return [
        {"type": "notification", "stream": stream, "n": n, "seq": seq, "data": {"price": p}}
        for n, seq, p in pairs
    ]


async def take(ws, count: int) -> list[dict]:
    return [json.loads(await ws.receive_from(timeout=10)) for _ in range(count)]


def test_the_owner_follows_live_in_order_and_gets_end_when_it_is_deleted(alice):
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        answer = await ask(ws, {"action": "subscribe", "stream": stream})
        await database_sync_to_async(prices)("1.00", "1.10")
        await database_sync_to_async(advance)(sub)
        live = await take(ws, 2)
        await database_sync_to_async(service.subscription_delete)(
            owner=user, subscription_id=sub.pk
        )
        end = await take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, live, end, quiet

    answer, live, end, quiet = asyncio.run(scenario())
    assert answer == {"type": "subscribed", "stream": stream}
    assert live == frames_of(stream, [(1, 1, "1.00"), (2, 2, "1.10")])
    assert end == [{"type": "end", "stream": stream}]
    assert quiet


def test_resume_replays_the_outbox_then_goes_on_live_each_n_once(alice, monkeypatch):
    # Given five notifications in the outbox
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"
    prices("1.00", "1.01", "1.02", "1.03", "1.04")
    advance(sub)

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        # When the client resumes after n = 2
        answer = await ask(ws, {"action": "resume", "stream": stream, "after": 2})
        replayed = await take(ws, 3)
        # a late push of a run it has served adds nothing
        late = service._messages(sub.pk, [{"n": 5, "seq": 5, "data": {"price": "1.04"}}], end=False)
        await database_sync_to_async(group_send_all)(late)
        # a lost push: the next run arrives past its position and the gap is read first
        lost = []
        monkeypatch.setattr(
            engine_module, "group_send_made", lambda makers: lost.extend(made(makers))
        )
        await database_sync_to_async(prices)("1.05")
        await database_sync_to_async(advance)(sub)
        monkeypatch.undo()
        monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
        monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)
        await database_sync_to_async(prices)("1.06")
        await database_sync_to_async(advance)(sub)
        live = await take(ws, 2)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, replayed, lost, live, quiet

    answer, replayed, lost, live, quiet = asyncio.run(scenario())
    # Then 3, 4, 5 from the outbox, then 6 (read as a gap) and 7, each once, in order
    assert answer == {"type": "subscribed", "stream": stream}
    assert replayed == frames_of(stream, [(3, 3, "1.02"), (4, 4, "1.03"), (5, 5, "1.04")])
    assert [m["first"] for _, m in lost] == [6]
    assert live == frames_of(stream, [(6, 6, "1.05"), (7, 7, "1.06")])
    assert quiet


def test_a_done_subscription_replays_then_ends(alice):
    user, key = alice
    prices("1.00", "1.20")
    sub = service.subscription_create(
        owner=user, query=f"{QUERY}, start_time = NOW - 1h, end_time = NOW"
    )
    advance(sub)
    stream = f"sub:{sub.pk}"

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        answer = await ask(ws, {"action": "resume", "stream": stream, "after": 0})
        got = await take(ws, 3)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, got, quiet

    answer, got, quiet = asyncio.run(scenario())
    assert answer == {"type": "subscribed", "stream": stream}
    assert got == [
        *frames_of(stream, [(1, 1, "1.00"), (2, 2, "1.20")]),
        {"type": "end", "stream": stream},
    ]
    assert quiet


def test_nobody_but_the_owner_may_follow_it(alice):
    user, _ = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"
    bob_key = token_issue(user=UserFactory(username="bob")).key

    async def scenario():
        bob = await connect(f"/ws/?token={bob_key}")
        anonymous = await connect()
        answers = [
            await ask(bob, {"action": "subscribe", "stream": stream}),
            await ask(bob, {"action": "resume", "stream": stream, "after": 0}),
            await ask(bob, {"action": "subscribe", "stream": "sub:999999"}),
            await ask(bob, {"action": "subscribe", "stream": "sub:x"}),
            await ask(anonymous, {"action": "subscribe", "stream": stream}),
        ]
        await database_sync_to_async(prices)("1.00")
        await database_sync_to_async(advance)(sub)
        quiet = await bob.receive_nothing(timeout=0.5) and await anonymous.receive_nothing(0.5)
        await bob.disconnect()
        await anonymous.disconnect()
        return answers, quiet

    answers, quiet = asyncio.run(scenario())
    assert [(a["type"], a["code"]) for a in answers] == [
        ("error", "unknown_stream"),
        ("error", "unknown_stream"),
        ("error", "unknown_stream"),
        ("error", "unknown_stream"),
        ("error", "forbidden"),
    ]
    assert quiet


@pytest.mark.parametrize("after", [-1, "x", True, None, 1.5, "99999999999999999999"])
def test_a_bad_after_is_an_error_frame_and_the_connection_stays_usable(alice, after):
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        bad = await ask(ws, {"action": "resume", "stream": stream, "after": after})
        good = await ask(ws, {"action": "subscribe", "stream": stream})
        await ws.disconnect()
        return bad, good

    bad, good = asyncio.run(scenario())
    assert bad == {
        "type": "error",
        "code": "bad_frame",
        "message": f'Resume {stream!r} after a notification number n: {{"after": 42}}.',
        "stream": stream,
    }
    assert good == {"type": "subscribed", "stream": stream}


def test_a_connection_follows_at_most_max_followed_subscription_streams(alice, monkeypatch):
    monkeypatch.setattr(stream_module, "MAX_FOLLOWED", 2)
    user, key = alice
    first, second, third = (service.subscription_create(owner=user, query=QUERY) for _ in "123")

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        answers = [
            await ask(ws, {"action": "subscribe", "stream": f"sub:{first.pk}"}),
            await ask(ws, {"action": "resume", "stream": f"sub:{second.pk}", "after": 0}),
            await ask(ws, {"action": "subscribe", "stream": f"sub:{third.pk}"}),
            await ask(ws, {"action": "resume", "stream": f"sub:{first.pk}", "after": 0}),
        ]
        await ws.disconnect()
        return answers

    assert asyncio.run(scenario()) == [
        {"type": "subscribed", "stream": f"sub:{first.pk}"},
        {"type": "subscribed", "stream": f"sub:{second.pk}"},
        {
            "type": "error",
            "code": "too_many_streams",
            "message": "A connection follows at most 2 subscription streams.",
        },
        {"type": "subscribed", "stream": f"sub:{first.pk}"},
    ]


def test_a_subscription_that_completes_live_sends_its_last_notifications_then_end(alice):
    user, key = alice
    sub = service.subscription_create(owner=user, query=f"{QUERY}, end_time = NOW + 1h")
    stream = f"sub:{sub.pk}"
    later = sub.now.replace(year=sub.now.year + 1)

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        await ask(ws, {"action": "subscribe", "stream": stream})
        await database_sync_to_async(prices)("1.00")
        # an event past the end completes it (and is not delivered)
        await database_sync_to_async(append_at)([trade("2.00")], later)
        await database_sync_to_async(advance)(sub)
        got = await take(ws, 2)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return got, quiet

    got, quiet = asyncio.run(scenario())
    assert got == [*frames_of(stream, [(1, 1, "1.00")]), {"type": "end", "stream": stream}]
    assert quiet
    sub.refresh_from_db()
    assert (sub.state, sub.reason) == ("done", "completed")


def batches_of(stream: str, pairs: list[tuple[int, int, str]], size: int) -> list[dict]:
    """The notifications ``pairs`` as a batched replay frames them, ``size`` a frame."""
    notes = [{"n": n, "seq": seq, "data": {"price": p}} for n, seq, p in pairs]
    runs = [notes[i : i + size] for i in range(0, len(notes), size)]
    return [
        {"type": "batch", "stream": stream, "n": run[-1]["n"], "notifications": run} for run in runs
    ]


def test_a_batched_resume_replays_in_batch_frames_then_live_one_frame_each(alice, monkeypatch):
    monkeypatch.setattr(replay, "FRAME_ITEMS", 2)
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"
    prices("1.00", "1.01", "1.02", "1.03", "1.04")
    advance(sub)

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        answer = await ask(ws, {"action": "resume", "stream": stream, "after": 1, "batch": True})
        replayed = await take(ws, 2)
        # a late push of a run it has served adds nothing
        late = service._messages(sub.pk, [{"n": 5, "seq": 5, "data": {"price": "1.04"}}], end=False)
        await database_sync_to_async(group_send_all)(late)
        await database_sync_to_async(prices)("1.05", "1.06")
        await database_sync_to_async(advance)(sub)
        live = await take(ws, 2)
        await database_sync_to_async(service.subscription_delete)(
            owner=user, subscription_id=sub.pk
        )
        end = await take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return answer, replayed, live, end, quiet

    answer, replayed, live, end, quiet = asyncio.run(scenario())
    assert answer == {"type": "subscribed", "stream": stream}
    pairs = [(2, 2, "1.01"), (3, 3, "1.02"), (4, 4, "1.03"), (5, 5, "1.04")]
    assert replayed == batches_of(stream, pairs, 2)
    assert live == frames_of(stream, [(6, 6, "1.05"), (7, 7, "1.06")])
    assert end == [{"type": "end", "stream": stream}]
    assert quiet


def test_a_lost_push_on_a_batched_stream_is_read_from_the_outbox_as_a_batch(alice, monkeypatch):
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        await ask(ws, {"action": "subscribe", "stream": stream, "batch": True})
        lost = []
        monkeypatch.setattr(
            engine_module, "group_send_made", lambda makers: lost.extend(made(makers))
        )
        await database_sync_to_async(prices)("1.00", "1.01")
        await database_sync_to_async(advance)(sub)
        monkeypatch.undo()
        monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
        monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)
        await database_sync_to_async(prices)("1.02")
        await database_sync_to_async(advance)(sub)
        got = await take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return lost, got, quiet

    lost, got, quiet = asyncio.run(scenario())
    assert [m["first"] for _, m in lost] == [1]
    # the gap and the run that revealed it, read from the outbox in one frame
    assert got == batches_of(stream, [(1, 1, "1.00"), (2, 2, "1.01"), (3, 3, "1.02")], 500)
    assert quiet


def test_a_batched_replay_stops_at_its_cap_and_says_where_to_resume(alice, monkeypatch):
    monkeypatch.setattr(stream_module, "REPLAY_READ", 2)
    monkeypatch.setattr(stream_module, "REPLAY_CAP", 3)
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"
    prices("1.00", "1.01", "1.02", "1.03")
    advance(sub)

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        await ask(ws, {"action": "resume", "stream": stream, "after": 0, "batch": True})
        first = await take(ws, 3)
        answer = await ask(ws, {"action": "resume", "stream": stream, "after": 3, "batch": True})
        rest = await take(ws, 1)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return first, answer, rest, quiet

    first, answer, rest, quiet = asyncio.run(scenario())
    assert first[:2] == batches_of(stream, [(1, 1, "1.00"), (2, 2, "1.01")], 2) + batches_of(
        stream, [(3, 3, "1.02")], 1
    )
    assert first[2] == {
        "type": "error",
        "code": "replay_limit",
        "message": f"One resume replays at most 3 notifications: {stream!r} stopped after n = 3; "
        "resume it after 3 for the rest.",
        "stream": stream,
        "after": 3,
    }
    assert answer == {"type": "subscribed", "stream": stream}
    assert rest == batches_of(stream, [(4, 4, "1.03")], 1)
    assert quiet


@pytest.mark.parametrize("flag", [1, "yes", None])
def test_a_bad_batch_flag_is_an_error_frame_and_follows_nothing(alice, flag):
    user, key = alice
    sub = service.subscription_create(owner=user, query=QUERY)
    stream = f"sub:{sub.pk}"

    async def scenario():
        ws = await connect(f"/ws/?token={key}")
        bad = await ask(ws, {"action": "resume", "stream": stream, "after": 0, "batch": flag})
        await database_sync_to_async(prices)("1.00")
        await database_sync_to_async(advance)(sub)
        quiet = await ws.receive_nothing(timeout=0.5)
        await ws.disconnect()
        return bad, quiet

    bad, quiet = asyncio.run(scenario())
    assert bad == {
        "type": "error",
        "code": "bad_frame",
        "message": f'"batch" is true (replays come in batch frames) or false. ({stream!r})',
        "stream": stream,
    }
    assert quiet
