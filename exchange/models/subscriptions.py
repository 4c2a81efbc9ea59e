"""Live subscriptions (SPEC 8.3): the registered query and its outbox of notifications.

A ``Subscription`` row is everything a worker needs to go on where the last one stopped:
the query's canonical text, the registration time ``now`` and the log's ``seam`` (the
last ``seq`` in the log at registration: events up to it are history, later ones live),
the ``cursor`` (the last ``seq`` fed to the evaluator), the last ``n`` given out and the
evaluator's own state. ``services.subscriptions`` advances all of them together in one
transaction with the notifications they produced, so a worker that dies in between
leaves the row as it was and the next one redoes exactly that step.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Subscription(models.Model):
    class Kind(models.TextChoices):
        EVENTS = "events"
        COMPOSITE = "composite"
        PATTERN = "pattern"
        STATE = "state"

    class State(models.TextChoices):
        ACTIVE = "active"
        # Kept as it stands (cursor, evaluator) and not advanced until resumed.
        PAUSED = "paused"
        DONE = "done"
        SUSPENDED = "suspended"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    query = models.TextField()  # canonical text
    state = models.CharField(max_length=20, choices=State.choices, default=State.ACTIVE)
    # Why it is no longer active: "completed", "deleted", "state_limit" or "error".
    reason = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField()
    now = models.DateTimeField()  # the query's NOW
    seam = models.BigIntegerField()
    cursor = models.BigIntegerField()
    last_n = models.IntegerField(default=0)
    # The evaluator as a worker left it (a snapshot, matching/subscriptions/run/snapshot.py);
    # emptied once it is neither active nor paused.
    evaluator = models.BinaryField(null=True)
    # How many notifications the evaluator had given when it was stored (``cursor`` and
    # ``evaluator`` are a checkpoint): the subscription engine, restoring it, replays the
    # log from ``cursor`` and skips the first ``last_n - checkpoint_n`` outputs, which are
    # in the outbox already (``exchange.subscription_engine``). The advance pass stores
    # every step, so it keeps it equal to ``last_n``.
    checkpoint_n = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["active", "paused", "done", "suspended"]),
                name="subscription_state_known",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["events", "composite", "pattern", "state"]),
                name="subscription_kind_known",
            ),
            models.CheckConstraint(
                condition=models.Q(cursor__gte=0, seam__gte=0, last_n__gte=0),
                name="subscription_counters_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(checkpoint_n__gte=0, checkpoint_n__lte=models.F("last_n")),
                name="subscription_checkpoint_n_within",
            ),
            models.CheckConstraint(
                condition=~models.Q(state__in=["active", "paused"])
                | models.Q(evaluator__isnull=False),
                name="subscription_active_has_evaluator",
            ),
        ]
        indexes = [
            models.Index(fields=["owner", "id"], name="subscription_owner"),
            models.Index(
                fields=["id"], name="subscription_active", condition=models.Q(state="active")
            ),
        ]

    def __str__(self) -> str:
        return f"subscription {self.pk} ({self.kind}, {self.state})"


class SubscriptionNotification(models.Model):
    """One output of a subscription: ``n`` counts 1, 2, 3, ... per subscription with no
    holes (the unique constraint and the single writer per subscription keep it so);
    ``seq`` is the event that caused it (None only for a watch's first answer when it had
    no history, SPEC 8.3's fine points)."""

    # No index of its own: ``subscription_n_once`` starts with it and serves every lookup by
    # subscription (the outbox, the cascade); one index less to write for each of the
    # thousands of notifications a second the engine inserts (issue 35). No constraint of
    # PostgreSQL's either: its foreign key locked and checked the subscription once per
    # inserted row (about 9 of the backend's 20 us a notification), where the triggers of
    # migration 0028 do it once per statement with the same guarantee: every notification
    # names an existing subscription (locked FOR KEY SHARE, as the foreign key locks it), and
    # no subscription is deleted while one names it. They check at the end of each statement,
    # not at the commit: a subscription is written before its notifications, and its
    # notifications deleted before it (the ORM's cascade does).
    subscription = models.ForeignKey(
        Subscription,
        on_delete=models.CASCADE,
        related_name="notifications",
        db_index=False,
        db_constraint=False,
    )
    n = models.IntegerField()
    seq = models.BigIntegerField(null=True)
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subscription", "n"], name="subscription_n_once"),
            models.CheckConstraint(condition=models.Q(n__gte=1), name="subscription_n_positive"),
        ]

    def __str__(self) -> str:
        return f"subscription {self.subscription_id} #{self.n}"


class SubscriptionPartition(models.Model):
    """One partition of the live subscriptions (``id % SUBSCRIPTION_ENGINE_PARTITIONS``) and
    its lease: the engine process ``owner`` advances its subscriptions until
    ``expires_at``, renewing it as it goes; another process may take it once it has
    expired. ``cursor`` is the last ``seq`` whose notifications are in the outboxes of its
    followed subscriptions, committed with them; ``checkpointed_at`` and
    ``checkpoint_cursor`` say when the evaluators were last stored and where. ``book``: the
    open offers at ``checkpoint_cursor`` (``snapshot.book_dump``), which the form 4 watches
    checkpointed then left out of their own snapshots (the engine's ``WatchHub`` holds
    them once); None when none of its watches was."""

    partition = models.IntegerField(primary_key=True)
    owner = models.CharField(max_length=100, blank=True)
    expires_at = models.DateTimeField(null=True)
    cursor = models.BigIntegerField(default=0)
    checkpoint_cursor = models.BigIntegerField(default=0)
    checkpointed_at = models.DateTimeField(null=True)
    book = models.BinaryField(null=True)

    def __str__(self) -> str:
        return f"partition {self.partition} ({self.owner or 'free'})"


class SubscriptionEngineProcess(models.Model):
    """A running subscription engine process and its last heartbeat: the live ones share
    the partitions between them (``exchange.subscription_engine.leases``) and ``/healthz``
    counts them. ``lag`` is how many events it was behind the log at its last beat,
    ``subscriptions`` how many were in its live set."""

    name = models.CharField(max_length=100, primary_key=True)
    heartbeat_at = models.DateTimeField()
    started_at = models.DateTimeField()
    partitions = models.IntegerField(default=0)
    cursor = models.BigIntegerField(default=0)
    lag = models.BigIntegerField(default=0)
    subscriptions = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"subscription engine {self.name}"
