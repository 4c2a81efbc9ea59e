"""The match table's second copies of two indexes dropped (issues 35 and 36).

``exchange_offerbidmatch`` had five indexes, two of them kept twice: the bid's (the foreign
key's own and ``Meta``'s) and the offer's (the foreign key's own, and the unique pair's,
which leads with the offer). Every match a cycle inserts or deletes updated all five. The
foreign keys lose their own indexes (``db_index=False``); in the database only the indexes
go: Django's ``AlterField`` would also drop and re-add both foreign keys, checking every
match again under a lock, for no change to the constraints.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0028_subscription_notification_parent_triggers"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="offerbidmatch",
                    name="bid",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="matches",
                        to="exchange.bid",
                    ),
                ),
                migrations.AlterField(
                    model_name="offerbidmatch",
                    name="offer",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="matches",
                        to="exchange.offer",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "exchange_offerbidmatch_bid_id_d0dc3257";'
                    ' DROP INDEX IF EXISTS "exchange_offerbidmatch_offer_id_0fd5b400";',
                    reverse_sql=(
                        'CREATE INDEX "exchange_offerbidmatch_bid_id_d0dc3257"'
                        ' ON "exchange_offerbidmatch" ("bid_id");'
                        ' CREATE INDEX "exchange_offerbidmatch_offer_id_0fd5b400"'
                        ' ON "exchange_offerbidmatch" ("offer_id");'
                    ),
                ),
            ],
        ),
    ]
