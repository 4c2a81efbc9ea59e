"""Revocation takes effect at once on the real stack (uvicorn, Redis): revoking or replacing
an API token, logging out, or deactivating the user in the admin closes that principal's open
WebSockets, and only theirs."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from tests.factories import StaffFactory, UserFactory

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

PASSWORD = "pw-for-tests-1"
REVOKED = {
    "type": "error",
    "code": "revoked",
    "message": "Your login or API token was revoked; this connection closes.",
}


def browser_login(base: str, username: str) -> httpx.Client:
    """An httpx client logged in through the UI's login form (session and CSRF cookies)."""
    browser = httpx.Client(base_url=base, timeout=30)
    browser.get("/login/")
    response = browser.post(
        "/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        headers={"Referer": base + "/login/"},
    )
    assert response.status_code == 302, response.text
    return browser


def ui_post(browser: httpx.Client, path: str) -> httpx.Response:
    base = str(browser.base_url).rstrip("/")
    return browser.post(
        path, headers={"X-CSRFToken": browser.cookies["csrftoken"], "Referer": base + "/account/"}
    )


async def subscribed_me(url: str, **kwargs):
    ws = await websockets.connect(url, **kwargs)
    await ws.send(json.dumps({"action": "subscribe", "stream": "me"}))
    assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "subscribed"
    return ws


async def closed_with(ws) -> tuple[dict, int]:
    """The last frame before the server closed the socket, and the close code."""
    frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(ws.recv(), 30)
    return frame, ws.close_code


@pytest.mark.parametrize("path", ["/account/token/revoke/", "/account/token/"])
def test_revoking_or_replacing_a_token_closes_its_sockets_at_once(live_stack, path):
    UserFactory(username="alice")
    UserFactory(username="bob")
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    keys = {
        name: api.post("/auth/token/", json={"username": name, "password": PASSWORD}).json()[
            "token"
        ]
        for name in ("alice", "bob")
    }
    browser = browser_login(live_stack.url, "alice")

    async def scenario():
        alice_ws = await subscribed_me(f"{live_stack.ws_url}?token={keys['alice']}")
        bob_ws = await subscribed_me(f"{live_stack.ws_url}?token={keys['bob']}")
        response = await asyncio.to_thread(ui_post, browser, path)
        assert response.status_code in (200, 302), response.text
        closed = await closed_with(alice_ws)
        await bob_ws.send(json.dumps({"action": "subscribe", "stream": "system"}))
        bob_still = json.loads(await asyncio.wait_for(bob_ws.recv(), 30))
        await bob_ws.close()
        return closed, bob_still

    (frame, code), bob_still = asyncio.run(scenario())
    assert (frame, code) == (REVOKED, 4001)
    assert bob_still == {"type": "subscribed", "stream": "system"}
    # The old key is refused over HTTP as well.
    old = api.get("/bids/", headers={"Authorization": f"Token {keys['alice']}"})
    assert old.status_code == 401


def test_logging_out_closes_the_sessions_sockets_at_once(live_stack):
    UserFactory(username="carol")
    browser = browser_login(live_stack.url, "carol")
    other = browser_login(live_stack.url, "carol")  # the same user's second session stays

    def cookie(client: httpx.Client) -> dict[str, str]:
        return {"Cookie": f"sessionid={client.cookies['sessionid']}"}

    async def scenario():
        ws = await subscribed_me(live_stack.ws_url, additional_headers=cookie(browser))
        kept = await subscribed_me(live_stack.ws_url, additional_headers=cookie(other))
        response = await asyncio.to_thread(ui_post, browser, "/logout/")
        assert response.status_code == 302, response.text
        closed = await closed_with(ws)
        await kept.send(json.dumps({"action": "subscribe", "stream": "system"}))
        still = json.loads(await asyncio.wait_for(kept.recv(), 30))
        await kept.close()
        return closed, still

    (frame, code), still = asyncio.run(scenario())
    assert (frame, code) == (REVOKED, 4001)
    assert still == {"type": "subscribed", "stream": "system"}


def test_deactivating_a_user_in_the_admin_closes_all_their_sockets_at_once(live_stack):
    alice = UserFactory(username="dora")
    UserFactory(username="ed")
    StaffFactory(username="stella", is_superuser=True)
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    token = api.post("/auth/token/", json={"username": "dora", "password": PASSWORD}).json()
    dora, ed, staff = (browser_login(live_stack.url, name) for name in ("dora", "ed", "stella"))

    def cookie(client: httpx.Client) -> dict[str, str]:
        return {"Cookie": f"sessionid={client.cookies['sessionid']}"}

    def deactivate() -> httpx.Response:
        return staff.post(
            f"/admin/auth/user/{alice.pk}/change/",
            data={
                "username": "dora",
                "date_joined_0": "2026-01-01",
                "date_joined_1": "00:00:00",
                "csrfmiddlewaretoken": staff.cookies["csrftoken"],
            },  # is_active left out: the box is cleared
            headers={"Referer": live_stack.url + "/admin/"},
        )

    async def scenario():
        by_session = await subscribed_me(live_stack.ws_url, additional_headers=cookie(dora))
        by_token = await subscribed_me(f"{live_stack.ws_url}?token={token['token']}")
        other = await subscribed_me(live_stack.ws_url, additional_headers=cookie(ed))
        response = await asyncio.to_thread(deactivate)
        assert response.status_code == 302, response.text
        closed = [await closed_with(by_session), await closed_with(by_token)]
        await other.send(json.dumps({"action": "subscribe", "stream": "system"}))
        still = json.loads(await asyncio.wait_for(other.recv(), 30))
        await other.close()
        return closed, still

    closed, still = asyncio.run(scenario())
    assert closed == [(REVOKED, 4001), (REVOKED, 4001)]
    assert still == {"type": "subscribed", "stream": "system"}
    # Neither way in works any more.
    assert (
        api.get("/bids/", headers={"Authorization": f"Token {token['token']}"}).status_code == 401
    )
    assert dora.get("/account/").status_code == 302
