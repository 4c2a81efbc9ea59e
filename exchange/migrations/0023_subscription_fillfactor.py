"""Room on each page of ``exchange_subscription`` for its rows' next versions (issue 35,
item 7): the subscription engine writes ``last_n`` of every subscription it notifies, each
batch. Rows packed full (fillfactor 100, as a bulk registration leaves them) made every such
UPDATE a new version on another page with a new entry in each of the table's four indexes
(``pg_stat_user_tables``: no HOT update of 30,000); with room beside them, and no indexed
column written, the new version stays on its page and no index is touched (HOT)."""

from django.db import migrations

FILLFACTOR = 50


class Migration(migrations.Migration):
    dependencies = [("exchange", "0022_bid_buyer_commitments")]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE exchange_subscription SET (fillfactor = {FILLFACTOR})",
            "ALTER TABLE exchange_subscription RESET (fillfactor)",
        )
    ]
