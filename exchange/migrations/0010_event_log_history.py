"""Build the event log of the data that existed before it (SPEC 8.1), in time order.

Each existing offer and bid gives its ``offer_posted``/``bid_placed`` at its creation, with
its current version and constraint (earlier versions were never kept, so no
``*_amended`` event can be rebuilt); each end state its event at the order's last update;
each trade its ``offer_closed``, ``trade`` and ``bid_filled`` at its closing; each
``BestOfferChange`` its ``best_offer``. The sources are read in time order and merged, so
memory stays bounded whatever their size; ties in time keep postings first and closings
after best-offer changes. An order whose stored text no longer parses gives no posting
event. The events get ``seq`` 1, 2, ... and the counter continues after them.

Runs only on an empty log (the writer may not have written yet: it ships with 0009).
"""

import datetime as dt
import heapq
from collections.abc import Iterator

from django.db import migrations

CHUNK = 5000


def _postings(Order, kind, owner_field):
    import matching
    from exchange.engine.constraints import UnusableOrder
    from exchange.errors import InvalidInput
    from exchange.services.events import bid_terms, offer_terms

    terms = offer_terms if kind == "offer_posted" else bid_terms
    rows = Order.objects.select_related("market").order_by("created_at", "id")
    for order in rows.iterator(chunk_size=CHUNK):
        try:
            data = terms(order, matching.parse(order.constraint_text))
        except (matching.ConstraintError, UnusableOrder, InvalidInput):
            continue
        owner = getattr(order, owner_field) if owner_field else None
        yield (order.created_at, 0, order.pk), (kind, order.market.subject, owner, data)


def _ends(Order, states, side, owner_field):
    fields = ["updated_at", "id", "state", "market__subject"] + (
        [owner_field] if owner_field else []
    )
    rows = Order.objects.filter(state__in=states).order_by("updated_at", "id").values_list(*fields)
    for at, pk, state, subject, *owner in rows.iterator(chunk_size=CHUNK):
        yield (at, 2, pk), (f"{side}_{state}", subject, owner[0] if owner else None, {side: pk})


def _unsold(Offer):
    rows = (
        Offer.objects.filter(state="closed", trade__isnull=True)
        .order_by("updated_at", "id")
        .values_list("updated_at", "id", "market__subject")
    )
    for at, pk, subject in rows.iterator(chunk_size=CHUNK):
        yield (at, 2, pk), ("offer_closed", subject, None, {"offer": pk, "outcome": "unsold"})


def _trades(Trade):
    from exchange.services.events import closing_events

    rows = Trade.objects.select_related("offer__market").order_by("closed_at", "id")
    for trade in rows.iterator(chunk_size=CHUNK):
        for step, row in enumerate(closing_events(offer=trade.offer, trade=trade)):
            yield (trade.closed_at, 2, trade.pk, step), row


def _best_changes(BestOfferChange):
    from exchange.services.events import BEST_CHANGE_FIELDS, best_offer_event

    rows = BestOfferChange.objects.order_by("at", "id").values_list("at", "id", *BEST_CHANGE_FIELDS)
    for at, pk, *fields in rows.iterator(chunk_size=CHUNK):
        yield (at, 1, pk), best_offer_event(*fields)


def history(apps) -> Iterator:
    """Every event of the existing data as ``(sort key, event row)``, in key order."""
    Offer, Bid = apps.get_model("exchange", "Offer"), apps.get_model("exchange", "Bid")
    sources = [
        _postings(Offer, "offer_posted", None),
        _postings(Bid, "bid_placed", "buyer_id"),
        _ends(Offer, ["withdrawn", "cancelled"], "offer", None),
        _ends(Bid, ["withdrawn"], "bid", "buyer_id"),
        _unsold(Offer),
        _trades(apps.get_model("exchange", "Trade")),
        _best_changes(apps.get_model("exchange", "BestOfferChange")),
    ]
    return heapq.merge(*sources, key=lambda item: item[0])


def build(apps, schema_editor):
    from django.db.models import Max, Min

    # Imported here: a migration module must load without the application's services.
    from exchange.services.event_partitions import event_partitions_ensure
    from exchange.services.events import events_insert

    Event = apps.get_model("exchange", "Event")
    if Event.objects.exists():
        return
    Offer, Bid = apps.get_model("exchange", "Offer"), apps.get_model("exchange", "Bid")
    BestOfferChange = apps.get_model("exchange", "BestOfferChange")
    firsts = [m.objects.aggregate(first=Min("created_at"))["first"] for m in (Offer, Bid)]
    firsts = [t for t in firsts if t is not None]
    if firsts:
        # Every historic event falls between the first order and now: give each day its
        # partition (what is later lands in today's or the default one).
        first = min(firsts).astimezone(dt.UTC).date()
        today = dt.datetime.now(dt.UTC).date()
        event_partitions_ensure(first=first, days=(today - first).days + 1)
    seq, last_time, chunk = 0, None, []
    for key, row in history(apps):
        chunk.append((row, key[0]))
        last_time = key[0]
        if len(chunk) == CHUNK:
            events_insert(chunk, first_seq=seq + 1)
            seq, chunk = seq + len(chunk), []
    if chunk:
        events_insert(chunk, first_seq=seq + 1)
        seq += len(chunk)
    Counter = apps.get_model("exchange", "EventCounter")
    Counter.objects.update_or_create(
        id=1,
        defaults={
            "last_seq": seq,
            "last_time": last_time,
            "best_change_id": BestOfferChange.objects.aggregate(last=Max("id"))["last"] or 0,
        },
    )


class Migration(migrations.Migration):
    dependencies = [("exchange", "0009_event_log")]
    operations = [migrations.RunPython(build, migrations.RunPython.noop)]
