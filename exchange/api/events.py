"""The event log over REST (SPEC 8.1): ``GET /api/v1/events/`` and ``/events/types/``.

Pages go by ``seq``: a page holds the first ``limit`` visible events after ``after``, and
``next`` repeats the query after the page's last ``seq``. ``format=csv`` and
``format=jsonl`` stream every matching event instead, in constant memory, at most
``EVENT_EXPORTS_PER_PROCESS`` at once per server process (``ExportSlots``).
"""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import closing
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import exceptions, permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from exchange.api.parameters import KnownParameters
from exchange.errors import InvalidInput
from exchange.http import query_whole_number
from exchange.selectors.events import event_json, events_read
from exchange.selectors.history import HistoryWhere, history_end, history_events, history_lines
from exchange.throttling import client_of
from matching.subjects import SubjectError
from matching.subscriptions.errors import EventError
from matching.subscriptions.events import parse_timestamp
from matching.subscriptions.language.schema import (
    ENVELOPE,
    EVENT_SCHEMA,
    EVENT_TYPES,
    EVERYONE,
    QUANTITY_ATTRIBUTES,
)

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
FORMATS = ("json", "csv", "jsonl")
# Lines a streamed response hands to the server at once (fewer, larger writes).
LINES_PER_PART = 500
# CSV columns: the envelope, then every attribute any type has, in SPEC 8.1's order.
CSV_COLUMNS = [*ENVELOPE, *(name for name in EVENT_SCHEMA if name not in ENVELOPE)]
# Seconds a refused export is told to wait (``Retry-After``): an export that holds a slot
# takes seconds to minutes, and nothing says which ends first.
EXPORT_RETRY_AFTER = 5


class ExportSlots:
    """How many exports stream from this process now: at most
    ``settings.EVENT_EXPORTS_PER_PROCESS`` in all, and at most
    ``settings.EVENT_EXPORTS_PER_CLIENT`` for one client.

    Why: a stream holds a database connection of the process's pool (and, between its pages,
    a transaction) until it ends, and it ends only as fast as its client reads. The throttles
    bound how often a client may start one, not how many run at once, so without this a few
    clients that start exports and read slowly (or not at all) held the whole pool, and every
    other request waited for a connection, then failed. The limit is well below the pool's
    size, so the rest of the API keeps its connections. Counted per process, as the pool is.
    The per-client bound keeps one client, reading slowly, from holding every slot of a
    process and so every other client's exports out (pages are never affected).
    (How long a stream may keep a client that does not read is the handler's:
    ``STREAM_STALL_SECONDS``, ``exchange/handler.py``.)"""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # requests take and give back slots from their threads
        self.taken = 0
        self.by_client: dict[str, int] = {}  # only clients holding a slot

    def take(self, client: str) -> Callable[[], None] | str:
        """A slot for ``client``, as the function that gives it back (once, however often
        it is called), or why there is none: ``"process"`` when every slot is taken, else
        ``"client"`` when this client holds as many as one may."""
        with self._lock:
            if self.taken >= settings.EVENT_EXPORTS_PER_PROCESS:
                return "process"
            if self.by_client.get(client, 0) >= settings.EVENT_EXPORTS_PER_CLIENT:
                return "client"
            self.taken += 1
            self.by_client[client] = self.by_client.get(client, 0) + 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            with self._lock:
                if not given_back:
                    given_back = True
                    self.taken -= 1
                    left = self.by_client.pop(client) - 1
                    if left:
                        self.by_client[client] = left

        return give_back


EXPORT_SLOTS = ExportSlots()


def _exports(count: int) -> str:
    return "one export" if count == 1 else f"{count} exports"


def _query(request: Request) -> dict[str, Any]:
    """The read's filters from the query string; a clear 400 naming the bad one."""
    params = request.query_params
    subject = params.get("subject")
    types = [t for t in params.getlist("type") for t in t.split(",")] or None
    for name in types or ():
        if name not in EVENT_TYPES:
            raise InvalidInput(
                "unknown_type",
                f"There is no event type {name!r}; the types are {', '.join(EVENT_TYPES)}.",
                field="type",
            )
    times = {}
    for name in ("since", "until"):
        raw = params.get(name)
        if raw is not None:
            try:
                times[name] = parse_timestamp(raw, name)
            except EventError as exc:
                raise InvalidInput(f"invalid_{name}", str(exc), field=name) from None
    after = params.get("after")
    return {
        "subject": subject,
        "types": types,
        "after": None if after is None else query_whole_number(params, "after", default=0),
        **times,
    }


def _format(request: Request) -> str:
    # ``format`` would be DRF's own content negotiation parameter; it is ours here.
    value = request.query_params.get("format", "json")
    if value not in FORMATS:
        raise InvalidInput("invalid_format", "format is json, csv or jsonl.", field="format")
    return value


def _next_part(parts: Iterator[Any]) -> Any:
    return next(parts, None)


class PartStreamingResponse(StreamingHttpResponse):
    """A response streamed from a synchronous iterator of parts, one part at a time under
    ASGI too. (Django's own fallback for a synchronous iterator under ASGI reads it whole
    into a list first, which would hold a million-event read in memory.) Each part is
    pulled in the request's thread, where the iterator's database connection lives, and
    an early end (the client went away or stopped reading) closes the iterator there,
    ending its query. ``release`` runs once when the response is closed, after its database
    connection went back to the pool (``request_finished``)."""

    def __init__(
        self, parts: Iterator[Any], *, release: Callable[[], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(parts, **kwargs)
        self._parts = parts
        self._release = release

    def close(self) -> None:
        try:
            super().close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts = self._parts
        pull = sync_to_async(_next_part)
        try:
            while (part := await pull(parts)) is not None:
                yield self.make_bytes(part)
        finally:
            close = getattr(parts, "close", None)
            if close is not None:
                await sync_to_async(close)()


def csv_lines(events: Generator[dict[str, Any], None, None]) -> Iterator[str]:
    """A header, then one line per event (an attribute the event does not have is an
    empty field), handed on ``LINES_PER_PART`` lines at a time. Closing it closes
    ``events``, and so their read, at once."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    with closing(events):
        for count, event in enumerate(events, 1):
            writer.writerow(event)
            if count % LINES_PER_PART == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


_EVENT_PARAMETERS = [
    OpenApiParameter("subject", str, description="a subject pattern (office.>, office.*.pencils)"),
    OpenApiParameter("type", str, description="event types, comma-separated or repeated"),
    OpenApiParameter("after", int, description="only events with a greater seq (resume)"),
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="time at or after (ISO 8601)"),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="time before (ISO 8601)"),
    OpenApiParameter("limit", int, description=f"page size, at most {MAX_LIMIT}"),
    OpenApiParameter(
        "format", str, enum=list(FORMATS), description="csv and jsonl stream every row"
    ),
]


class EventList(KnownParameters, APIView):
    """The events you may see (SPEC 8.1, 5.6), in ``seq`` order, paginated by ``seq``."""

    permission_classes = [permissions.AllowAny]
    query_parameters = _EVENT_PARAMETERS

    def perform_content_negotiation(self, request, force=False):
        # ``format`` names the output here (csv, jsonl), not one of DRF's renderers.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        responses={
            # One description per status in OpenAPI: the first media type's says all three.
            (200, "application/json"): OpenApiResponse(
                inline_serializer(
                    "EventPage",
                    {
                        "results": serializers.ListField(child=serializers.DictField()),
                        "next": serializers.CharField(allow_null=True),
                    },
                ),
                description="format=json (the default): a page of events and the next page's "
                "URL. format=csv (text/csv): every matching event, a header line (the "
                "envelope, then every attribute of any type) and one line per event, an "
                "attribute the event lacks left empty. format=jsonl (application/x-ndjson): "
                "every matching event, one JSON object per line as in `results`.",
            ),
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
        },
    )
    def get(self, request: Request) -> Response | StreamingHttpResponse:
        kind = _format(request)
        query = _query(request)
        try:
            events = events_read(user=request.user, **query)
        except SubjectError as exc:
            raise InvalidInput(
                "invalid_subject", exc.message, field="subject", position=exc.position
            ) from None
        if kind in ("jsonl", "csv"):
            return self._stream(request, kind, query)
        limit = min(
            query_whole_number(request.query_params, "limit", default=DEFAULT_LIMIT), MAX_LIMIT
        )
        page = list(events[: max(limit, 1)])
        following = None
        if len(page) == max(limit, 1):
            params = request.query_params.copy()
            params["after"] = str(page[-1].seq)
            following = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        return Response({"results": [event_json(e) for e in page], "next": following})

    @staticmethod
    def _stream(request: Request, kind: str, query: dict[str, Any]) -> StreamingHttpResponse:
        """Every matching event up to the log's end at the start of the request, if one of
        this process's export slots is free (else a 429 ``too_many_exports``, before
        anything is read); the slot is given back when the response is closed."""
        release = EXPORT_SLOTS.take(client_of(request))
        if isinstance(release, str):
            # The throttles' answer (429, Retry-After and error.retry_after), which clients
            # already wait and retry on.
            detail = (
                f"This server streams at most {settings.EVENT_EXPORTS_PER_PROCESS} "
                "exports at once; retry, or read format=json pages."
                if release == "process"
                else f"This server streams at most {_exports(settings.EVENT_EXPORTS_PER_CLIENT)}"
                " at once to one client, and you have that many streaming; retry once one "
                "ends, or read format=json pages."
            )
            raise exceptions.Throttled(
                wait=EXPORT_RETRY_AFTER, detail=detail, code="too_many_exports"
            )
        try:
            user, after, upto = request.user, query["after"] or 0, history_end()
            where = HistoryWhere(
                since=query.get("since"),
                until=query.get("until"),
                types=None if query["types"] is None else frozenset(query["types"]),
                subject=query["subject"],
            )
            if kind == "jsonl":
                lines = history_lines(user=user, after=after, upto=upto, where=where)
                return PartStreamingResponse(
                    lines, release=release, content_type="application/x-ndjson"
                )
            events = history_events(user=user, after=after, upto=upto, where=where)
            return PartStreamingResponse(
                csv_lines(events), release=release, content_type="text/csv"
            )
        except BaseException:
            release()  # no response holds it (the database was away, say)
            raise


class EventTypes(KnownParameters, APIView):
    """Every event type with its attributes, their SPEC 2.1 types and who may see it."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        responses=inline_serializer(
            "EventTypes",
            {
                "envelope": serializers.ListField(child=serializers.DictField()),
                "types": serializers.ListField(child=serializers.DictField()),
            },
        )
    )
    def get(self, request: Request) -> Response:
        return Response(
            {
                "envelope": [{"name": n, "type": EVENT_SCHEMA[n].value} for n in ENVELOPE],
                "types": [
                    {
                        "type": spec.name,
                        "attributes": [
                            {
                                "name": name,
                                # a quantity takes its market's quantity type, int or decimal
                                "type": "int|decimal"
                                if name in QUANTITY_ATTRIBUTES
                                else EVENT_SCHEMA[name].value,
                                "optional": name in spec.optional,
                            }
                            for name in spec.attributes
                        ],
                        "visible_to": "everyone"
                        if spec.visible_to == EVERYONE
                        else "the bidder and staff",
                    }
                    for spec in EVENT_TYPES.values()
                ],
            }
        )
