"""The Alerts and feeds page (SPEC 8.4): write a subscription with a check as you type, start
from a gallery, follow each subscription's live feed, pause, resume, delete, and backtest a
query over the last hour, day or week on the market's price chart.

``/alerts/?query=<text>&name=<text>`` opens the editor filled in with that query and name;
nothing is saved until the user presses Save (the market and offer pages' shortcuts link
here). Every action is a plain form post that works without JavaScript; ``alerts.js`` adds
the check as you type, the live feeds and the chart.

Each feed is drawn from the outbox: the newest ``FEED_SHOWN`` notifications up to the
subscription's last ``n`` when the page was read. The page's script resumes ``sub:<id>``
after the newest one drawn, so a reload shows what arrived while the page was away and then
goes on live, with no gap and no notification twice.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from exchange.errors import ExchangeError, InvalidInput
from exchange.http import json_bounded, whole_number
from exchange.models import Subscription
from exchange.selectors import ui
from exchange.selectors.subscriptions import (
    subscription_backtest,
    subscription_list,
    subscription_query_parsed,
    subscription_query_warnings,
)
from exchange.selectors.webhooks import webhook_secret_created
from exchange.services.subscriptions import (
    MAX_NAME,
    subscription_create,
    subscription_delete,
    subscription_pause,
    subscription_resume,
)
from exchange.services.webhooks import subscription_webhook_set, webhook_secret_rotate
from exchange.throttling import throttle_wait
from frontend.alert_notes import notes_presented
from matching.subscriptions import to_text

from .common import (
    AuthenticatedRequest,
    check_throttled,
    is_htmx,
    live_context,
    login_required,
    price_precision,
)

EXAMPLE_SUBJECT = "office.supplies.pencils"
T = "FILTER{type = 'trade'}(EVENTS)"
# The gallery: one example per form of issue 23, as (title, query). ``{subject}`` and
# ``{offer}`` are filled in per user (``gallery``).
GALLERY = (
    (
        "Trades above a price, since an hour ago",
        "SELECT subject, price WHERE type = 'trade', price > 1.00, start_time = NOW - 1h",
    ),
    (
        "Average of each 10 trades per market",
        "SELECT subject, AVG(price, 10) WHERE type = 'trade' GROUP BY subject",
    ),
    (
        "A trade, then a 5% jump",
        f"SELECT a.price, b.price FROM {T} AS a "
        f"NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} {T} AS b",
    ),
    (
        "Prices rising for 30 minutes",
        f"SELECT a.price, b.price, n, DUR FROM {T} AS a "
        f"FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} {T} AS b "
        "WHERE DUR >= 30m",
    ),
    (
        "The cheapest offer for a lot of 2,000 to 5,000",
        "SELECT MIN(ask) FROM offers WHERE subject = '{subject}', "
        "quantity_max BETWEEN 2000 AND 5000",
    ),
    (
        "The best bid of my offer moved by 3%",
        "SELECT best_value FROM offers WHERE offer = {offer} NOTIFY WHEN CHANGED BY 3%",
    ),
)
# The backtest's ranges: each ends now.
RANGES = {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1), "week": dt.timedelta(weeks=1)}
# Why a subscription is no longer active, as the page says it.
REASONS = {
    "completed": "completed: its end time has passed",
    "deleted": "deleted",
    "state_limit": "suspended: it passed a limit on its kept events, work or outputs (state_limit)",
    "error": "suspended: it failed while evaluating (see its last notification)",
}
# Rows (and markers) a backtest shows at most; the rest is counted.
BACKTEST_SHOWN = 500


class BacktestThrottled(ExchangeError):
    status = 429


@dataclass(frozen=True)
class Editor:
    """The editor's contents and, after a refused save or backtest, what was wrong."""

    query: str = ""
    name: str = ""
    range: str = "day"
    error: dict[str, Any] | None = None


def gallery(user: Any) -> list[dict[str, str]]:
    """The examples for ``user``: the offer watch names their newest open offer (offer 1
    when they have none, which they edit before saving)."""
    offer = ui.alerts_open_offer(owner=user)
    subject = offer.market.subject if offer is not None else EXAMPLE_SUBJECT
    fill = {"subject": subject, "offer": str(offer.pk if offer is not None else 1)}
    return [
        {
            "title": title,
            "query": query.replace("{subject}", fill["subject"]).replace("{offer}", fill["offer"]),
        }
        for title, query in GALLERY
    ]


def _notes(user: Any, notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return notes_presented(user=user, notes=notes)


def _archived(subscription: Subscription) -> bool:
    return subscription.state == Subscription.State.DONE and subscription.reason == "deleted"


def _page(
    request: AuthenticatedRequest,
    *,
    editor: Editor,
    backtest: dict[str, Any] | None = None,
    status: int = 200,
    new_secret: str = "",
) -> HttpResponse:
    user = request.user
    live = live_context(request, [])
    # A deleted subscription is archived out of the list (the API still lists it).
    listed = list(subscription_list(owner=user).select_related("webhook"))
    subscriptions = [s for s in listed if not _archived(s)]
    feeds = ui.alerts_feeds(owner=user)
    flat = _notes(user, [{**note, "sid": sid} for sid, notes in feeds.items() for note in notes])
    presented: dict[int, list[dict[str, Any]]] = {}
    for note in flat:
        presented.setdefault(note.pop("sid"), []).append(note)
    rows = [
        {
            "subscription": s,
            "feed": presented.get(s.pk, []),
            "following": s.state in (Subscription.State.ACTIVE, Subscription.State.PAUSED),
            "reason": REASONS.get(s.reason, s.reason) if s.reason else "",
        }
        for s in subscriptions
    ]
    for row in rows:
        row["webhook"] = getattr(row["subscription"], "webhook", None)
    context = {
        "archived": len(listed) - len(subscriptions),
        "secret_created": webhook_secret_created(owner=user),
        "new_secret": new_secret,
        "editor": editor,
        "gallery": gallery(user),
        "rows": rows,
        "ranges": list(RANGES),
        "backtest": backtest,
        "max_name": MAX_NAME,
        "feed_shown": ui.FEED_SHOWN,
        **live,
    }
    return render(request, "frontend/alerts.html", context, status=status)


@login_required
def alerts(request: AuthenticatedRequest) -> HttpResponse:
    """GET: the page, the editor filled in from ``?query=&name=``. POST: save the editor's
    query (a refused one is shown again with its error marked, status 400, nothing saved)."""
    source = request.POST if request.method == "POST" else request.GET
    editor = Editor(
        query=source.get("query", ""),
        name=source.get("name", "")[:MAX_NAME],
        range=source.get("range", "day") if source.get("range") in RANGES else "day",
    )
    if request.method != "POST":
        return _page(request, editor=editor)
    try:
        subscription = subscription_create(owner=request.user, query=editor.query, name=editor.name)
    except ExchangeError as exc:
        return _page(
            request,
            editor=Editor(editor.query, editor.name, editor.range, exc.as_dict()),
            status=400,
        )
    messages.success(request, f"Saved subscription {subscription.pk}: its feed is below.")
    return redirect(f"{reverse('frontend:alerts')}#sub-{subscription.pk}")


@require_POST
@login_required
def alerts_check(request: AuthenticatedRequest) -> JsonResponse:
    """Check a query without saving it (the editor calls this as you type): ``{"query":
    canonical text, "kind", "warnings": [{"code", "message", "position"?}]}`` (warnings:
    ``subscription_query_warnings``, such as a subject pattern no market matches yet; the
    query may still be saved), or ``{"error": {"code", "message", "position"?}}`` with status
    400 (``position`` 0-based, as the API gives it; the page shows it 1-based), 429 past the
    ``check`` rate per client, as the constraint box's check."""
    throttled = check_throttled(request)
    if throttled is not None:
        return throttled
    try:
        body = json_bounded(request.read(settings.JSON_MAX_BYTES + 1))
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            raise InvalidInput("bad_request", 'Send {"query": "<text>"} as JSON.', field="query")
        parsed = subscription_query_parsed(text=body["query"])
    except ExchangeError as exc:
        return JsonResponse({"error": exc.as_dict()}, status=exc.status)
    warnings = subscription_query_warnings(query=parsed, text=body["query"])
    return JsonResponse({"query": to_text(parsed), "kind": parsed.kind.value, "warnings": warnings})


ACTIONS = {
    "pause": (subscription_pause, "Paused subscription {id}: it keeps its place."),
    "resume": (subscription_resume, "Resumed subscription {id}: it catches up from where it was."),
    "delete": (
        subscription_delete,
        "Deleted subscription {id}: it sends nothing more and is archived out of this list.",
    ),
}


@require_POST
@login_required
def alert_action(request: AuthenticatedRequest, subscription_id: str, action: str) -> HttpResponse:
    """Pause, resume or delete one of the user's subscriptions, then back to its place on the
    page; a refusal (someone else's, or one that has ended) is said there, nothing changed."""
    service, done = ACTIONS[action]
    number = whole_number(subscription_id)
    try:
        if number is None:
            raise InvalidInput("not_found", f"You have no subscription {subscription_id}.")
        service(owner=request.user, subscription_id=number)
    except ExchangeError as exc:
        messages.error(request, exc.message)
        return redirect("frontend:alerts")
    messages.success(request, done.format(id=number))
    return redirect(f"{reverse('frontend:alerts')}#sub-{number}")


def _chart(
    request: AuthenticatedRequest,
    notes: list[dict[str, Any]],
    since: dt.datetime,
    until: dt.datetime,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The backtest's rows with their events' time and market, and the chart: the market's
    trade prices over the range with a marker at each notification's time (one point and one
    marker per second, the chart's resolution)."""
    places = ui.alerts_event_places(
        user=request.user, seqs=[note["seq"] for note in notes if note["seq"] is not None]
    )
    rows = [
        {**note, "subject": places.get(note["seq"], (None, None))[1]}
        for note in _notes(request.user, notes)
    ]
    subject = ui.alerts_chart_subject(places)
    if subject is None:
        return rows, None
    market = ui.market_get(subject=subject)
    values = {
        int(time.timestamp()): float(price)
        for time, price in ui.alerts_trade_prices(subject=subject, since=since, until=until)
    }
    marks: dict[int, list[int]] = {}
    for row in rows:
        if row["subject"] == subject and row["time"] is not None:
            marks.setdefault(int(row["time"].timestamp()), []).append(row["n"])
    points = [
        {"time": second, "value": values[second]} if second in values else {"time": second}
        for second in sorted(values.keys() | marks.keys())
    ]
    markers = [
        {
            "time": second,
            "text": "#" + ",".join(str(n) for n in ns[:3]) + ("…" if len(ns) > 3 else ""),
        }
        for second, ns in sorted(marks.items())
    ]
    return rows, {
        "subject": subject,
        "title": market.title if market is not None else subject,
        "precision": price_precision(market) if market is not None else 2,
        "points": points,
        "markers": markers,
    }


@require_POST
@login_required
def alerts_backtest(request: AuthenticatedRequest) -> HttpResponse:
    """Run the editor's query over the last hour, day or week (``range``) with the backtest's
    one evaluator, as if registered at the range's start: what it would have sent, as a
    table and on the price chart of the market most of it is about. Throttled per user on
    the API's ``backtest`` rate. htmx gets the result's fragment (an error in it, status 200
    so that it is shown); a plain post the whole page, with the error's status."""
    editor = Editor(
        query=request.POST.get("query", ""),
        name=request.POST.get("name", "")[:MAX_NAME],
        range=request.POST.get("range", ""),
    )
    result: dict[str, Any]
    status = 200
    try:
        # The API's backtest rate, on the same counter (DRF keys a user's scope by their id).
        wait = throttle_wait(request, [("backtest", str(request.user.pk))])
        if wait is not None:
            raise BacktestThrottled(
                "throttled", f"Too many backtests; try again in {wait} seconds."
            )
        if editor.range not in RANGES:
            raise InvalidInput("invalid_range", "Choose the last hour, day or week.", field="range")
        query = subscription_query_parsed(text=editor.query)
        until = timezone.now()
        since = until - RANGES[editor.range]
        run = subscription_backtest(user=request.user, query=query, since=since, until=until)
        rows, chart = _chart(request, run.notifications[:BACKTEST_SHOWN], since, until)
        result = {
            "range": editor.range,
            "query": to_text(query),
            "since": since,
            "until": until,
            "count": len(run.notifications),
            "rows": rows,
            "chart": chart,
            "truncated": run.truncated,
            "events_read": run.events_read,
        }
    except ExchangeError as exc:
        result = {"error": exc.as_dict(), "query": editor.query}
        status = exc.status
    if is_htmx(request):
        return render(request, "frontend/_alert_backtest.html", {"backtest": result})
    return _page(
        request,
        editor=Editor(editor.query, editor.name, editor.range if status == 200 else "day"),
        backtest=result,
        status=status,
    )


# Notifications one ``alert_notes`` answer carries at most.
NOTES_PAGE = 100


@login_required
def alert_notes(request: AuthenticatedRequest, subscription_id: str) -> JsonResponse:
    """The user's subscription's notifications after ``n`` = ``?after=`` (at most ``?limit=``,
    100), drawn as the page draws them: ``{"name", "notes": [{"n", "text", "html"}]}`` in
    ``n`` order. The live feed and every page's toasts fetch the rows a ``sub:<id>`` frame
    announced from here, so they show the event's time and units. 404 for anyone else's."""
    number = whole_number(subscription_id)
    after = whole_number(request.GET.get("after", "0"))
    limit = whole_number(request.GET.get("limit", str(NOTES_PAGE)))
    if after is None or limit is None:
        return JsonResponse(
            {"error": {"code": "bad_request", "message": "after and limit are whole numbers."}},
            status=400,
        )
    notes = (
        None
        if number is None
        else ui.alerts_notes(
            owner=request.user,
            subscription_id=number,
            after=after,
            limit=max(1, min(limit, NOTES_PAGE)),
        )
    )
    if notes is None:
        return JsonResponse(
            {
                "error": {
                    "code": "not_found",
                    "message": f"You have no subscription {subscription_id}.",
                }
            },
            status=404,
        )
    rows = _notes(request.user, notes)
    return JsonResponse(
        {
            "notes": [
                {
                    "n": note["n"],
                    "text": note["text"],
                    "tone": note["tone"],
                    "html": render_to_string(
                        "frontend/_alert_note.html", {"note": note}, request=request
                    ).strip(),
                }
                for note in rows
            ]
        }
    )


@require_POST
@login_required
def alert_webhook(request: AuthenticatedRequest, subscription_id: str) -> HttpResponse:
    """Set (``url``) or remove (empty) the webhook of one of the user's subscriptions, with
    the API's rules (docs/api.md, "Webhooks"); a refusal is said on the page, nothing
    changed."""
    number = whole_number(subscription_id)
    url = request.POST.get("url", "").strip()
    try:
        if number is None:
            raise InvalidInput("not_found", f"You have no subscription {subscription_id}.")
        subscription_webhook_set(owner=request.user, subscription_id=number, url=url or None)
    except ExchangeError as exc:
        messages.error(request, exc.message)
        return redirect(f"{reverse('frontend:alerts')}#sub-{subscription_id}")
    done = f"Webhook of subscription {number} set to {url}." if url else "Webhook removed."
    messages.success(request, done)
    return redirect(f"{reverse('frontend:alerts')}#sub-{number}")


@require_POST
@login_required
def alerts_webhook_secret(request: AuthenticatedRequest) -> HttpResponse:
    """Make or rotate the user's webhook signing secret and show it, this once."""
    secret = webhook_secret_rotate(owner=request.user)
    return _page(request, editor=Editor(), new_secret=secret)
