"""docs/api.md's examples run as written against the live stack (issue 39, item 5): every
``sh`` block of sections 1, 3 and 9 goes through bash with only the address changed to the
stack's and ``$TOKEN`` set, and its answer must have the shape the guide shows next to it
(the ``# {...}`` comment in the block, else the ``json`` block that follows); the WebSocket
frame section 9 tells a bot to send gets the answer it shows; section 9's Python check of a
webhook's signature is executed and must accept a signed body and refuse others.

Section 3 has no runnable block (its frames are exercised by the WebSocket tests); the
guide's blocks that are answers only (errors, webhook bodies) are not requests to run.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from typing import Any

import httpx
import pytest
import websockets

from exchange.services.webhooks import webhook_signature
from tests.factories import UserFactory, pencils_market
from tests.livestack import ROOT, api_tokens

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

GUIDE = ROOT / "docs" / "api.md"
DOC_ADDRESS = "http://127.0.0.1:8000"
SECTIONS = ("1", "3", "9")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
# Fields whose example values are the server's to choose (ids, times, secrets): the guide's
# value shows the type. Every other field must be as the guide writes it.
CHOSEN = {"id", "token", "secret", "created_at", "now"}


def _sections() -> dict[str, str]:
    text = GUIDE.read_text()
    parts = re.split(r"^## (\d+)\. ", text, flags=re.M)
    return {number: body for number, body in zip(parts[1::2], parts[2::2], strict=True)}


def _blocks(section: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(_sections()[section])]


def _commands(section: str) -> list[tuple[str, dict[str, Any]]]:
    """Each ``sh`` block of ``section`` with the answer the guide shows for it."""
    blocks = _blocks(section)
    found = []
    for i, (language, body) in enumerate(blocks):
        if language != "sh":
            continue
        comment = [line for line in body.splitlines() if line.startswith("# {")]
        if comment:
            shown = comment[0][2:]
            expected = json.loads(shown[: shown.rindex("}") + 1])
        else:
            language_next, following = blocks[i + 1]
            assert language_next == "json", f"no answer shown after {body!r}"
            expected = json.loads(following)
        found.append((body, expected))
    return found


def _same_shape(got: dict[str, Any], shown: dict[str, Any]) -> None:
    assert set(got) == set(shown), (got, shown)
    for key, value in shown.items():
        if key in CHOSEN:
            assert type(got[key]) is type(value), (key, got[key], value)
        elif key == "stream":
            assert got[key] == f"sub:{got['id']}"
        else:
            assert got[key] == value, (key, got[key], value)


def _run(body: str, url: str, token: str) -> dict[str, Any]:
    script = body.replace(DOC_ADDRESS, url)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "TOKEN": token},
        check=True,
    )
    return json.loads(done.stdout)


def test_the_guides_examples_run_as_written(live_stack):
    # The guide's user (section 1 logs in as buyer1 with the password "...") and market
    pencils_market()
    buyer = UserFactory(username="buyer1")
    buyer.set_password("...")
    buyer.save()
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    UserFactory(username="other")
    token = api_tokens(api, ["other"])["other"]

    ran = {}
    for section in SECTIONS:
        for body, shown in _commands(section):
            got = _run(body, live_stack.url, token)
            _same_shape(got, shown)
            address = re.search(r"https?://\S+", body.replace(DOC_ADDRESS, live_stack.url))
            assert address is not None
            ran[address.group(0)] = got
    # Section 1's token works; section 9 registered a subscription, checked one (a warning)
    # and made a secret
    assert sorted(ran) == [
        f"{live_stack.url}/api/v1/auth/token/",
        f"{live_stack.url}/api/v1/subscriptions/",
        f"{live_stack.url}/api/v1/subscriptions/check/",
        f"{live_stack.url}/api/v1/webhook-secret/",
    ]
    login = ran[f"{live_stack.url}/api/v1/auth/token/"]["token"]
    assert api.get("/bids/", headers={"Authorization": f"Token {login}"}).status_code == 200
    sub = ran[f"{live_stack.url}/api/v1/subscriptions/"]
    detail = api.get(f"/subscriptions/{sub['id']}/", headers={"Authorization": f"Token {token}"})
    assert detail.status_code == 200
    assert isinstance(detail.json()["behind_events"], int)

    # Section 9: the resume frame as the guide writes it (its subscription's id for 12)
    # is confirmed as it shows
    frame = re.search(
        r'`(\{"action": "resume", "stream": "sub:12", "after": 0\})`', _sections()["9"]
    )
    assert frame is not None
    confirmed = next(
        json.loads(line)
        for language, body in _blocks("9")
        if language == "json" and '"subscribed"' in body
        for line in body.splitlines()[:1]
    )
    ws_url = live_stack.url.replace("http://", "ws://") + f"/ws/?token={token}"

    async def follow() -> dict:
        async with websockets.connect(ws_url) as ws:
            await ws.send(frame.group(1).replace("sub:12", f"sub:{sub['id']}"))
            return json.loads(await asyncio.wait_for(ws.recv(), 30))

    assert asyncio.run(follow()) == {**confirmed, "stream": f"sub:{sub['id']}"}


def test_the_guides_signature_check_accepts_a_signed_body_and_refuses_others():
    (code,) = [body for language, body in _blocks("9") if language == "python"]
    scope: dict[str, Any] = {}
    exec(compile(code, str(GUIDE), "exec"), scope)  # the guide's own example
    verified = scope["verified"]
    secret = "whsec_example"
    body = b'{"data":{"price":"1.10"},"n":4,"stream":"sub:12","subscription":12}'
    now = str(int(time.time()))

    def headers(timestamp: str, signed: bytes) -> dict[str, str]:
        # signed as the exchange signs its deliveries
        return {
            "X-Intersect-Timestamp": timestamp,
            "X-Intersect-Signature": webhook_signature(
                secret=secret, timestamp=int(timestamp), body=signed
            ),
        }

    assert verified(secret, headers(now, body), body) is True
    assert verified(secret, headers(now, body), body.replace(b"1.10", b"9.10")) is False
    assert verified("whsec_other", headers(now, body), body) is False
    old = str(int(time.time()) - 3600)
    assert verified(secret, headers(old, body), body) is False
