"""A buyer's row lock and its room in one call (issue 36 item 2).

The limit check of a bid's placement was two statements after the transaction's ``BEGIN``:
the buyer's row lock, then a second statement for the limit and the commitment, which must
start after the lock is granted to see the bid of a transaction it waited for
(``tests/exchange/test_limit_race.py``); with the bid's insert and the ``COMMIT`` that was
five round trips to PostgreSQL per ``POST /api/v1/bids/``, each a few hundred microseconds of
the web process's CPU. A PL/pgSQL function that is ``VOLATILE`` takes a new snapshot for each
statement it runs, so it can lock the row and then read the room as of after the lock, and a
caller can use it inside the very statement that inserts the bid: the placement becomes one
statement, its own transaction (``exchange.services.orders._bid_insert``).

``exchange_buyer_room(buyer, other)``: the buyer's row locked FOR NO KEY UPDATE, then its
spending limit (NULL without a ``SpendingLimit`` row: the caller applies the default) and
what its active bids commit, less the award of its active bid ``other`` (NULL: none). No row
when the buyer does not exist.
"""

from django.db import migrations

ROOM_FUNCTION = """
CREATE FUNCTION exchange_buyer_room(buyer bigint, other bigint)
RETURNS TABLE (amount numeric, committed numeric)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM auth_user WHERE id = buyer FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT
        (SELECT l.amount FROM exchange_spendinglimit l WHERE l.user_id = buyer),
        coalesce((SELECT c.committed FROM exchange_buyercommitment c WHERE c.buyer_id = buyer), 0)
        - coalesce((SELECT b.largest_award FROM exchange_bid b
                    WHERE b.id = other AND b.buyer_id = buyer AND b.state = 'active'), 0);
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("exchange", "0026_buyer_commitment")]

    operations = [
        migrations.RunSQL(ROOM_FUNCTION, "DROP FUNCTION exchange_buyer_room(bigint, bigint);"),
    ]
