"""Maintained counts of each market's open offers and active bids (issue 17).

The market list used to count every live order per request (100,000 bids: a few hundred
milliseconds each). Now a trigger on each order table inserts a ``MarketOrderCount`` row
whenever an order enters or leaves its live state (``open`` offers, ``active`` bids), and
the list sums a market's rows; the sweep folds them into one row per market. The existing
orders are counted once here. TRUNCATE fires no row trigger, but it empties the counted
table with the orders (Django's test flush truncates every table).
"""

import django.db.models.deletion
from django.db import migrations, models

COUNT_FUNCTION = """
CREATE FUNCTION exchange_market_order_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    live text := TG_ARGV[0];
    was integer := CASE WHEN TG_OP = 'INSERT' THEN 0 WHEN OLD.state = live THEN 1 ELSE 0 END;
    now_live integer := CASE WHEN TG_OP = 'DELETE' THEN 0 WHEN NEW.state = live THEN 1 ELSE 0 END;
    market bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.market_id ELSE NEW.market_id END;
BEGIN
    IF now_live <> was THEN
        INSERT INTO exchange_marketordercount (market_id, offers, bids)
        VALUES (
            market,
            CASE WHEN TG_TABLE_NAME = 'exchange_offer' THEN now_live - was ELSE 0 END,
            CASE WHEN TG_TABLE_NAME = 'exchange_bid' THEN now_live - was ELSE 0 END
        );
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER exchange_offer_market_count
    AFTER INSERT OR DELETE OR UPDATE OF state ON exchange_offer
    FOR EACH ROW EXECUTE FUNCTION exchange_market_order_count('open');
CREATE TRIGGER exchange_bid_market_count
    AFTER INSERT OR DELETE OR UPDATE OF state ON exchange_bid
    FOR EACH ROW EXECUTE FUNCTION exchange_market_order_count('active');
INSERT INTO exchange_marketordercount (market_id, offers, bids)
SELECT m.id,
       (SELECT count(*) FROM exchange_offer o WHERE o.market_id = m.id AND o.state = 'open'),
       (SELECT count(*) FROM exchange_bid b WHERE b.market_id = m.id AND b.state = 'active')
FROM exchange_market m;
"""

DROP_COUNT_FUNCTION = """
DROP TRIGGER exchange_bid_market_count ON exchange_bid;
DROP TRIGGER exchange_offer_market_count ON exchange_offer;
DROP FUNCTION exchange_market_order_count();
"""


class Migration(migrations.Migration):
    dependencies = [("exchange", "0011_import_refs")]

    operations = [
        migrations.CreateModel(
            name="MarketOrderCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("offers", models.IntegerField()),
                ("bids", models.IntegerField()),
                (
                    "market",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="exchange.market",
                    ),
                ),
            ],
        ),
        migrations.RunSQL(COUNT_FUNCTION, DROP_COUNT_FUNCTION),
    ]
