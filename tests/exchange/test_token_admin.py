"""Deleting an API token in the staff console is a revocation (issue 15): the token goes and
every WebSocket that authenticated with it closes, as ``token_revoke`` promises."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.contrib import admin
from django.test import Client, RequestFactory
from rest_framework.authtoken.models import Token, TokenProxy

from exchange.admin.tokens import TokenAdmin
from exchange.asgi import application
from exchange.services.tokens import token_issue
from tests.factories import StaffFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

REVOKED = {
    "type": "error",
    "code": "revoked",
    "message": "Your login or API token was revoked; this connection closes.",
}


async def _connect(key: str) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(application, f"/ws/?token={key}")
    connected, _ = await ws.connect()
    assert connected
    return ws


async def _ask(ws: WebsocketCommunicator, frame: dict) -> dict:
    await ws.send_to(text_data=json.dumps(frame))
    return json.loads(await ws.receive_from(timeout=5))


def _staff() -> Client:
    client = Client()
    client.force_login(StaffFactory(is_superuser=True))
    return client


def test_the_admin_uses_the_exchanges_token_admin():
    assert type(admin.site._registry[TokenProxy]) is TokenAdmin


def test_deleting_a_token_in_the_admin_closes_its_sockets_only():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    alice_key, bob_key = token_issue(user=alice).key, token_issue(user=bob).key
    staff = _staff()

    async def scenario():
        mine = await _connect(alice_key)
        other = await _connect(bob_key)
        assert (await _ask(mine, {"action": "subscribe", "stream": "me"}))["type"] == "subscribed"
        response = await database_sync_to_async(staff.post)(
            f"/admin/authtoken/tokenproxy/{alice.pk}/delete/", {"post": "yes"}
        )
        frame = json.loads(await mine.receive_from(timeout=5))
        closed = await mine.receive_output(timeout=5)
        still = await _ask(other, {"action": "subscribe", "stream": "system"})
        await other.disconnect()
        return response.status_code, frame, closed, still

    status, frame, closed, still = asyncio.run(scenario())
    assert status == 302
    assert frame == REVOKED
    assert closed == {"type": "websocket.close", "code": 4001}
    assert still == {"type": "subscribed", "stream": "system"}
    assert list(Token.objects.values_list("key", flat=True)) == [bob_key]


def test_a_refused_delete_keeps_the_token_and_its_socket():
    alice = UserFactory(username="alice")
    key = token_issue(user=alice).key
    trader = Client()
    trader.force_login(UserFactory(username="mallory"))

    async def scenario():
        ws = await _connect(key)
        response = await database_sync_to_async(trader.post)(
            f"/admin/authtoken/tokenproxy/{alice.pk}/delete/", {"post": "yes"}
        )
        still = await _ask(ws, {"action": "subscribe", "stream": "me"})
        await ws.disconnect()
        return response.status_code, still

    status, still = asyncio.run(scenario())
    assert status == 302  # to the admin's login page
    assert still == {"type": "subscribed", "stream": "me"}
    assert list(Token.objects.values_list("key", flat=True)) == [key]


def test_deleting_several_tokens_revokes_each():
    alice, bob, carol = (UserFactory(username=n) for n in ("alice", "bob", "carol"))
    keys = {u.username: token_issue(user=u).key for u in (alice, bob, carol)}
    model_admin = admin.site._registry[TokenProxy]

    async def scenario():
        sockets = {name: await _connect(key) for name, key in keys.items()}
        await database_sync_to_async(model_admin.delete_queryset)(
            RequestFactory().post("/"), TokenProxy.objects.filter(user__in=[alice, bob])
        )
        frames = {
            name: json.loads(await sockets[name].receive_from(timeout=5))
            for name in ("alice", "bob")
        }
        still = await _ask(sockets["carol"], {"action": "subscribe", "stream": "system"})
        await sockets["carol"].disconnect()
        return frames, still

    frames, still = asyncio.run(scenario())
    assert frames == {"alice": REVOKED, "bob": REVOKED}
    assert still == {"type": "subscribed", "stream": "system"}
    assert list(Token.objects.values_list("key", flat=True)) == [keys["carol"]]
