"""A notification always names an existing subscription (migration 0028): no foreign key
constraint in PostgreSQL (its check cost one locking query per inserted row), but triggers
that check each statement's rows at once, with the same locks.

The module runs outside a test transaction (``transaction=True``): the concurrent tests
need two sessions that commit, and the others show that each statement is checked at its
end, not at the commit as the deferred constraint was."""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from exchange.models import Subscription, SubscriptionNotification
from exchange.subscription_engine.engine import Notes, _write
from tests.exchange.test_lock_order import session, started, waits, watcher
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["watcher"]  # the fixture, imported for these tests

MISSING = 10**9
TRIGGERS = [
    ("exchange_subscription", "exchange_subscription_children_delete"),
    ("exchange_subscription", "exchange_subscription_children_truncate"),
    ("exchange_subscription", "exchange_subscription_children_update"),
    ("exchange_subscriptionnotification", "exchange_subscriptionnotification_parents_insert"),
    ("exchange_subscriptionnotification", "exchange_subscriptionnotification_parents_update"),
]


def subscriptions(count: int, owner=None) -> list[Subscription]:
    """``count`` ended subscriptions of ``owner`` (a new user if None): rows to hang
    notifications on, with nothing to advance."""
    owner = owner or UserFactory()
    now = timezone.now()
    return [
        Subscription.objects.create(
            owner=owner,
            kind="events",
            query="SELECT *",
            state="done",
            reason="completed",
            created_at=now,
            now=now,
            seam=0,
            cursor=0,
        )
        for _ in range(count)
    ]


def engine_insert(ids: list[int]) -> None:
    """One notification (n = 1) for each id, in the engine's own statement (``_write``:
    one INSERT for all of them), in a transaction of its own."""
    notes = Notes()
    for sub_id in ids:
        notes.add(sub_id, 1, [(1, {"price": "1.10"})])
    with transaction.atomic():
        _write(notes, [])


def notified() -> list[int]:
    return list(
        SubscriptionNotification.objects.order_by("subscription_id").values_list(
            "subscription_id", flat=True
        )
    )


def test_the_engines_insert_of_existing_subscriptions_is_written():
    subs = subscriptions(3)
    engine_insert([s.pk for s in subs])
    assert notified() == [s.pk for s in subs]


def test_an_insert_naming_a_missing_subscription_fails_whole_and_writes_nothing():
    subs = subscriptions(2)
    # When the engine's one INSERT names a missing subscription between two existing ones
    with pytest.raises(psycopg.errors.ForeignKeyViolation) as raised:
        engine_insert([subs[0].pk, MISSING, subs[1].pk])
    # Then the statement fails as a foreign key does (SQLSTATE 23503), naming the id
    assert raised.value.sqlstate == "23503"
    assert raised.value.diag.constraint_name == "exchange_subscriptionnotification_parents"
    assert raised.value.diag.message_primary == (
        'insert or update on table "exchange_subscriptionnotification" names subscription '
        f"{MISSING}, which does not exist"
    )
    # and writes nothing, not even the other two's
    assert notified() == []


def test_the_orms_writes_are_refused_at_the_statement_not_at_the_commit():
    (sub,) = subscriptions(1)
    # An ORM create naming no subscription fails at once, inside its transaction
    with transaction.atomic():
        with pytest.raises(IntegrityError) as raised, transaction.atomic():
            SubscriptionNotification.objects.create(subscription_id=MISSING, n=1, data={})
        assert raised.value.__cause__.sqlstate == "23503"
        # A bulk create with one bad row of three fails whole
        with pytest.raises(IntegrityError) as raised, transaction.atomic():
            SubscriptionNotification.objects.bulk_create(
                SubscriptionNotification(subscription_id=i, n=n, data={})
                for i, n in ((sub.pk, 1), (MISSING, 1), (sub.pk, 2))
            )
        assert raised.value.__cause__.sqlstate == "23503"
    assert notified() == []
    # An update that moves a notification to a missing subscription fails too
    note = SubscriptionNotification.objects.create(subscription=sub, n=1, data={})
    with pytest.raises(IntegrityError):
        SubscriptionNotification.objects.filter(pk=note.pk).update(subscription_id=MISSING)
    assert notified() == [sub.pk]


def test_a_subscription_with_notifications_is_deleted_only_after_them():
    subs = subscriptions(2)
    engine_insert([s.pk for s in subs])
    # A DELETE of the subscriptions alone fails and deletes nothing (the foreign key's NO
    # ACTION)
    with pytest.raises(IntegrityError) as raised:
        Subscription.objects.filter(pk__in=[s.pk for s in subs])._raw_delete("default")
    assert raised.value.__cause__.sqlstate == "23503"
    assert raised.value.__cause__.diag.message_primary == (
        'delete on table "exchange_subscription" leaves notifications naming subscription '
        f"{subs[0].pk}"
    )
    assert Subscription.objects.count() == 2
    assert notified() == [s.pk for s in subs]
    # and so does a change of a named subscription's id
    with pytest.raises(IntegrityError):
        Subscription.objects.filter(pk=subs[1].pk).update(id=MISSING)
    # Once the first's notifications are deleted, the first may go; the second may not
    SubscriptionNotification.objects.filter(subscription=subs[0]).delete()
    Subscription.objects.filter(pk=subs[0].pk)._raw_delete("default")
    assert list(Subscription.objects.values_list("pk", flat=True)) == [subs[1].pk]
    assert notified() == [subs[1].pk]


def test_the_orms_cascade_deletes_the_notifications_with_the_subscription_and_its_owner():
    owner = UserFactory()
    subs = subscriptions(2, owner=owner)
    other = subscriptions(1)
    engine_insert([s.pk for s in subs + other])
    # Deleting a subscription through the ORM deletes its notifications first
    subs[0].delete()
    assert notified() == [subs[1].pk, other[0].pk]
    # and deleting its owner deletes the rest of the owner's, and no one else's
    owner.delete()
    assert list(Subscription.objects.values_list("pk", flat=True)) == [other[0].pk]
    assert notified() == [other[0].pk]


def test_a_truncate_of_the_subscriptions_alone_fails_while_notifications_are_left():
    subs = subscriptions(1)
    engine_insert([subs[0].pk])
    with pytest.raises(psycopg.errors.ForeignKeyViolation), session() as other:
        other.execute("TRUNCATE exchange_subscription, exchange_subscriptionwebhook")
    assert Subscription.objects.count() == 1
    # Both in one statement, as Django's flush does: the trigger runs after both are empty
    with session() as other:
        other.execute(
            "TRUNCATE exchange_subscriptionnotification, exchange_subscription,"
            " exchange_subscriptionwebhook"
        )
    assert Subscription.objects.count() == 0


def notification_insert(db: psycopg.Connection, sub_id: int) -> None:
    """A notification of ``sub_id`` inserted on ``db`` (its transaction left open)."""
    db.execute(
        "INSERT INTO exchange_subscriptionnotification (subscription_id, n, data, created_at)"
        " VALUES (%s, 1, '{}', now())",
        [sub_id],
    )


def test_a_delete_waits_for_an_inserter_holding_the_subscription_and_then_fails(watcher):
    (sub,) = subscriptions(1)
    # Given an engine's transaction that inserted a notification and has not committed (its
    # trigger holds the subscription's row FOR KEY SHARE)
    with session() as inserter:
        inserter.execute("BEGIN")
        notification_insert(inserter, sub.pk)

        # When another deletes the subscription the ORM's way (its notifications, none it
        # can see yet, then the row): it waits for the inserter's lock
        def delete() -> None:
            with transaction.atomic():
                SubscriptionNotification.objects.filter(subscription_id=sub.pk).delete()
                Subscription.objects.filter(pk=sub.pk)._raw_delete("default")

        deleter = started(delete)
        waits(watcher, deleter, "transactionid", "tuple")
        # and the inserter commits
        inserter.execute("COMMIT")

    # Then the deletion's check, after the wait, sees the committed notification and fails
    with pytest.raises(IntegrityError) as raised:
        deleter.done()
    assert raised.value.__cause__.sqlstate == "23503"
    assert Subscription.objects.filter(pk=sub.pk).exists()
    assert notified() == [sub.pk]


def test_an_insert_waits_for_an_uncommitted_delete_of_its_subscription_and_then_fails(watcher):
    (sub,) = subscriptions(1)
    # Given a transaction that deleted the subscription and has not committed
    with session() as deleter:
        deleter.execute("BEGIN")
        deleter.execute("DELETE FROM exchange_subscription WHERE id = %s", [sub.pk])

        # When the engine inserts a notification for it: its check waits for the row
        inserter = started(lambda: engine_insert([sub.pk]))
        waits(watcher, inserter, "transactionid", "tuple")
        # and the deletion commits
        deleter.execute("COMMIT")

    # Then the insert finds the subscription gone and fails, writing nothing
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        inserter.done()
    assert not Subscription.objects.filter(pk=sub.pk).exists()
    assert notified() == []


def test_an_inserter_holding_its_subscription_does_not_hold_up_updates_of_the_row():
    # FOR KEY SHARE, as the foreign key's lock: only a DELETE or a change of the id waits
    # for it, not an UPDATE of the row's other columns (the engine's, the services')
    (sub,) = subscriptions(1)
    with session() as first:
        first.execute("BEGIN")
        notification_insert(first, sub.pk)
        update = started(lambda: Subscription.objects.filter(pk=sub.pk).update(last_n=1))
        assert update.done() == 1
        first.execute("COMMIT")
    assert notified() == [sub.pk]


def test_the_migration_reversed_restores_the_foreign_key():
    def state() -> tuple[list[str], list[tuple[str, str]]]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT confdeltype::text || ' ' || condeferred::text FROM pg_constraint"
                " WHERE conrelid = 'exchange_subscriptionnotification'::regclass"
                " AND contype = 'f'"
            )
            keys = [key for (key,) in cursor.fetchall()]
            cursor.execute(
                "SELECT tgrelid::regclass::text, tgname FROM pg_trigger"
                " WHERE tgname LIKE 'exchange_subscription%%' AND NOT tgisinternal"
                " ORDER BY 1, 2"
            )
            return keys, cursor.fetchall()

    assert state() == ([], TRIGGERS)
    executor = MigrationExecutor(connection)
    executor.migrate([("exchange", "0027_buyer_room_function")])
    try:
        # (NO ACTION in PostgreSQL, deferred: Django cascades itself)
        assert state() == (["a true"], [])
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert state() == ([], TRIGGERS)
