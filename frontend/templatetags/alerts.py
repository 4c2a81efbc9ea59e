"""Alerts on every page (issue 39): the subscriptions the header follows, and the account's
list of the newest alert notifications, without a view having to ask for them."""

from __future__ import annotations

import json
from typing import Any

from django import template

from exchange.selectors import ui
from frontend.alert_notes import notes_presented

register = template.Library()
# Alert notifications the account page lists.
RECENT = 20


@register.simple_tag(takes_context=True)
def alerts_followed(context: dict[str, Any]) -> str:
    """The user's active and paused subscriptions as JSON for ``<body data-alerts>``:
    ``[{"id", "name", "after"}]``, ``after`` the last ``n`` as the page is read, so the
    header's script resumes each ``sub:<id>`` after it (what comes later is toasted once)."""
    user = context["request"].user
    if not user.is_authenticated:
        return "[]"
    return json.dumps(ui.alerts_followed(owner=user), separators=(",", ":"))


@register.inclusion_tag("frontend/_alert_recent.html", takes_context=True)
def alerts_recent(context: dict[str, Any]) -> dict[str, Any]:
    user = context["request"].user
    recent = ui.alerts_recent(owner=user, limit=RECENT)
    notes = notes_presented(
        user=user,
        notes=[
            {**note, "name": sub.name or f"Subscription {sub.pk}", "sid": sub.pk}
            for sub, note in recent
        ],
    )
    return {"notes": notes, "request": context["request"]}
