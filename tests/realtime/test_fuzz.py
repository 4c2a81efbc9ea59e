"""Random WebSocket frames: every one gets an answer, the connection stays up, nothing changes."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import Bid, Market, Notification, Offer
from tests.factories import pencils_market
from tests.realtime.client import connect

pytestmark = pytest.mark.django_db(transaction=True)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
# Nesting past the frame limit (up to far past the parser's recursion limit), with or
# without an object around it, and numbers written with digits other than ASCII's.
deep_frames = st.builds(
    lambda depth, opener, wrap: (
        ('{"action": "resume", "stream": "me", "after": ' if wrap else "")
        + opener * depth
        + {"[": "]", '{"a":': "}"}[opener] * depth
        + ("}" if wrap else "")
    ),
    st.integers(min_value=5, max_value=3000),
    st.sampled_from(["[", '{"a":']),
    st.booleans(),
)
other_digits = st.text(
    st.characters(categories=["Nd", "No"], exclude_characters="0123456789"), min_size=1, max_size=5
)
frames = st.one_of(
    st.text(min_size=1, max_size=200),  # (the test communicator cannot send an empty frame)
    deep_frames,
    other_digits.map(
        lambda digits: json.dumps({"action": "resume", "stream": "me", "after": digits})
    ),
    other_digits.map(
        lambda digits: json.dumps({"action": "subscribe", "stream": f"offer:{digits}"})
    ),
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {
            "action": st.sampled_from(
                ["subscribe", "unsubscribe", "resume", "presence", "announce", "who", "dance"]
            )
        },
        optional={
            "stream": st.one_of(
                st.text(max_size=40),
                st.sampled_from(
                    [
                        "me",
                        "system",
                        "market:office.supplies.pencils",
                        "offer:1",
                        "offer:-1",
                        "market:",
                    ]
                ),
            ),
            "after": json_values,
            "subject": st.one_of(
                st.text(max_size=40),
                st.sampled_from(["office.supplies.pencils", "office.>", "*", "office..x", ">.a"]),
                json_values,
            ),
            "name": st.one_of(st.text(max_size=80), json_values),
        },
    ).map(json.dumps),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(frames, min_size=1, max_size=8))
def test_random_frames_get_answers_and_change_nothing(batch):
    if not Market.objects.exists():
        pencils_market()
    before = (Offer.objects.count(), Bid.objects.count(), Notification.objects.count())

    async def scenario():
        ws = await connect()
        replies = []
        for frame in batch:
            await ws.send_to(text_data=frame)
            replies.append(json.loads(await ws.receive_from(timeout=5)))
        # still usable afterwards
        await ws.send_to(text_data=json.dumps({"action": "subscribe", "stream": "system"}))
        last = json.loads(await ws.receive_from(timeout=5))
        await ws.disconnect()
        return replies, last

    replies, last = asyncio.run(scenario())
    assert all(
        isinstance(r, dict)
        and r.get("type") in {"error", "subscribed", "unsubscribed", "presence", "announced", "who"}
        for r in replies
    ), replies
    # errors carry their code and message, and where in the named subject or pattern
    assert all(
        {"type", "code", "message"}
        <= set(r)
        <= {"type", "code", "message", "stream", "subject", "position"}
        for r in replies
        if r["type"] == "error"
    )
    assert last == {"type": "subscribed", "stream": "system"}
    assert (Offer.objects.count(), Bid.objects.count(), Notification.objects.count()) == before
