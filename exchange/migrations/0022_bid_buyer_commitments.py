"""What a buyer's active bids commit, read from an index (issue 36).

``buyer_room`` sums ``largest_award`` over the buyer's active bids on every placement and
amendment; through ``exchange_bid_buyer_id`` that visited one heap page per active bid
(2,000 pages and about 8 ms for a buyer of SPEC 9's book). The partial index holds the
amounts, so the sum is an index-only scan: it reads the heap only for rows on pages that the
visibility map does not mark all-visible. Those are the pages written since the last vacuum,
so ``exchange_bid`` is vacuumed after 1% of its rows were inserted or 2% changed (PostgreSQL's
defaults, 20% each, left 20,000 bids of SPEC 9's book to fetch from the heap between two
vacuums). A vacuum of the table skips the pages already all-visible: it costs what was
written since the last one.

The index is built ``CONCURRENTLY`` (so outside a transaction): a plain build holds a lock
on ``exchange_bid`` that blocks every placement until it ends, which on a live book of
hundreds of thousands of bids is the exchange stopped for the build's length.
"""

from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

BID_VACUUM = (
    "ALTER TABLE exchange_bid SET (autovacuum_vacuum_insert_scale_factor = 0.01,"
    " autovacuum_vacuum_scale_factor = 0.02)"
)
BID_VACUUM_DEFAULT = (
    "ALTER TABLE exchange_bid RESET (autovacuum_vacuum_insert_scale_factor,"
    " autovacuum_vacuum_scale_factor)"
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("exchange", "0021_subscription_partition_book"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="bid",
            index=models.Index(
                condition=models.Q(("state", "active")),
                fields=["buyer"],
                include=("largest_award", "id"),
                name="bid_buyer_active_award",
            ),
        ),
        migrations.RunSQL(BID_VACUUM, BID_VACUUM_DEFAULT),
    ]
