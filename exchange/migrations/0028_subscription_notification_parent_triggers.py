"""A notification's subscription checked once per statement, not once per row (issue 35
item 7).

The foreign key from ``exchange_subscriptionnotification`` to ``exchange_subscription`` was
checked by PostgreSQL once per inserted row: a ``SELECT 1 ... FOR KEY SHARE`` of the parent
through SPI, at the commit (Django's constraints are deferred). The engine inserts hundreds
of notifications per batch in one statement, and those checks were about 9 of the backend's
20 us of CPU per notification (``ops/benchmarks/engine_batch.py --fanout 500``, with the
constraint dropped in a trial). The field keeps its ``ForeignKey`` (the ORM's cascade and
API) with ``db_constraint=False``, and triggers keep the same invariant, "every
notification names an existing subscription, and no subscription goes while one names it",
with one query per statement:

* after each INSERT or UPDATE of notifications, their distinct subscriptions are locked
  ``FOR KEY SHARE`` in id order, as the foreign key's check locks each one, so a concurrent
  DELETE of one waits for the inserting transaction; if one is missing, the statement fails
  with ``foreign_key_violation`` (23503);
* after each DELETE of subscriptions, the statement fails with 23503 if a notification
  still names one of them (the foreign key's NO ACTION: the ORM's collector deletes the
  notifications first). The function is ``VOLATILE``, so under READ COMMITTED its query takes
  a snapshot of its own after the DELETE waited for an inserter's lock, and sees the
  notifications that inserter committed;
* an UPDATE of a subscription's ``id`` that notifications name fails the same way (nothing
  changes an id; the trigger fires only on a statement that sets it);
* a TRUNCATE of subscriptions fails if notifications are left (the foreign key refused any
  TRUNCATE of the subscriptions without the notifications; Django's flush empties both in
  one statement, and a TRUNCATE's triggers run after all of its tables are emptied).

Unlike the deferred constraint, the triggers check at the end of each statement: every writer
inserts a subscription before its notifications and deletes notifications before their
subscription. Under REPEATABLE READ (nothing here uses it) the DELETE's check would not see
notifications committed after its snapshot, where the foreign key raised a serialization
failure. The reverse migration drops the triggers and adds the constraint again (checking
every row).
"""

from django.db import migrations, models

TRIGGERS = """
CREATE FUNCTION exchange_subscriptionnotification_parents() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    whole boolean;
    missing bigint;
BEGIN
    LOOP
        SELECT count(*) = (SELECT count(DISTINCT subscription_id) FROM new_rows) INTO whole
        FROM (SELECT s.id FROM exchange_subscription s
              WHERE s.id IN (SELECT subscription_id FROM new_rows)
              ORDER BY s.id FOR KEY SHARE) AS locked;
        IF whole THEN
            RETURN NULL;
        END IF;
        SELECT min(n.subscription_id) INTO missing FROM new_rows n
        WHERE NOT EXISTS (SELECT FROM exchange_subscription s WHERE s.id = n.subscription_id);
        IF missing IS NOT NULL THEN
            RAISE foreign_key_violation USING
                MESSAGE = format('insert or update on table "%s" names subscription %s, '
                                 'which does not exist', TG_TABLE_NAME, missing),
                TABLE = TG_TABLE_NAME, COLUMN = 'subscription_id',
                CONSTRAINT = 'exchange_subscriptionnotification_parents';
        END IF;
        -- (none missing now: one was committed after the lock's snapshot; lock again)
    END LOOP;
END
$$;
CREATE TRIGGER exchange_subscriptionnotification_parents_insert
    AFTER INSERT ON exchange_subscriptionnotification REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_subscriptionnotification_parents();
CREATE TRIGGER exchange_subscriptionnotification_parents_update
    AFTER UPDATE ON exchange_subscriptionnotification REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_subscriptionnotification_parents();

CREATE FUNCTION exchange_subscription_children() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    named bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT o.id INTO named FROM old_rows o
        WHERE EXISTS (SELECT FROM exchange_subscriptionnotification n
                      WHERE n.subscription_id = o.id)
        ORDER BY o.id LIMIT 1;
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT OLD.id INTO named
        WHERE EXISTS (SELECT FROM exchange_subscriptionnotification n
                      WHERE n.subscription_id = OLD.id);
    ELSE
        SELECT n.subscription_id INTO named FROM exchange_subscriptionnotification n LIMIT 1;
    END IF;
    IF named IS NOT NULL THEN
        RAISE foreign_key_violation USING
            MESSAGE = format('%s on table "%s" leaves notifications naming subscription %s',
                             lower(TG_OP), TG_TABLE_NAME, named),
            TABLE = 'exchange_subscriptionnotification', COLUMN = 'subscription_id',
            CONSTRAINT = 'exchange_subscriptionnotification_parents';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER exchange_subscription_children_delete
    AFTER DELETE ON exchange_subscription REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_subscription_children();
CREATE TRIGGER exchange_subscription_children_update
    AFTER UPDATE OF id ON exchange_subscription
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION exchange_subscription_children();
CREATE TRIGGER exchange_subscription_children_truncate
    AFTER TRUNCATE ON exchange_subscription
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_subscription_children();
"""

DROP_TRIGGERS = """
DROP TRIGGER exchange_subscription_children_truncate ON exchange_subscription;
DROP TRIGGER exchange_subscription_children_update ON exchange_subscription;
DROP TRIGGER exchange_subscription_children_delete ON exchange_subscription;
DROP FUNCTION exchange_subscription_children();
DROP TRIGGER exchange_subscriptionnotification_parents_update
    ON exchange_subscriptionnotification;
DROP TRIGGER exchange_subscriptionnotification_parents_insert
    ON exchange_subscriptionnotification;
DROP FUNCTION exchange_subscriptionnotification_parents();
"""


class Migration(migrations.Migration):
    dependencies = [("exchange", "0027_buyer_room_function")]

    operations = [
        migrations.AlterField(
            model_name="subscriptionnotification",
            name="subscription",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="notifications",
                to="exchange.subscription",
            ),
        ),
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
    ]
