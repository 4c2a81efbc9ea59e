"""The one WebSocket endpoint (SPEC 6.3, 6.5).

Client frames: ``{"action": "subscribe" | "unsubscribe", "stream": ...}``,
``{"action": "resume", "stream": "me" | "events:<pattern>", "after": <seq>}``,
``{"action": "presence", "stream": ...}`` and, for discovery (SPEC 8.2),
``{"action": "announce", "subject": <subject>, "name": <name>}`` (answered by
``{"type": "announced", "subject", "name"}``) and ``{"action": "who", "subject": <pattern>}``
(answered by ``{"type": "who", "subject", "markets": [{"subject", "watchers", "names"}],
"truncated"}``, what ``GET /api/v1/presence/`` answers). Server frames:
``{"stream", "type", "seq", "data"}``; errors ``{"type": "error", "code", "message"}`` (a
bad pattern or subject adds ``stream`` or ``subject``, and ``position``, 0-based in the
pattern). A bad frame gets an error frame and the connection stays usable.

``market:<pattern>`` (``market:office.>``) follows every market whose subject matches,
including markets created later; each frame comes once per matching stream the client
follows, named as it subscribed (``patterns.py`` explains the delivery).

``sub:<id>`` follows one of the user's live subscriptions (``subscriptions.py``).

``events:<pattern>`` follows the event log (SPEC 8.1): ``{"stream", "type": "event", "seq",
"data"}`` per event about a matching subject that the user may see (SPEC 5.6), in ``seq``
order. ``{"action": "resume", "stream": "events:<pattern>", "after": <seq>}`` first replays
the log after ``after``, then goes on live, each event once. How: per such stream the
connection keeps the ``seq`` up to which the log has been served to it. Subscribing starts it
at the log's end, resuming at ``after`` followed by a replay to the log's end (the group was
joined before the end was read, so every later event arrives live). Every live message
carries its whole run of the log (``first``-``last``) to every follower, so a follower skips
what it has served already and, when a run starts past its position (a push lost with Redis,
a message dropped at the channel's capacity), reads the gap from the log first. The consumer
handles one message at a time, so live messages wait in the channel during a replay. A
replay sends at most ``REPLAY_CAP`` events for one request: past that the stream is left
with a ``replay_limit`` error saying the ``seq`` to resume after. With ``"batch": true`` in
the ``resume`` (or ``subscribe``) frame, every replay of the stream comes in ``batch`` frames
``{"stream", "type": "batch", "seq": <the last event's>, "data": [<event>, ...]}`` of many
events (``replay.py`` says why and how large); live events stay one frame each.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection
from contextlib import aclosing, suppress
from typing import Any

from channels.db import database_sync_to_async
from channels.exceptions import AcceptConnection, DenyConnection, StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from uvicorn.protocols.utils import ClientDisconnected

from exchange.http import frame_whole_number, nesting_within
from exchange.notification_texts import note_text
from exchange.selectors import realtime as selectors
from exchange.selectors.events import events_log_end, events_page
from exchange.selectors.orders import notification_latest_seq
from exchange.selectors.presence import presence_who
from matching.subjects import SubjectError, SubjectPattern, compile_pattern, validate_subject

from .limits import (
    CLOSE_FLOODED,
    CLOSE_TOO_MANY_CONNECTIONS,
    RATE_WINDOW,
    FrameRate,
    Verdict,
    caps_release,
    connection_admit,
    principal_of,
    stream_admit,
)
from .patterns import PatternStreams, pattern_group, pattern_of
from .presence import (
    presence_announce,
    presence_connect,
    presence_disconnect,
    presence_join,
    presence_leave,
    presence_watchers,
)
from .replay import BATCH_USAGE, batch_flag, batch_frame, compact, event_runs
from .streams import SYSTEM_STREAM, group_for, revocation_groups, user_group
from .subscriptions import SubscriptionStreams, is_subscription_stream

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 4096
# Frames name a stream and a number: nothing legitimate nests deeper than this.
MAX_FRAME_DEPTH = 4
MAX_STREAMS = 200
# What one connection may announce: names this long at most, on this many subjects.
MAX_NAME_LENGTH = 64
MAX_ANNOUNCEMENTS = 16
BACKLOG_BATCH = 500
# An ``events:<pattern>`` replay reads the log this many events a query, and sends at most
# ``REPLAY_CAP`` events for one resume (or one gap) before asking the client to resume.
REPLAY_BATCH = 500
REPLAY_CAP = 20_000
# A batched replay reads the log this many events a query, its frames cut within each
# read: the whole cap, so one resume is one query (``replay.event_runs``).
REPLAY_READ = REPLAY_CAP
EVENTS = "events"
ME = "me"
# A code in the 4000s (application-defined): the connection's login or token was revoked.
CLOSE_REVOKED = 4001
CLOSE_INTERNAL = 1011


_public_stream_exists = database_sync_to_async(selectors.public_stream_exists)
_notifications_after = database_sync_to_async(selectors.notifications_after)
_latest_seq = database_sync_to_async(notification_latest_seq)
_presence_who = database_sync_to_async(presence_who)
_events_log_end = database_sync_to_async(events_log_end)
_events_page = database_sync_to_async(events_page)


def _honour_cancellation() -> None:
    """Raise ``CancelledError`` if this task was cancelled and the cancellation was swallowed
    on the way (Python 3.11's ``asyncio.wait_for``, inside redis-py, returns instead of
    raising when it lands as the call finishes). Channels' dispatch loop would otherwise go
    on with fresh receive tasks that nobody cancels, and the server's (or a test's
    ``asyncio.run``'s) shutdown, waiting for the cancelled consumer, never end."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _events_stream(stream: str) -> bool:
    return stream.partition(":")[0] == EVENTS


def forget_buffer_later(layer: Any, channel: str) -> None:
    """Drop what the channel layer keeps for ``channel`` once no message sent to it before
    the consumer left can still arrive (the layer's message expiry, plus a second).

    channels-redis (4.3) reads every channel of a process from one Redis list and files a
    message under ``receive_buffer[<its channel>]`` for that channel's consumer to take; a
    message that arrives after its consumer left (a group send already under way) is filed
    all the same and never taken, so each closed connection could leave a queue of up to
    the layer's capacity in the process for good (an audit saw 93 such queues holding 2,740
    messages after 100 connections came and went beside a busy stream; the project's own
    issue django/channels_redis#384). Other layers keep no such buffer."""
    buffer = getattr(layer, "receive_buffer", None)
    if buffer is None:
        return
    delay = float(getattr(layer, "expiry", 60)) + 1.0
    asyncio.get_running_loop().call_later(delay, buffer.pop, channel, None)


class StreamConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.streams: set[str] = set()
        self.patterns = PatternStreams()
        self.announced: dict[str, str] = {}  # subject -> the name announced on it
        # Per ``events:<pattern>`` stream, the log's seq up to which it has been served.
        self.event_positions: dict[str, int] = {}
        # The ``events:<pattern>`` streams whose replays go in ``batch`` frames.
        self.event_batched: set[str] = set()
        self.subscriptions = SubscriptionStreams(self)  # the ``sub:<id>`` streams
        self.user = self.scope.get("user")
        self.last_seq: int | None = (
            None  # the last personal notification sent (None: not following)
        )
        self.rate = FrameRate(
            per_second=settings.WS_FRAMES_PER_SECOND,
            burst=settings.WS_FRAME_BURST,
            flood_windows=settings.WS_FLOOD_WINDOWS,
        )
        self.principal_groups: list[str] = []
        self.counted = False
        if self.scope.get("auth_failed"):
            await self.accept()
            await self._error(
                "bad_token",
                "This token is not valid (mistyped, regenerated or revoked): get a new one "
                f"with POST /api/v1/auth/token/. This connection closes ({CLOSE_REVOKED}).",
            )
            await self.close(code=CLOSE_REVOKED)
            return
        self.principal = principal_of(self.scope)
        self.counted = await connection_admit(self.principal, self.channel_name)
        if not self.counted:
            cap = settings.WS_MAX_CONNECTIONS_PER_USER
            await self.accept()
            await self._error(
                "too_many_connections",
                f"A user keeps at most {cap} WebSocket connections open (without a login, "
                f"one client address); close one first. This one closes "
                f"({CLOSE_TOO_MANY_CONNECTIONS}).",
            )
            await self.close(code=CLOSE_TOO_MANY_CONNECTIONS)
            return
        # Logging out or revoking the token sends ``auth.revoked`` to these groups.
        self.principal_groups = revocation_groups(self.scope) if self.authenticated else []
        for group in self.principal_groups:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        self.present = True
        await presence_connect(
            self.channel_name, self.user.get_username() if self.authenticated else ""
        )

    @property
    def authenticated(self) -> bool:
        return bool(self.user is not None and self.user.is_authenticated)

    async def disconnect(self, code: int) -> None:
        try:
            await self._leave_all()
        finally:  # Redis away: the buffer is this process's, and goes all the same
            forget_buffer_later(self.channel_layer, self.channel_name)

    async def _leave_all(self) -> None:
        """Leave every group and drop the connection's presence (streams and
        announcements) in one write; safe to call twice."""
        streams = list(getattr(self, "streams", ()))
        for stream in streams:
            await self._unfollow(stream)
        if hasattr(self, "subscriptions"):
            await self.subscriptions.leave_all()
        for group in getattr(self, "principal_groups", ()):
            await self.channel_layer.group_discard(group, self.channel_name)
        self.principal_groups = []
        if getattr(self, "present", False):
            self.present = False
            await presence_disconnect(self.channel_name, streams, list(self.announced))
            self.announced = {}
        if getattr(self, "counted", False):
            self.counted = False
            await caps_release(self.principal, self.channel_name, streams=streams, connection=True)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Handle one message; an unexpected failure sends an error frame, removes the
        connection's presence entries and closes it (1011), rather than a silent kill. A
        client gone while a frame was being sent only ends the connection, with no error.
        A cancellation that the handling swallowed ends the consumer after it (below)."""
        try:
            await super().dispatch(message)
        except (StopConsumer, AcceptConnection, DenyConnection):
            raise
        except ClientDisconnected:
            # The client left while a frame was on its way (mid-replay, say, or a wake as it
            # went: ``departure.py``): an ordinary end of the connection, not a failure.
            # Leave its groups and its layer buffer as a disconnect does; nothing to tell it.
            log.info("WebSocket client left during %s", message.get("type"))
            await self.disconnect(1006)
            raise StopConsumer() from None
        except Exception:
            log.exception("WebSocket consumer failed on %s", message.get("type"))
            try:
                # A client already gone is not told; its groups, presence and layer buffer
                # go all the same, as a disconnect's do.
                with suppress(ClientDisconnected):
                    await self._error(
                        "server_error", "Something went wrong on our side; reconnect."
                    )
                await self.disconnect(CLOSE_INTERNAL)
                await self.close(code=CLOSE_INTERNAL)
            except Exception:  # the socket or Redis is gone too: nothing more to tell anyone
                log.exception("WebSocket cleanup failed")
            raise StopConsumer() from None
        _honour_cancellation()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        verdict = self.rate.check()
        if verdict is not Verdict.PASS:
            await self._flooded(verdict)
            return
        message = await self._parse(text_data)
        if message is None:
            return
        action, stream = message.get("action"), message.get("stream")
        if action == "announce":
            await self._announce(message.get("subject"), message.get("name"))
            return
        if action == "who":
            await self._who(message.get("subject"))
            return
        if action not in ("subscribe", "unsubscribe", "resume", "presence"):
            await self._error(
                "unknown_action",
                'The "action" is subscribe, unsubscribe, resume, presence, announce or who.',
            )
            return
        if not isinstance(stream, str) or len(stream) > 250:
            await self._error(
                "unknown_stream",
                'Name a "stream": market:<pattern>, events:<pattern>, offer:<id>, me or system.',
            )
            return
        if is_subscription_stream(stream):
            await self.subscriptions.receive(action, stream, message)
            return
        if action == "unsubscribe":
            await self._leave(stream)
            await self._send({"type": "unsubscribed", "stream": stream})
            return
        try:
            pattern = pattern_of(stream)
        except SubjectError as exc:
            pattern_text = stream.partition(":")[2]
            await self._malformed(
                "bad_pattern", exc, "a subject pattern", pattern_text, stream=stream
            )
            return
        if pattern is None and not await self._allowed(stream):
            return
        if action == "presence":
            watchers = await presence_watchers(stream)
            data: dict[str, Any] = {"count": len(watchers)}
            if self.authenticated and self.user.is_staff:
                data["watchers"] = watchers
            await self._send({"stream": stream, "type": "presence", "seq": None, "data": data})
            return
        batch = batch_flag(message)
        if _events_stream(stream) and batch is None:
            await self._error("bad_frame", f"{BATCH_USAGE} ({stream!r})", stream=stream)
            return
        if action == "resume" and _events_stream(stream):
            await self._events_resume(stream, pattern, message.get("after"), bool(batch))
            return
        if action == "resume":
            after = message.get("after")
            if stream != ME or isinstance(after, bool) or not isinstance(after, int) or after < 0:
                await self._error(
                    "bad_frame", 'Resume the "me" stream after a sequence number: {"after": 42}.'
                )
                return
            if not await self._stream_room(stream):
                return
            await self._join(stream)
            await self._send({"type": "subscribed", "stream": stream})
            self.last_seq = after
            await self._catch_up()
            return
        if not await self._stream_room(stream):
            return
        await self._join(stream, pattern)
        if stream == ME and self.last_seq is None:
            self.last_seq = await _latest_seq(user=self.user)
        if _events_stream(stream) and stream not in self.event_positions:
            self.event_positions[stream] = await _events_log_end()
        if _events_stream(stream):
            self._batched(stream, bool(batch))
        await self._send({"type": "subscribed", "stream": stream})

    def _batched(self, stream: str, batch: bool) -> None:
        if batch:
            self.event_batched.add(stream)
        else:
            self.event_batched.discard(stream)

    async def _events_resume(
        self, stream: str, pattern: SubjectPattern | None, after: object, batch: bool
    ) -> None:
        """Follow ``stream`` (an ``events:<pattern>``) from the log's event after ``after``:
        replay (in ``batch`` frames if ``batch``), then live."""
        start = await self._resume_point(stream, after, "a sequence number, a whole number")
        if start is None or not await self._stream_room(stream):
            return
        assert pattern is not None  # every events stream is a pattern stream
        await self._join(stream, pattern)
        await self._send({"type": "subscribed", "stream": stream})
        self.event_positions[stream] = start
        self._batched(stream, batch)
        await self._events_replay(stream, upto=await _events_log_end())

    async def _events_replay(self, stream: str, *, upto: int) -> None:
        """Send ``stream``'s events from the log after its position up to ``upto``, which
        becomes its position; at ``REPLAY_CAP`` events, leave the stream instead with a
        ``replay_limit`` error naming the last ``seq`` sent."""
        if stream in self.event_batched:
            await self._events_replay_batched(stream, upto=upto)
            return
        position = self.event_positions[stream]
        viewer = self.user if self.user is not None else AnonymousUser()
        subject = stream.partition(":")[2]
        sent = 0
        while position < upto:
            rows = await _events_page(
                user=viewer, subject=subject, after=position, upto=upto, limit=REPLAY_BATCH
            )
            for row in rows:
                await self._send(
                    {"stream": stream, "type": "event", "seq": row["seq"], "data": row}
                )
            if len(rows) < REPLAY_BATCH:
                break
            position = rows[-1]["seq"]
            sent += len(rows)
            if sent >= REPLAY_CAP and position < upto:
                await self._replay_stop(stream, position)
                return
        self.event_positions[stream] = upto

    async def _events_replay_batched(self, stream: str, *, upto: int) -> None:
        """``_events_replay`` in ``batch`` frames: at most ``REPLAY_CAP`` events for the
        request, read ``REPLAY_READ`` a query while the frames go out (``event_runs``),
        each run one frame."""
        position = self.event_positions[stream]
        viewer = self.user if self.user is not None else AnonymousUser()
        subject = stream.partition(":")[2]
        sent = 0
        bounds = {"after": position, "upto": upto, "cap": REPLAY_CAP, "read": REPLAY_READ}
        runs = event_runs(user=viewer, subject=subject, **bounds)
        async with aclosing(runs):
            async for batch in runs:
                envelope = {"stream": stream, "type": "batch", "seq": batch.last}
                await self._send_text(batch_frame(envelope, "data", batch.texts))
                sent += batch.count
                position = batch.last
        if sent >= REPLAY_CAP and position < upto:
            await self._replay_stop(stream, position)
            return
        self.event_positions[stream] = upto

    async def _replay_stop(self, stream: str, position: int, what: str = "events") -> None:
        """Leave ``stream``, whose replay reached ``REPLAY_CAP`` at ``position``."""
        await self._leave(stream)
        await self._error(
            "replay_limit",
            f"One resume replays at most {REPLAY_CAP} {what}: {stream!r} stopped after "
            f"{position}; resume it after {position} for the rest.",
            stream=stream,
            after=position,
        )

    async def _parse(self, text_data: str | None) -> dict | None:
        if text_data is None:
            await self._error("bad_frame", "Frames must be JSON text, not binary.")
            return None
        if len(text_data) > MAX_FRAME_BYTES or len(text_data.encode()) > MAX_FRAME_BYTES:
            await self._error("too_large", f"Frames are limited to {MAX_FRAME_BYTES} bytes.")
            return None
        if not nesting_within(text_data, MAX_FRAME_DEPTH):
            await self._error(
                "too_deep", f"Frames nest arrays and objects at most {MAX_FRAME_DEPTH} levels deep."
            )
            return None
        try:
            message = json.loads(text_data)
        except ValueError:
            await self._error("bad_frame", "The frame is not valid JSON.")
            return None
        if not isinstance(message, dict):
            await self._error("bad_frame", 'A frame must be a JSON object with an "action".')
            return None
        return message

    async def _allowed(self, stream: str) -> bool:
        if stream == ME:
            if not self.authenticated:
                await self._error("forbidden", 'The "me" stream needs a logged-in user or a token.')
                return False
            return True
        if stream == SYSTEM_STREAM or await _public_stream_exists(stream=stream):
            return True
        await self._error("unknown_stream", f"There is no stream {stream!r}.")
        return False

    def _group(self, stream: str) -> str:
        return user_group(self.user.pk) if stream == ME else group_for(stream)

    async def _join(self, stream: str, pattern: SubjectPattern | None = None) -> None:
        if stream in self.streams:
            return
        if pattern is None:
            await self.channel_layer.group_add(self._group(stream), self.channel_name)
        elif self.patterns.add(stream, pattern):
            kind = stream.partition(":")[0]
            await self.channel_layer.group_add(pattern_group(kind), self.channel_name)
        self.streams.add(stream)
        await presence_join(self.channel_name, stream)

    async def _leave(self, stream: str) -> None:
        if stream not in self.streams:
            return
        await self._unfollow(stream)
        await presence_leave(self.channel_name, stream)
        await caps_release(self.principal, self.channel_name, streams=[stream])

    async def _unfollow(self, stream: str) -> None:
        """Leave ``stream``'s group (the presence write is the caller's)."""
        if stream not in self.patterns:
            await self.channel_layer.group_discard(self._group(stream), self.channel_name)
        elif self.patterns.remove(stream):
            kind = stream.partition(":")[0]
            await self.channel_layer.group_discard(pattern_group(kind), self.channel_name)
        self.streams.discard(stream)
        self.event_positions.pop(stream, None)
        self.event_batched.discard(stream)
        if stream == ME:
            self.last_seq = None

    async def _subject_in(
        self, value: object, check: Callable[[str], object], code: str, what: str, usage: str
    ) -> str | None:
        """A frame's ``subject`` if it is text that ``check`` accepts; otherwise None, after
        the error frame (``usage`` when it is no text at all)."""
        if not isinstance(value, str) or len(value) > 250:
            await self._error(code, usage)
            return None
        try:
            check(value)
        except SubjectError as exc:
            await self._malformed(code, exc, what, value, subject=value)
            return None
        return value

    async def _announce(self, given: object, name: object) -> None:
        """Announce this connection on a market's subject under a public name (SPEC 8.2);
        announcing again on the same subject replaces the name. Ends with the connection."""
        usage = 'Name a market "subject", such as office.supplies.'
        subject = await self._subject_in(given, validate_subject, "bad_subject", "a subject", usage)
        if subject is None:
            return
        if (
            not isinstance(name, str)
            or not name.strip()
            or len(name) > MAX_NAME_LENGTH
            or not name.isprintable()
        ):
            await self._error(
                "bad_name",
                f'The "name" is printable text of 1 to {MAX_NAME_LENGTH} characters.',
            )
            return
        if subject not in self.announced and len(self.announced) >= MAX_ANNOUNCEMENTS:
            await self._error(
                "too_many_announcements",
                f"A connection announces itself on at most {MAX_ANNOUNCEMENTS} subjects.",
            )
            return
        if not await _public_stream_exists(stream=f"market:{subject}"):
            await self._error("unknown_market", f"There is no market {subject}.", subject=subject)
            return
        self.announced[subject] = name
        await presence_announce(self.channel_name, subject, name)
        await self._send({"type": "announced", "subject": subject, "name": name})

    async def _who(self, given: object) -> None:
        """One frame: per market matching the pattern, its watchers and announced names."""
        usage = 'Name a "subject" pattern, such as office.>.'
        pattern = await self._subject_in(
            given, compile_pattern, "bad_pattern", "a subject pattern", usage
        )
        if pattern is None:
            return
        answer = await _presence_who(pattern=pattern)
        await self._send({"type": "who", **answer})

    async def _catch_up(self) -> None:
        """Send the personal notifications after ``last_seq`` from the outbox, in order: at
        most ``REPLAY_CAP`` for one request, as an ``events:`` resume, past which the stream
        is left with a ``replay_limit`` error saying where to resume. (An account's outbox is
        never pruned, and a resume after 0 sent all of it, one frame each, on the socket
        process that every other connection shares.)"""
        sent = 0
        while self.last_seq is not None:
            limit = min(BACKLOG_BATCH, REPLAY_CAP - sent) or 1
            rows = await _notifications_after(
                user_id=self.user.pk, after=self.last_seq, limit=limit
            )
            if sent >= REPLAY_CAP:
                if rows:  # more than one request replays
                    await self._replay_stop(ME, self.last_seq, "notifications")
                return
            for row in rows:
                text, tone = note_text(row["type"], row["data"])
                await self._send(
                    {
                        "stream": ME,
                        "type": "notification",
                        "seq": row["id"],
                        "time": row["time"],
                        "text": text,
                        "tone": tone,
                        "data": {"type": row["type"], **row["data"]},
                    }
                )
                self.last_seq = row["id"]
            sent += len(rows)
            if len(rows) < limit:
                return

    # -- channel-layer events ----------------------------------------------------------

    async def stream_frame(self, event: dict[str, Any]) -> None:
        await self._send(event["frame"])

    async def pattern_frame(self, event: dict[str, Any]) -> None:
        """A frame about ``event["subject"]``: once for each of this connection's pattern
        streams of that kind that match, renamed to the stream; a frame with an ``owner``
        only if this connection is that user's or staff's."""
        owner = event.get("owner")
        if owner is not None and not (
            self.authenticated and (self.user.is_staff or self.user.pk == owner)
        ):
            return
        for stream in self.patterns.matching(event["kind"], event["subject"]):
            await self._send({**event["frame"], "stream": stream})

    async def events_batch(self, message: dict[str, Any]) -> None:
        """A committed run of the log (``first``-``last``, every event with its ``owner``):
        each ``events:<pattern>`` stream gets the events it has not been served that match
        its pattern and that this user may see; a stream whose position is before
        ``first - 1`` missed a run and reads the gap, and this one, from the log."""
        first, last = message["first"], message["last"]
        for stream, position in list(self.event_positions.items()):
            if position < first - 1:
                await self._events_replay(stream, upto=last)
        behind = {s: p for s, p in self.event_positions.items() if p < last}
        if not behind:
            return
        for event in message["events"]:
            data = event["data"]
            owner = event["owner"]
            if owner is not None and not (
                self.authenticated and (self.user.is_staff or self.user.pk == owner)
            ):
                continue
            for stream in self.patterns.matching(EVENTS, data["subject"]):
                if behind.get(stream, data["seq"]) < data["seq"]:
                    await self._send(
                        {"stream": stream, "type": "event", "seq": data["seq"], "data": data}
                    )
        for stream in behind:
            if stream in self.event_positions:
                self.event_positions[stream] = last

    async def sub_notifications(self, message: dict[str, Any]) -> None:
        await self.subscriptions.batch(message)

    async def stream_batch(self, message: dict[str, Any]) -> None:
        """Several messages of one group sent as one (``streams.group_send_all``): each is
        handled in order, as if it had come alone."""
        for inner in message["messages"]:
            await self.dispatch(inner)

    async def user_wake(self, event: dict[str, Any]) -> None:
        if ME in self.streams and self.last_seq is not None and event["seq"] > self.last_seq:
            await self._catch_up()

    async def auth_revoked(self, event: dict[str, Any]) -> None:
        """The login or token this connection authenticated with was revoked: say so, leave
        every stream and close."""
        await self._error("revoked", "Your login or API token was revoked; this connection closes.")
        await self._leave_all()
        await self.close(code=CLOSE_REVOKED)

    async def _flooded(self, verdict: Verdict) -> None:
        """Answer a frame past the rate (``limits.py``): nothing, one ``rate_limited`` error
        for its window, or, after overflow in ``WS_FLOOD_WINDOWS`` windows in a row, a
        ``flooded`` error and the close (4029)."""
        rate, windows = settings.WS_FRAMES_PER_SECOND, settings.WS_FLOOD_WINDOWS
        if verdict is Verdict.WARN:
            await self._error(
                "rate_limited",
                f"At most {rate:g} frames a second: frames past it are dropped, with this "
                f"error at most once in {RATE_WINDOW:g} s; dropping frames in {windows} such "
                f"windows in a row closes the connection ({CLOSE_FLOODED}).",
            )
        elif verdict is Verdict.CLOSE:
            await self._error(
                "flooded",
                f"Frames came past {rate:g} a second in {windows} windows of {RATE_WINDOW:g} s "
                f"in a row; this connection closes ({CLOSE_FLOODED}).",
            )
            await self._leave_all()
            await self.close(code=CLOSE_FLOODED)

    async def _malformed(
        self, code: str, exc: SubjectError, what: str, text: str, **sent: str
    ) -> None:
        """The error frame for ``text``, a malformed subject or pattern: what is wrong and
        where (``position``, 0-based in ``text``), with what the client sent under the key
        it came in (``stream`` or ``subject``)."""
        await self._error(
            code,
            f"{text!r} is not {what}: {exc.message} (at character {exc.position}).",
            **sent,
            position=exc.position,
        )

    async def _resume_point(self, stream: str, after: object, counted: str) -> int | None:
        """Where a ``resume`` of ``stream`` starts: ``after`` as a whole number, or None once
        the client has been told (a ``bad_frame`` saying what ``after`` counts)."""
        start = frame_whole_number(after)
        if start is None:
            await self._error(
                "bad_frame", f'Resume {stream!r} after {counted}: {{"after": 42}}.', stream=stream
            )
        return start

    async def _room_for(
        self, stream: str, followed: Collection[str], limit: int, kind: str
    ) -> bool:
        """Whether this connection may follow ``stream`` beside the ``followed`` streams of its
        ``kind`` (one it follows already is always allowed); if not, the client is told."""
        if stream in followed or len(followed) < limit:
            return True
        await self._error("too_many_streams", f"A connection follows at most {limit} {kind}.")
        return False

    async def _stream_room(self, stream: str) -> bool:
        """Whether this connection may follow ``stream``: ``MAX_STREAMS`` on it, and
        ``WS_MAX_STREAMS_PER_USER`` over all of its user's (``limits.py``, counted there
        once allowed); if not, the client is told (``too_many_streams``)."""
        if stream in self.streams:
            return True
        if not await self._room_for(stream, self.streams, MAX_STREAMS, "streams"):
            return False
        if await stream_admit(self.principal, self.channel_name, stream):
            return True
        cap = settings.WS_MAX_STREAMS_PER_USER
        await self._error(
            "too_many_streams",
            f"A user follows at most {cap} streams over all their connections (without a "
            "login, one client address); unsubscribe from one first.",
        )
        return False

    async def _error(self, code: str, message: str, **detail: Any) -> None:
        await self._send({"type": "error", "code": code, "message": message, **detail})

    async def _send(self, payload: dict[str, Any]) -> None:
        await self.send(text_data=compact(payload))

    async def _send_text(self, text: str) -> None:
        """Send a frame already written as JSON text (``replay.batch_frame``)."""
        await self.send(text_data=text)
