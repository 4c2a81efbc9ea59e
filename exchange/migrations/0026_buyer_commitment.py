"""What each buyer's active bids commit, kept by triggers (issue 36).

``buyer_room`` summed ``largest_award`` over the buyer's active bids on every placement and
amendment: an index-only scan since 0022, but still one index entry per active bid (0.49 ms
of PostgreSQL a bid at 2,700 active bids a buyer, the largest statement of the bid path in
``pg_stat_statements`` at 150 bids/s, and growing with the buyer's bids). Now three
statement-level triggers on ``exchange_bid`` add to a buyer's ``BuyerCommitment`` what each
statement changed of its active bids' awards (the rows after, less the rows before, from
the statement's transition tables), so the check reads one row.

Every writer of bids is covered, the ORM's and the raw SQL's, bulk or not. The rows a
statement touches are locked in buyer order, so two statements over many buyers never wait
for each other crosswise; a bid's placement and amendment already hold their buyer's lock
(``buyer_room(lock=True)``), so this row adds no waiting of its own there. A change that
leaves a buyer's sum as it was (a bid set aside, a constraint widened) writes nothing.

The existing bids are summed once here, with the table locked against writers for the
moment that takes (one index-only scan of ``bid_buyer_active_award``). TRUNCATE fires no
statement trigger of these; Django's test flush truncates this table with the bids.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

COMMITMENT_FUNCTION = """
CREATE FUNCTION exchange_bid_commitment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO exchange_buyercommitment AS c (buyer_id, committed)
        SELECT buyer_id, sum(largest_award) FROM new_rows
        WHERE state = 'active' AND largest_award IS NOT NULL
        GROUP BY buyer_id ORDER BY buyer_id
        ON CONFLICT (buyer_id) DO UPDATE SET committed = c.committed + EXCLUDED.committed;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO exchange_buyercommitment AS c (buyer_id, committed)
        SELECT buyer_id, sum(amount) FROM (
            SELECT buyer_id, largest_award AS amount FROM new_rows
            WHERE state = 'active' AND largest_award IS NOT NULL
            UNION ALL
            SELECT buyer_id, -largest_award FROM old_rows
            WHERE state = 'active' AND largest_award IS NOT NULL
        ) AS changed
        GROUP BY buyer_id HAVING sum(amount) <> 0 ORDER BY buyer_id
        ON CONFLICT (buyer_id) DO UPDATE SET committed = c.committed + EXCLUDED.committed;
    ELSE
        INSERT INTO exchange_buyercommitment AS c (buyer_id, committed)
        SELECT buyer_id, -sum(largest_award) FROM old_rows
        WHERE state = 'active' AND largest_award IS NOT NULL
        GROUP BY buyer_id ORDER BY buyer_id
        ON CONFLICT (buyer_id) DO UPDATE SET committed = c.committed + EXCLUDED.committed;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER exchange_bid_commitment_insert AFTER INSERT ON exchange_bid
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_bid_commitment();
CREATE TRIGGER exchange_bid_commitment_update AFTER UPDATE ON exchange_bid
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_bid_commitment();
CREATE TRIGGER exchange_bid_commitment_delete AFTER DELETE ON exchange_bid
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION exchange_bid_commitment();
LOCK TABLE exchange_bid IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO exchange_buyercommitment (buyer_id, committed)
SELECT buyer_id, sum(largest_award) FROM exchange_bid
WHERE state = 'active' AND largest_award IS NOT NULL
GROUP BY buyer_id;
"""

DROP_COMMITMENT_FUNCTION = """
DROP TRIGGER exchange_bid_commitment_delete ON exchange_bid;
DROP TRIGGER exchange_bid_commitment_update ON exchange_bid;
DROP TRIGGER exchange_bid_commitment_insert ON exchange_bid;
DROP FUNCTION exchange_bid_commitment();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("exchange", "0025_subscription_notification_one_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="BuyerCommitment",
            fields=[
                (
                    "buyer",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("committed", models.DecimalField(decimal_places=10, default=0, max_digits=40)),
            ],
        ),
        migrations.RunSQL(COMMITMENT_FUNCTION, DROP_COMMITMENT_FUNCTION),
    ]
