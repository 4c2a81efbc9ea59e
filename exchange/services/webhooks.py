"""Webhooks of subscriptions (issue 39): each notification POSTed as JSON to the URL its
owner set, signed with the owner's secret, retried with exponential backoff, idempotent by
``(subscription, n)``.

Delivery reads the outbox after the webhook's ``delivered_n``, so it works whichever process
writes notifications (the Celery advance pass or a long-lived engine): nothing here is
called by the writer. A round (``webhooks_claim``, beat every ``WEBHOOK_ROUND_SECONDS``)
leases the webhooks that have something due and hands each to a task of its own
(``webhook_deliver``), which sends in ``n`` order, one POST at a time, each given at most
``WEBHOOK_DEADLINE_SECONDS`` in all, for at most ``WEBHOOK_RUN_SECONDS``: a slow, dead or
trickling receiver holds one worker for at most the run budget plus one deadline and no
database lock, and never delays another webhook's delivery beyond that. The claim's lease
(``WEBHOOK_LEASE_SECONDS``) is longer than that, so a round does not queue a second task for
a webhook whose task still sends (unless that task waited in the queue for most of the lease).

The request (docs/api.md, "Webhooks"): body ``{"subscription", "name", "stream", "n",
"seq", "data", "created_at"}`` (compact JSON, sorted keys); headers ``X-Intersect-Delivery:
<subscription>:<n>`` (the idempotency key), ``X-Intersect-Timestamp: <unix seconds>`` and
``X-Intersect-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body with the secret>``.
A 2xx answer acknowledges ``n``; anything else (a redirect too, never followed), a refused
address, a timeout or the deadline is a failure: the same ``n`` is tried again after 5 s,
10 s, 20 s, ... (at most an hour apart) and after ``WEBHOOK_MAX_ATTEMPTS`` failures in a row
the webhook stops until its URL is set again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import http.client
import ipaddress
import json
import secrets
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from exchange.errors import InvalidInput, NotFound
from exchange.models import (
    Subscription,
    SubscriptionNotification,
    SubscriptionWebhook,
    WebhookSecret,
)

SIGNATURE_HEADER = "X-Intersect-Signature"
TIMESTAMP_HEADER = "X-Intersect-Timestamp"
DELIVERY_HEADER = "X-Intersect-Delivery"
MAX_URL = 2000
# Notifications one task sends before it lets the next round lease the webhook again.
BATCH = 100
BACKOFF_FIRST = dt.timedelta(seconds=5)
BACKOFF_MAX = dt.timedelta(hours=1)


# -- the secret -----------------------------------------------------------------------------


def webhook_secret_rotate(*, owner: User) -> str:
    """A new signing secret for ``owner`` (the first, or replacing the old one at once):
    returned here, the only time it is shown."""
    secret = "whsec_" + secrets.token_urlsafe(32)
    WebhookSecret.objects.update_or_create(
        owner=owner, defaults={"secret": secret, "created_at": timezone.now()}
    )
    return secret


def webhook_signature(*, secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: HMAC-SHA256 of ``"<timestamp>." + body``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


# -- the URL --------------------------------------------------------------------------------


def _address_refused(address: str) -> str | None:
    """Why the exchange does not POST to ``address`` (None: it may). Loopback is allowed
    when ``WEBHOOK_ALLOW_LOOPBACK`` (development, tests); private, link-local, reserved and
    multicast addresses never are."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if settings.WEBHOOK_ALLOW_LOOPBACK else "a loopback address"
    if ip.is_private or ip.is_link_local or ip.is_reserved or ip.is_multicast:
        return "a private or reserved address"
    if ip.is_unspecified:
        return "an unspecified address"
    return None


def _host_addresses(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))  # the resolver's order


def webhook_url_refused(url: str) -> str | None:
    """Why ``url`` cannot be a webhook (None: it can): http or https only, a host, no
    credentials, and every address the host resolves to allowed (``_address_refused``)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        return f"webhook_url must be an http or https URL of at most {MAX_URL} characters."
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "webhook_url is not a valid URL."
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "webhook_url must be an http or https URL with a host."
    if parts.username or parts.password:
        return "webhook_url must not carry a user name or password."
    addresses = _host_addresses(parts.hostname, port or (443 if parts.scheme == "https" else 80))
    if not addresses:
        return f"webhook_url's host {parts.hostname} does not resolve."
    for address in addresses:
        why = _address_refused(address)
        if why is not None:
            return f"webhook_url's host {parts.hostname} is {why} ({address}); not allowed."
    return None


def webhook_url_checked(url: str) -> str:
    """``url`` if it may be a webhook, else ``InvalidInput`` (``invalid_webhook_url``)."""
    why = webhook_url_refused(url)
    if why is not None:
        raise InvalidInput("invalid_webhook_url", why, field="webhook_url")
    return url


def webhook_secret_required(*, owner: User) -> None:
    """``InvalidInput`` (``webhook_secret_missing``) unless ``owner`` has a signing secret:
    a webhook is never sent unsigned, and the secret is shown only when it is made."""
    if not WebhookSecret.objects.filter(owner=owner).exists():
        raise InvalidInput(
            "webhook_secret_missing",
            "Create your webhook signing secret first (POST /api/v1/webhook-secret/); "
            "it is shown once.",
            field="webhook_url",
        )


# -- setting it -----------------------------------------------------------------------------


def subscription_webhook_set(
    *, owner: User, subscription_id: int, url: str | None, from_start: bool = False
) -> SubscriptionWebhook | None:
    """Set (``url``) or remove (None or "") the webhook of ``owner``'s subscription
    (``NotFound`` for anyone else's). A new webhook sends the notifications after the
    subscription's current ``last_n`` (``from_start``: all of them, for one registered in
    the same request); a changed URL goes on from where the old one was. Setting it again
    starts over after a stop: attempts, error and retry time are cleared."""
    if url:
        webhook_url_checked(url)
        webhook_secret_required(owner=owner)
    with transaction.atomic():
        subscription = (
            Subscription.objects.select_for_update().filter(owner=owner, id=subscription_id).first()
        )
        if subscription is None:
            raise NotFound("not_found", f"You have no subscription {subscription_id}.")
        if not url:
            SubscriptionWebhook.objects.filter(subscription=subscription).delete()
            return None
        webhook = SubscriptionWebhook.objects.filter(subscription=subscription).first()
        if webhook is None:
            webhook = SubscriptionWebhook(
                subscription=subscription, delivered_n=0 if from_start else subscription.last_n
            )
        webhook.url = url
        webhook.attempts = 0
        webhook.last_error = ""
        webhook.next_retry_at = None
        webhook.stopped = False
        webhook.save()
    return webhook


# -- delivering -----------------------------------------------------------------------------


def webhooks_claim(*, now: dt.datetime | None = None, limit: int = 100) -> list[int]:
    """Lease up to ``limit`` webhooks with a notification due (the outbox past
    ``delivered_n``, not stopped, not waiting for a retry, not leased): their ids, each to
    be handed to one ``webhook_deliver``. Row locks are skipped, not waited for."""
    now = now or timezone.now()
    with transaction.atomic():
        ids = list(
            SubscriptionWebhook.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(subscription__last_n__gt=F("delivered_n"), stopped=False)
            .filter(Q(next_retry_at__isnull=True) | Q(next_retry_at__lte=now))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .order_by("pk")
            .values_list("pk", flat=True)[:limit]
        )
        # Left alone by other rounds until then; a lost task's lease expires.
        lease = dt.timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS)
        SubscriptionWebhook.objects.filter(pk__in=ids).update(lease_until=now + lease)
    return ids


@dataclass(frozen=True)
class Delivery:
    """What one ``webhook_deliver`` did: the notifications acknowledged and, if the last
    try failed, why."""

    delivered: int
    error: str = ""


def notification_body(subscription: Subscription, note: SubscriptionNotification) -> dict[str, Any]:
    return {
        "subscription": subscription.pk,
        "name": subscription.name,
        "stream": f"sub:{subscription.pk}",
        "n": note.n,
        "seq": note.seq,
        "data": note.data,
        "created_at": note.created_at.isoformat().replace("+00:00", "Z"),
    }


class _Deadline:
    """The whole POST's time limit. The socket's timeout bounds each wait, not the answer: a
    receiver that sends a byte now and then would hold the task for ever. When the time is
    up a timer thread shuts the socket down, which ends the read or write it is blocked in
    (and the TLS handshake's) with an error; the POST then fails as a timeout would."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passed = False
        self._ends = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._watched: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True  # a worker shutting down does not wait for it
        self._timer.start()

    def connect(self, address: str, port: int, timeout: float | None) -> socket.socket:
        """A socket connected to ``address`` within ``timeout`` and the time left, watched
        from then on."""
        left = self._ends - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        sock = socket.create_connection((address, port), min(timeout or left, left))
        with self._lock:
            if self.passed:
                sock.close()
                raise TimeoutError("deadline passed")
            # A descriptor of our own for the same socket: TLS takes the original's over, and
            # the original's number may be reused by another socket once the connection
            # closes it, while this one is closed only by ``close`` under the lock.
            self._watched = sock.dup()
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            if self._watched is not None:
                with contextlib.suppress(OSError):  # the receiver closed it already
                    self._watched.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            if self._watched is not None:
                self._watched.close()
                self._watched = None


class _PinnedHTTP(http.client.HTTPConnection):
    """A connection to ``address``, the address that was checked, not to whatever the host
    name resolves to a moment later (a DNS rebinding to a private address), within
    ``deadline``."""

    def __init__(
        self, host: str, port: int, address: str, timeout: float, deadline: _Deadline
    ) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address
        self.deadline = deadline

    def connect(self) -> None:
        self.sock = self.deadline.connect(self.address, self.port, self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """As ``_PinnedHTTP``, with TLS verified against the host name (SNI too)."""

    def __init__(
        self, host: str, port: int, address: str, timeout: float, deadline: _Deadline
    ) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.address = address
        self.deadline = deadline

    def connect(self) -> None:
        sock = self.deadline.connect(self.address, self.port, self.timeout)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


def _post(url: str, body: bytes, headers: dict[str, str]) -> str | None:
    """POST ``body`` to the first allowed address of the URL's host (every address checked
    now, the connection pinned to it); None on a 2xx answer, else the failure in a few
    words. A redirect is an answer like any other: never followed. The status line and
    headers must have come within ``WEBHOOK_DEADLINE_SECONDS`` (the body is not read)."""
    parts = urlsplit(url)
    assert parts.hostname is not None  # checked when it was set
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = _host_addresses(parts.hostname, port)
    if not addresses:
        return f"{parts.hostname} does not resolve"
    for address in addresses:
        why = _address_refused(address)
        if why is not None:
            return f"{parts.hostname} is {why} ({address})"
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    deadline = _Deadline(settings.WEBHOOK_DEADLINE_SECONDS)
    connection = kind(
        parts.hostname, port, addresses[0], settings.WEBHOOK_TIMEOUT_SECONDS, deadline
    )
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", target, body=body, headers=headers)
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        if deadline.passed:
            # Whatever the shut-down socket raised (an early end of the answer, a broken
            # pipe), the receiver took too long: said as the timeout it is.
            return f"TimeoutError: no answer within {deadline.seconds:g} s"
        return f"{type(exc).__name__}: {exc}"[:200]
    finally:
        deadline.close()
        connection.close()
    return None if 200 <= status < 300 else f"HTTP {status}"


def backoff(attempts: int) -> dt.timedelta:
    """The wait before try ``attempts + 1`` of a notification that failed ``attempts`` times."""
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** max(0, attempts - 1))


def webhook_deliver(*, webhook_id: int, batch: int = BATCH) -> Delivery:
    """Send the webhook's due notifications in ``n`` order, one POST each, until one fails,
    ``batch`` are sent or ``WEBHOOK_RUN_SECONDS`` pass; record each acknowledgement
    (``delivered_n``) or the failure (error, attempts, next retry) as it happens; then
    release the lease. Safe to run twice: a repeat sends ``delivered_n + 1`` again at worst,
    which the receiver drops by its ``X-Intersect-Delivery``."""
    webhook = (
        SubscriptionWebhook.objects.select_related("subscription").filter(pk=webhook_id).first()
    )
    if webhook is None:
        return Delivery(0)
    subscription = webhook.subscription
    secret = WebhookSecret.objects.filter(owner_id=subscription.owner_id).first()
    notes = list(
        SubscriptionNotification.objects.filter(
            subscription_id=subscription.pk, n__gt=webhook.delivered_n
        ).order_by("n")[:batch]
    )
    started = time.monotonic()
    delivered = 0
    error = ""
    for note in notes:
        if time.monotonic() - started > settings.WEBHOOK_RUN_SECONDS:
            break
        if secret is None:
            error = "no signing secret (create one)"
        else:
            body = json.dumps(
                notification_body(subscription, note), separators=(",", ":"), sort_keys=True
            ).encode()
            timestamp = int(time.time())
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "Intersect-Webhook/1",
                DELIVERY_HEADER: f"{subscription.pk}:{note.n}",
                TIMESTAMP_HEADER: str(timestamp),
                SIGNATURE_HEADER: webhook_signature(
                    secret=secret.secret, timestamp=timestamp, body=body
                ),
            }
            error = _post(webhook.url, body, headers) or ""
        now = timezone.now()
        if error:
            attempts = webhook.attempts + 1
            SubscriptionWebhook.objects.filter(pk=webhook.pk, url=webhook.url).update(
                attempts=attempts,
                last_error=f"#{note.n}: {error}"[:300],
                last_attempt_at=now,
                next_retry_at=now + backoff(attempts),
                stopped=attempts >= settings.WEBHOOK_MAX_ATTEMPTS,
            )
            break
        # Only forward: a repeat that ran alongside never moves it back.
        SubscriptionWebhook.objects.filter(pk=webhook.pk, delivered_n__lt=note.n).update(
            delivered_n=note.n, attempts=0, last_error="", last_attempt_at=now, next_retry_at=None
        )
        webhook.attempts = 0
        delivered += 1
    SubscriptionWebhook.objects.filter(pk=webhook.pk).update(lease_until=None)
    return Delivery(delivered, error)


def webhooks_deliver_round(*, limit: int = 100) -> list[int]:
    """Lease the due webhooks and send each one's notifications in this process (the
    tests' and a command's way; beat's round hands each to a task instead)."""
    ids = webhooks_claim(limit=limit)
    for webhook_id in ids:
        webhook_deliver(webhook_id=webhook_id)
    return ids
