"""Subscription webhooks (issue 39): each notification POSTed to a real HTTP receiver on
127.0.0.1 (a threaded ``http.server`` here), signed as docs/api.md says, retried after a
failure with backoff, idempotent by ``(subscription, n)``, its state over REST; the URL and
secret rules."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from exchange.models import Subscription, SubscriptionWebhook, WebhookSecret
from exchange.services.webhooks import (
    backoff,
    webhook_deliver,
    webhooks_claim,
    webhooks_deliver_round,
)
from tests.api.conftest import client_for
from tests.factories import UserFactory
from tests.subscriptions.log import advance, append, trade

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscriptions/"
TRADES = "SELECT price WHERE type = 'trade'"


class Receiver:
    """A webhook receiver as docs/api.md tells a user to write one: it checks the
    signature and the timestamp, and keeps each ``X-Intersect-Delivery`` once. ``fail``
    answers the next so many requests with a 503 instead."""

    def __init__(self, secret: str = "", *, delay: float = 0.0) -> None:
        self.secret = secret
        self.delay = delay  # seconds each answer waits (a slow receiver)
        self.answered = threading.Event()
        self.fail = 0
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.kept: dict[str, dict] = {}
        self.bad_signatures = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers.items()), body))
                if receiver.delay:
                    time.sleep(receiver.delay)
                if receiver.fail:
                    receiver.fail -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                timestamp = self.headers["X-Intersect-Timestamp"]
                expected = (
                    "sha256="
                    + hmac.new(
                        receiver.secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256
                    ).hexdigest()
                )
                if not hmac.compare_digest(expected, self.headers["X-Intersect-Signature"]):
                    receiver.bad_signatures += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                receiver.kept.setdefault(self.headers["X-Intersect-Delivery"], json.loads(body))
                self.send_response(204)
                self.end_headers()
                receiver.answered.set()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


class Trickler:
    """A receiver that never finishes its status line: after reading the request it sends
    ``HTTP/1.1 200 OK`` over and over, a byte every ``every`` seconds (under the exchange's
    read timeout, so no read ever times out), until the exchange hangs up. ``trickle =
    False`` makes it answer 204 at once. It gives up after ``GUARD`` seconds so that a
    delivery without a deadline fails the test (the error would then not be the deadline's)
    instead of hanging it."""

    GUARD = 60.0

    def __init__(self, every: float) -> None:
        self.every = every
        self.trickle = True
        self.requests = 0
        self.hung_up = threading.Event()  # the exchange closed a trickled connection
        self.listener = socket.create_server(("127.0.0.1", 0))
        # Closing a listener from another thread does not end an ``accept`` waiting on it:
        # the loop looks at ``closed`` every 0.1 s instead.
        self.listener.settimeout(0.1)
        self.closed = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"

    def _serve(self) -> None:
        while not self.closed:
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            connection.settimeout(None)
            with connection:
                self._answer(connection)

    def _answer(self, connection: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            request += connection.recv(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        length = int(next(h for h in head.split(b"\r\n") if h.startswith(b"Content-Length:"))[15:])
        while len(body) < length:
            body += connection.recv(65536)
        self.requests += 1
        if not self.trickle:
            connection.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            return
        line = b"HTTP/1.1 200 OK"
        sent = 0
        started = time.monotonic()
        while time.monotonic() - started < self.GUARD:
            try:
                connection.sendall(line[sent % len(line) :][:1])
            except OSError:
                self.hung_up.set()
                return
            sent += 1
            time.sleep(self.every)

    def close(self) -> None:
        self.closed = True
        self.thread.join(timeout=self.GUARD + 5)
        self.listener.close()


def _secret(user) -> str:
    response = client_for(user).post("/api/v1/webhook-secret/")
    assert response.status_code == 201
    return response.json()["secret"]


def test_each_notification_is_posted_signed_to_a_local_receiver(receiver):
    # Given alice with a secret and a subscription with a webhook to the receiver
    alice = UserFactory(username="alice")
    receiver.secret = _secret(alice)
    response = client_for(alice).post(
        URL, {"query": TRADES, "name": "trades", "webhook_url": receiver.url}, format="json"
    )
    assert response.status_code == 201
    sub = Subscription.objects.get()
    assert response.json()["webhook"] == {
        "url": receiver.url,
        "delivered_n": 0,
        "attempts": 0,
        "last_error": "",
        "last_attempt_at": None,
        "next_retry_at": None,
        "stopped": False,
    }

    # When two trades are notified and a round delivers
    append([trade("1.10", trade_id=1), trade("1.20", trade_id=2)])
    advance(sub)
    assert webhooks_deliver_round() == [sub.webhook.pk]

    # Then the receiver got both, in n order, signed with her secret, each once
    assert receiver.bad_signatures == 0
    assert [h["X-Intersect-Delivery"] for h, _ in receiver.requests] == [
        f"{sub.pk}:1",
        f"{sub.pk}:2",
    ]
    first = receiver.kept[f"{sub.pk}:1"]
    assert first == {
        "subscription": sub.pk,
        "name": "trades",
        "stream": f"sub:{sub.pk}",
        "n": 1,
        "seq": 1,
        "data": {"price": "1.10"},
        "created_at": first["created_at"],
    }
    headers = receiver.requests[0][0]
    assert headers["Content-Type"] == "application/json"
    assert abs(int(headers["X-Intersect-Timestamp"]) - timezone.now().timestamp()) < 300
    # and the state over REST says n = 2 is delivered; nothing more is due
    state = client_for(alice).get(f"{URL}{sub.pk}/").json()["webhook"]
    assert (state["delivered_n"], state["attempts"], state["last_error"]) == (2, 0, "")
    assert state["next_retry_at"] is None and state["last_attempt_at"] is not None
    assert webhooks_claim() == []


def test_a_failing_receiver_is_retried_with_backoff_then_succeeds_with_no_duplicate(receiver):
    alice = UserFactory(username="alice")
    receiver.secret = _secret(alice)
    client_for(alice).post(URL, {"query": TRADES, "webhook_url": receiver.url}, format="json")
    sub = Subscription.objects.get()
    append([trade("1.10", trade_id=1), trade("1.20", trade_id=2)])
    advance(sub)

    # The receiver fails twice: n = 1 waits 5 s, then 10 s; n = 2 is not sent past it
    receiver.fail = 2
    before = timezone.now()
    webhooks_deliver_round()
    hook = SubscriptionWebhook.objects.get()
    assert (hook.delivered_n, hook.attempts, hook.last_error) == (0, 1, "#1: HTTP 503")
    assert before + dt.timedelta(seconds=5) <= hook.next_retry_at
    assert hook.next_retry_at <= timezone.now() + dt.timedelta(seconds=5)
    assert webhooks_claim() == []  # not due before its retry time
    state = client_for(alice).get(f"{URL}{sub.pk}/").json()["webhook"]
    assert (state["delivered_n"], state["attempts"], state["last_error"]) == (0, 1, "#1: HTTP 503")
    assert state["next_retry_at"] is not None

    later = hook.next_retry_at + dt.timedelta(milliseconds=1)
    assert webhooks_claim(now=later) == [hook.pk]
    webhook_deliver(webhook_id=hook.pk)
    hook.refresh_from_db()
    assert (hook.delivered_n, hook.attempts) == (0, 2)
    assert hook.next_retry_at - hook.last_attempt_at == backoff(2) == dt.timedelta(seconds=10)

    # A receiver that took n = 1 but whose answer was lost gets it again: it drops the repeat
    SubscriptionWebhook.objects.filter(pk=hook.pk).update(next_retry_at=None)
    webhooks_deliver_round()
    SubscriptionWebhook.objects.filter(pk=hook.pk).update(delivered_n=0)
    webhooks_deliver_round()

    hook.refresh_from_db()
    assert (hook.delivered_n, hook.attempts, hook.last_error, hook.next_retry_at) == (
        2,
        0,
        "",
        None,
    )
    sent = [h["X-Intersect-Delivery"] for h, _ in receiver.requests]
    assert sent == [f"{sub.pk}:1"] * 3 + [f"{sub.pk}:2"] + [f"{sub.pk}:1", f"{sub.pk}:2"]
    assert sorted(receiver.kept) == [f"{sub.pk}:1", f"{sub.pk}:2"]  # each kept once
    assert [receiver.kept[k]["data"] for k in sorted(receiver.kept)] == [
        {"price": "1.10"},
        {"price": "1.20"},
    ]


@override_settings(WEBHOOK_MAX_ATTEMPTS=2)
def test_after_the_limit_it_stops_until_the_url_is_set_again(receiver):
    alice = UserFactory(username="alice")
    receiver.secret = _secret(alice)
    client_for(alice).post(URL, {"query": TRADES, "webhook_url": receiver.url}, format="json")
    sub = Subscription.objects.get()
    append([trade("1.10")])
    advance(sub)
    receiver.fail = 5
    webhooks_deliver_round()
    hook = SubscriptionWebhook.objects.get()
    webhooks_claim(now=hook.next_retry_at + dt.timedelta(seconds=1))
    webhook_deliver(webhook_id=hook.pk)
    hook.refresh_from_db()
    assert (hook.attempts, hook.stopped) == (2, True)
    assert webhooks_claim(now=timezone.now() + dt.timedelta(days=1)) == []

    receiver.fail = 0
    response = client_for(alice).patch(
        f"{URL}{sub.pk}/", {"webhook_url": receiver.url}, format="json"
    )
    assert response.json()["webhook"]["stopped"] is False
    webhooks_deliver_round()
    hook.refresh_from_db()
    assert (hook.delivered_n, hook.attempts, hook.stopped) == (1, 0, False)
    assert list(receiver.kept) == [f"{sub.pk}:1"]


def test_a_rotated_secret_signs_from_then_on(receiver):
    alice = UserFactory(username="alice")
    old = _secret(alice)
    client_for(alice).post(URL, {"query": TRADES, "webhook_url": receiver.url}, format="json")
    sub = Subscription.objects.get()
    new = _secret(alice)
    assert new != old
    assert client_for(alice).get("/api/v1/webhook-secret/").json() == {
        "exists": True,
        "created_at": client_for(alice).get("/api/v1/webhook-secret/").json()["created_at"],
    }
    receiver.secret = new
    append([trade("1.10")])
    advance(sub)
    webhooks_deliver_round()
    assert (receiver.bad_signatures, list(receiver.kept)) == (0, [f"{sub.pk}:1"])


def test_a_webhook_added_later_sends_only_what_comes_after(receiver):
    alice = UserFactory(username="alice")
    receiver.secret = _secret(alice)
    client_for(alice).post(URL, {"query": TRADES}, format="json")
    sub = Subscription.objects.get()
    append([trade("1.10", trade_id=1)])
    advance(sub)
    response = client_for(alice).patch(
        f"{URL}{sub.pk}/", {"webhook_url": receiver.url}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["webhook"]["delivered_n"] == 1
    append([trade("1.20", trade_id=2)])
    advance(sub)
    webhooks_deliver_round()
    assert list(receiver.kept) == [f"{sub.pk}:2"]

    # null removes it
    response = client_for(alice).patch(f"{URL}{sub.pk}/", {"webhook_url": None}, format="json")
    assert (response.status_code, response.json()["webhook"]) == (200, None)
    assert not SubscriptionWebhook.objects.exists()


@pytest.mark.parametrize(
    ("url", "loopback", "code"),
    [
        ("ftp://127.0.0.1/hook", True, "invalid_webhook_url"),
        ("http://127.0.0.1:9/hook", False, "invalid_webhook_url"),
        ("http://localhost:9/hook", False, "invalid_webhook_url"),
        ("http://10.1.2.3/hook", True, "invalid_webhook_url"),
        ("http://192.168.0.5/hook", True, "invalid_webhook_url"),
        ("http://169.254.169.254/latest", True, "invalid_webhook_url"),
        ("http://[::1]:9/hook", False, "invalid_webhook_url"),
        ("http://user:pw@127.0.0.1/hook", True, "invalid_webhook_url"),
        ("not a url", True, "invalid_webhook_url"),
    ],
)
def test_a_refused_url_is_a_400_and_nothing_is_registered(url, loopback, code):
    alice = UserFactory(username="alice")
    _secret(alice)
    with override_settings(WEBHOOK_ALLOW_LOOPBACK=loopback):
        response = client_for(alice).post(URL, {"query": TRADES, "webhook_url": url}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert not Subscription.objects.exists()
    assert not SubscriptionWebhook.objects.exists()


def test_no_secret_no_webhook():
    alice = UserFactory(username="alice")
    response = client_for(alice).post(
        URL, {"query": TRADES, "webhook_url": "http://127.0.0.1:9/hook"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "webhook_secret_missing"
    assert not Subscription.objects.exists()
    assert client_for(alice).get("/api/v1/webhook-secret/").json() == {
        "exists": False,
        "created_at": None,
    }
    assert not WebhookSecret.objects.exists()


def test_another_users_subscription_is_a_404_and_unchanged(receiver):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    _secret(bob)
    client_for(alice).post(URL, {"query": TRADES}, format="json")
    sub = Subscription.objects.get()
    response = client_for(bob).patch(
        f"{URL}{sub.pk}/", {"webhook_url": receiver.url}, format="json"
    )
    assert response.status_code == 404
    assert not SubscriptionWebhook.objects.exists()


def test_a_host_that_resolves_to_a_private_address_later_is_not_posted_to(receiver, monkeypatch):
    # Given a webhook set while its host resolved to an allowed address
    alice = UserFactory(username="alice")
    receiver.secret = _secret(alice)
    client_for(alice).post(URL, {"query": TRADES, "webhook_url": receiver.url}, format="json")
    sub = Subscription.objects.get()
    append([trade("1.10")])
    advance(sub)

    # When the name resolves to a private address at delivery time (a DNS rebinding)
    def rebound(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    webhooks_deliver_round()

    # Then nothing is sent; the failure says why and waits for its retry
    assert receiver.requests == []
    hook = SubscriptionWebhook.objects.get()
    assert (hook.delivered_n, hook.attempts) == (0, 1)
    assert hook.last_error == "#1: 127.0.0.1 is a private or reserved address (10.0.0.7)"


@override_settings(WEBHOOK_TIMEOUT_SECONDS=1.0, WEBHOOK_DEADLINE_SECONDS=1.0)
def test_a_receiver_that_trickles_its_answer_fails_at_the_deadline_and_is_retried():
    # Given a webhook to a receiver that sends its status line a byte every 0.2 s for ever,
    # each byte well within the 1 s read timeout, and two notifications due
    trickler = Trickler(every=0.2)
    try:
        alice = UserFactory(username="alice")
        _secret(alice)
        client_for(alice).post(URL, {"query": TRADES, "webhook_url": trickler.url}, format="json")
        sub = Subscription.objects.get()
        append([trade("1.10", trade_id=1), trade("1.20", trade_id=2)])
        advance(sub)

        # When a round delivers
        before = timezone.now()
        assert webhooks_deliver_round() == [sub.webhook.pk]

        # Then the POST of n = 1 ended at the deadline, its socket closed, and failed as a
        # timeout does: counted, retried after the first backoff, n = 2 not sent, the lease
        # given back
        assert trickler.hung_up.wait(timeout=30)  # a hang guard, not a speed check
        assert trickler.requests == 1
        hook = SubscriptionWebhook.objects.get()
        assert (hook.delivered_n, hook.attempts, hook.last_error, hook.stopped) == (
            0,
            1,
            "#1: TimeoutError: no answer within 1 s",
            False,
        )
        assert before < hook.last_attempt_at
        assert hook.next_retry_at == hook.last_attempt_at + backoff(1)
        assert hook.lease_until is None
        assert webhooks_claim() == []  # not due before its retry time

        # And at its retry time a round leases it for WEBHOOK_LEASE_SECONDS, and it is
        # delivered once the receiver answers
        later = hook.next_retry_at + dt.timedelta(milliseconds=1)
        assert webhooks_claim(now=later) == [hook.pk]
        hook.refresh_from_db()
        assert hook.lease_until == later + dt.timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS)
        trickler.trickle = False
        assert webhook_deliver(webhook_id=hook.pk).delivered == 2
        hook.refresh_from_db()
        assert (hook.delivered_n, hook.attempts, hook.last_error, hook.next_retry_at) == (
            2,
            0,
            "",
            None,
        )
        assert hook.lease_until is None
        assert trickler.requests == 3
    finally:
        trickler.close()
