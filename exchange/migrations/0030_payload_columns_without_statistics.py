"""No planner statistics for the columns that only carry payloads (issue 36 item 3).

PostgreSQL's autovacuum analyzes a table each time a tenth of it has changed, and on a
2-core machine under load that work takes the CPU from the requests and the cycles: in a
120 bids/s run on the AMD EPYC the worker analyzed the notification and event tables for
about 4 s of CPU, most of a core for six seconds, and the bids of those seconds reached
their frames up to 255 ms late (p99 of the other seconds: 71 ms). Most of an analyze's CPU
went to the JSON columns: ``ANALYZE exchange_bid`` took 3.2 s of the backend's CPU, 2.2 of
them for ``constraint_json`` alone. No query filters, joins or sorts on these columns (a
notification's lookup by its bid goes through ``data -> 'bid'``, an expression whose
selectivity the column's statistics do not give), so their statistics plan nothing.
``SET STATISTICS 0`` stops ANALYZE from computing them; the other columns keep theirs.
On the bench database, with the statistics target the cluster then had (1000), that took
ANALYZE of the bid, notification, change and event tables from 3.17, 2.53, 1.04 and 0.80 s
of CPU to 1.06, 1.22, 0.38 and 0.24 s; with PostgreSQL's own target (100, which
``ops/services`` now sets) the bid, notification and change tables' from 0.28, 0.26 and
0.14 s to 0.15, 0.20 and 0.09 s.

The event log's target is set on its parent, which passes it to every partition there is;
``event_partitions_ensure`` copies it to each partition it makes.
"""

from django.db import migrations

COLUMNS = {
    "exchange_bid": ("constraint_json", "constraint_text"),
    "exchange_offer": ("constraint_json", "constraint_text"),
    "exchange_orderchange": ("event",),
    "exchange_notification": ("data",),
    "exchange_subscriptionnotification": ("data",),
    "exchange_event": ("data",),
    "exchange_idempotencykey": ("response",),
    "exchange_trade": ("agreed_constraint", "agreed_constraint_json"),
}


def _statements(target: int) -> list[str]:
    return [
        f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET STATISTICS {target}'
        for table, columns in COLUMNS.items()
        for column in columns
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0029_offerbidmatch_one_index_each"),
    ]

    operations = [
        migrations.RunSQL(sql=_statements(0), reverse_sql=_statements(-1)),
    ]
