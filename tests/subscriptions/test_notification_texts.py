"""The ``sub:`` stream's batched replay reads each notification as JSON text
(``subscription_notification_texts``): exactly the text the parsed notification gives
(``compact(notification_json(...))``), whichever parts PostgreSQL spells and whichever
Python respells."""

from __future__ import annotations

import pytest
from django.db import connection

from exchange.realtime.replay import compact
from exchange.selectors.subscriptions import (
    subscription_notification_texts,
    subscription_notifications,
)
from exchange.services.subscriptions import subscription_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# The stored JSON as text, as any writer may have left it in ``jsonb``.
STORED = [
    '{"price": "1.10", "offer": 7}',  # the common case: strings and whole numbers
    "{}",
    '{"a": null, "b": true, "c": false, "d": -12, "e": 0, "f": 123456789012345678901234}',
    '{"x": 1.50, "y": 2e3, "z": -0.0}',  # numbers jsonb may spell unlike Python
    '{"nested": {"k": [1, "two", {"three": 3}]}, "s": "a, b: c"}',
    '{"text": "caf\\u00e9 \\u2603", "ctl": "tab\\tnew\\nline \\u0001 \\"q\\" \\\\ /"}',
    '{"del": "\\u007f", "long key with spaces": "v"}',
    "[1, 2, 3]",  # not an object
    '"just text"',
    '{"éclair": 1}',
]


def test_each_notification_text_is_what_the_parsed_notification_gives():
    sub = subscription_create(owner=UserFactory(), query="SELECT price")
    with connection.cursor() as cursor:
        for n, data in enumerate(STORED, 1):
            cursor.execute(
                "INSERT INTO exchange_subscriptionnotification "
                "(subscription_id, n, seq, data, created_at) VALUES (%s, %s, %s, %s::jsonb, now())",
                [sub.pk, n, None if n == 3 else 100 + n, data],
            )

    texts = subscription_notification_texts(
        subscription_id=sub.pk, after=0, upto=len(STORED), limit=100
    )

    notes = subscription_notifications(subscription_id=sub.pk, after=0, limit=100)
    assert texts == [(note["n"], compact(note)) for note in notes]
    assert len(texts) == len(STORED)
    # the bounds as for the parsed read: after < n <= upto, at most limit
    assert (
        subscription_notification_texts(subscription_id=sub.pk, after=2, upto=6, limit=3)
        == texts[2:5]
    )
