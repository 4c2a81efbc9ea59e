"""An index for the subscription engine's read of one partition's rows (issue 35):
``Engine._rescan`` asks for the active and paused subscriptions whose ``id % N`` is one of
its partitions (``N``, ``SUBSCRIPTION_ENGINE_PARTITIONS``), one partition a step in turn. No
index held that expression, so each such read scanned the whole table: 50 ms and 5,000
buffers at 30,000 subscriptions (``EXPLAIN (ANALYZE, BUFFERS)`` on ``ops/benchmarks/alerts.py``'s
database), a stall of the events behind it several times a second. With the index: 4 ms and
1,850 buffers for one partition of 1,875 rows.

The expression holds ``N`` as it is when this migration runs, and the engine writes the same
number into its statement (``engine.rescan_sql``): an installation that changes the setting
afterwards keeps correct answers but reads the table whole again until the index is made
for the new number (``docs/subscriptions.md``, *Partitions*). ``state`` is included so that
a page all-visible answers from the index alone; no column the engine writes at a batch is
in it but ``state`` at an end, so notified rows stay heap-only updates (migration 0023)."""

from django.conf import settings
from django.db import migrations


def index_sql(count: int) -> str:
    """The index for ``count`` partitions (the expression ``Engine._rescan`` reads by)."""
    return (
        f"CREATE INDEX subscription_partition ON exchange_subscription ((id % {int(count)})) "
        "INCLUDE (state) WHERE state IN ('active', 'paused')"
    )


class Migration(migrations.Migration):
    dependencies = [("exchange", "0023_subscription_fillfactor")]

    operations = [
        migrations.RunSQL(
            index_sql(settings.SUBSCRIPTION_ENGINE_PARTITIONS),
            "DROP INDEX subscription_partition",
        )
    ]
