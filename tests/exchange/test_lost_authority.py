"""Every loss of a login's authority closes its WebSockets after commit, whichever path
causes it (issue 16): logging out (UI and admin) closes that session's sockets; a changed
password (admin form or ``set_password``) closes every session socket of the user but not
its token's; deactivating or deleting the user closes all of them. Other users' sockets,
and saves that change nothing of the sort, leave sockets open."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client

from exchange.realtime.streams import stream_publish
from exchange.services.tokens import token_issue
from tests.factories import StaffFactory, UserFactory
from tests.realtime.client import ask, connect

pytestmark = pytest.mark.django_db(transaction=True)

REVOKED = {
    "type": "error",
    "code": "revoked",
    "message": "Your login or API token was revoked; this connection closes.",
}
PASSWORD = "pw-for-tests-1"
CLOSED = {"type": "websocket.close", "code": 4001}
PROBE = {"stream": "system", "type": "probe", "seq": None, "data": None}


def _logged_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def _session_path(browser: Client) -> tuple[str, list]:
    cookie = f"{settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME].value}"
    return "/ws/", [(b"cookie", cookie.encode())]


def _outcomes(sockets: dict[str, tuple[str, list]], action: Callable[[], object]) -> dict:
    """Open each socket (path, headers) on the ``me`` and ``system`` streams, run ``action``
    in a thread, then publish a probe on ``system``: the channel layer delivers in order, so
    a socket whose next frame is the probe was not revoked, and one that was revoked says
    so (and closes) before the probe."""

    async def scenario():
        opened = {}
        for name, (path, headers) in sockets.items():
            ws = await connect(path, headers=headers)
            for stream in ("me", "system"):
                reply = await ask(ws, {"action": "subscribe", "stream": stream})
                assert reply == {"type": "subscribed", "stream": stream}
            opened[name] = ws
        await database_sync_to_async(action)()
        await database_sync_to_async(stream_publish)(
            stream="system", type="probe", seq=None, data=None
        )
        outcomes = {}
        for name, ws in opened.items():
            first = json.loads(await ws.receive_from(timeout=5))
            if first == PROBE:
                outcomes[name] = "open"
                await ws.disconnect()
            else:
                outcomes[name] = (first, await ws.receive_output(timeout=5))
        return outcomes

    return asyncio.run(scenario())


REVOKED_AND_CLOSED = (REVOKED, CLOSED)


@pytest.fixture
def alice_and_bob():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    alice_web, alice_phone, bob_web = _logged_in(alice), _logged_in(alice), _logged_in(bob)
    sockets = {
        "alice_web": _session_path(alice_web),
        "alice_phone": _session_path(alice_phone),
        "alice_token": (f"/ws/?token={token_issue(user=alice).key}", []),
        "bob_web": _session_path(bob_web),
    }
    return alice, sockets, alice_web


def test_logging_out_of_the_admin_closes_that_sessions_sockets_only():
    staff = StaffFactory()
    admin_browser, other_browser = _logged_in(staff), _logged_in(staff)
    responses = []
    outcomes = _outcomes(
        {"admin": _session_path(admin_browser), "other": _session_path(other_browser)},
        lambda: responses.append(admin_browser.post("/admin/logout/")),
    )
    assert responses[0].status_code == 200
    assert outcomes == {"admin": REVOKED_AND_CLOSED, "other": "open"}


def test_logging_out_of_the_ui_closes_that_sessions_sockets_only(alice_and_bob):
    _, sockets, alice_web = alice_and_bob
    responses = []
    outcomes = _outcomes(sockets, lambda: responses.append(alice_web.post("/logout/")))
    assert responses[0].status_code == 302
    assert outcomes == {
        "alice_web": REVOKED_AND_CLOSED,
        "alice_phone": "open",
        "alice_token": "open",
        "bob_web": "open",
    }


def test_a_password_changed_in_the_admin_closes_the_users_session_sockets(alice_and_bob):
    alice, sockets, _ = alice_and_bob
    staff = _logged_in(StaffFactory(is_superuser=True))
    new = "a-new-pass-2026"
    responses = []
    outcomes = _outcomes(
        sockets,
        lambda: responses.append(
            staff.post(
                f"/admin/auth/user/{alice.pk}/password/",
                {"password1": new, "password2": new, "usable_password": "true"},
            )
        ),
    )
    assert responses[0].status_code == 302
    assert get_user_model().objects.get(pk=alice.pk).check_password(new)
    assert outcomes == {
        "alice_web": REVOKED_AND_CLOSED,
        "alice_phone": REVOKED_AND_CLOSED,
        "alice_token": "open",  # the API token is not the password: it still holds
        "bob_web": "open",
    }


def test_a_password_set_anywhere_closes_the_users_session_sockets(alice_and_bob):
    alice, sockets, _ = alice_and_bob

    def change() -> None:
        user = get_user_model().objects.get(pk=alice.pk)
        user.set_password("set-in-a-shell-2026")
        user.save(update_fields=["password"])

    assert _outcomes(sockets, change) == {
        "alice_web": REVOKED_AND_CLOSED,
        "alice_phone": REVOKED_AND_CLOSED,
        "alice_token": "open",
        "bob_web": "open",
    }


def test_deactivating_a_user_in_the_admin_closes_all_their_sockets(alice_and_bob):
    alice, sockets, _ = alice_and_bob
    staff = _logged_in(StaffFactory(is_superuser=True))
    form = {
        "username": "alice",
        "first_name": "",
        "last_name": "",
        "email": "",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        # is_active left out: the checkbox is cleared
    }
    responses = []
    outcomes = _outcomes(
        sockets,
        lambda: responses.append(staff.post(f"/admin/auth/user/{alice.pk}/change/", form)),
    )
    assert responses[0].status_code == 302
    assert get_user_model().objects.get(pk=alice.pk).is_active is False
    assert outcomes == {
        "alice_web": REVOKED_AND_CLOSED,
        "alice_phone": REVOKED_AND_CLOSED,
        "alice_token": REVOKED_AND_CLOSED,
        "bob_web": "open",
    }


def test_deleting_a_user_in_the_admin_closes_all_their_sockets(alice_and_bob):
    alice, sockets, _ = alice_and_bob
    staff = _logged_in(StaffFactory(is_superuser=True))
    responses = []
    outcomes = _outcomes(
        sockets,
        lambda: responses.append(
            staff.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})
        ),
    )
    assert responses[0].status_code == 302
    assert not get_user_model().objects.filter(pk=alice.pk).exists()
    assert outcomes == {
        "alice_web": REVOKED_AND_CLOSED,
        "alice_phone": REVOKED_AND_CLOSED,
        "alice_token": REVOKED_AND_CLOSED,
        "bob_web": "open",
    }


def test_saves_that_take_no_authority_away_close_nothing(alice_and_bob):
    alice, sockets, _ = alice_and_bob

    def harmless() -> None:
        user = get_user_model().objects.get(pk=alice.pk)
        user.first_name = "Alice"
        user.is_active = True
        user.save()
        assert Client().login(username="alice", password=PASSWORD)  # saves last_login

    assert _outcomes(sockets, harmless) == dict.fromkeys(sockets, "open")


def test_a_deactivation_rolled_back_closes_nothing(alice_and_bob):
    alice, sockets, _ = alice_and_bob

    def rolled_back() -> None:
        with pytest.raises(RuntimeError), transaction.atomic():
            user = get_user_model().objects.get(pk=alice.pk)
            user.is_active = False
            user.set_password("never-committed-2026")
            user.save()
            raise RuntimeError("rolled back")

    assert _outcomes(sockets, rolled_back) == dict.fromkeys(sockets, "open")
    stored = get_user_model().objects.get(pk=alice.pk)
    assert stored.is_active and stored.check_password(PASSWORD)
