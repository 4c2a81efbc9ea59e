"""The event log of SPEC 8.1: one append-only, time-partitioned table and its counter.

``Event`` rows are written by one writer, ``services.events.events_append``, which runs
under the matching cycle's lock; see there for why ``seq`` has no holes.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from matching.subscriptions.language.schema import EVENT_TYPES, OWNER_AND_STAFF

from .jsonb import jsonb_is, jsonb_matches_none

# The parent table's name; its partitions are ``<EVENT_TABLE>_pYYYYMMDD`` (one per UTC day)
# and ``<EVENT_TABLE>_default`` for a time no daily partition covers yet.
EVENT_TABLE = "exchange_event"

PRIVATE_TYPES = sorted(t.name for t in EVENT_TYPES.values() if t.visible_to == OWNER_AND_STAFF)


class Event(models.Model):
    """One event. ``data`` holds the attributes of its type beyond the envelope, already in
    their JSON form (decimals as strings, timestamps with ``Z``); an absent attribute is
    not a key, never a null. ``owner`` is the bidder of a private (``bid_*``) event and
    null for a public one.

    The table is partitioned by ``time`` (declarative partitioning, created by migration
    0009 in SQL), so the primary key has to include ``time``.
    """

    pk = models.CompositePrimaryKey("seq", "time")
    seq = models.BigIntegerField()
    time = models.DateTimeField()
    type = models.CharField(max_length=20)
    subject = models.CharField(max_length=200)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    data = models.JSONField()

    class Meta:
        db_table = EVENT_TABLE
        indexes = [
            models.Index(fields=["time"], name="event_time"),
            # Historic reads of one market or of some types walk these in seq order
            # (selectors/history.py; the plans are in docs/events.md).
            models.Index(fields=["subject", "seq"], name="event_subject_seq"),
            models.Index(fields=["type", "seq"], name="event_type_seq"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(type__in=sorted(EVENT_TYPES)), name="event_type_known"
            ),
            models.CheckConstraint(
                condition=models.Q(type__in=PRIVATE_TYPES, owner__isnull=False)
                | (~models.Q(type__in=PRIVATE_TYPES) & models.Q(owner__isnull=True)),
                name="event_owner_iff_private",
            ),
            # SPEC 8.1: an attribute an event does not have is absent, never null.
            models.CheckConstraint(
                condition=jsonb_is("data", "object")
                & jsonb_matches_none("data", "strict $.* ? (@ == null)"),
                name="event_data_object_without_nulls",
            ),
        ]

    def __str__(self) -> str:
        return f"event {self.seq}: {self.type} on {self.subject}"


class EventCounter(models.Model):
    """The log's one-row counter: the last ``seq`` and ``time`` given out, and the last
    ``BestOfferChange`` turned into an event. A row (not a PostgreSQL sequence) so that a
    rolled-back writer gives its numbers back, and its row lock orders the writers."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_seq = models.BigIntegerField(default=0)
    last_time = models.DateTimeField(null=True)
    best_change_id = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(id=1), name="eventcounter_one_row")
        ]

    def __str__(self) -> str:
        return f"event log at seq {self.last_seq}"
