#!/usr/bin/env python3
"""The matching worker's CPU in ``best_offers_refresh`` (issue 36, "the cycle's cost"): per
call over ``--changed`` offers whose best bid changed, in this process, with its rows and
the digest of what it wrote, so that two commits can be compared for cost and sameness.

    .venv/bin/python ops/benchmarks/cycle_cost.py [--build] [--changed 50] [--cycles 40]
        [--profile 25]

``--build`` (needed once) makes the database ``intersect_cycle_cost`` on the test profile's
cluster (``BENCH_DATABASE_URL`` names another) with the product's migrations and the bench
book of ``--offers`` offers and ``--bids`` bids (``manage.py bench_book``, seed 1). Each
cycle then, in a transaction rolled back at its end so that every cycle starts from the same
book, moves the best bid of ``--changed`` offers that have two matches or more, in three
ways taken in turn (the best match deleted: the former best no longer matches; the second
raised above the best: outbid; every match deleted: no best bid any more), and times
``best_offers_refresh`` over them with ``time.process_time`` (this process's CPU, not the
database's). Prints one JSON object: the CPU per call (median, mean, min, in ms), the
notifications per call, the load average, and a digest of every row the calls wrote and of
the notifications they returned (ids taken relative to the call's first), which must not
change between commits that change only the cost. ``--profile N`` runs the calls under
cProfile (timed by this process's CPU) and prints its top ``N`` functions by own time and by cumulative time instead.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exchange.settings.ports import TEST_DATABASE_URL, TEST_REDIS_URL

# The test profile's services unless the caller names others (read by ``provision``).
os.environ.setdefault("BENCH_DATABASE_URL", TEST_DATABASE_URL)
os.environ.setdefault("BENCH_REDIS_URL", TEST_REDIS_URL)

from ops.benchmarks.history import _env, fresh_database, load_bench_book
from ops.benchmarks.live import provision

DATABASE = "intersect_cycle_cost"
WARM = 3

# The offers of the book with two matches or more, in id order.
CANDIDATES = """
SELECT offer_id FROM exchange_offerbidmatch GROUP BY offer_id HAVING count(*) >= 2
ORDER BY offer_id
"""

# Move the best bid of the given offers (%s three times: the offers whose best match goes,
# whose second match is raised above the best, whose matches all go). The best is the
# cycle's (``best_bids``): highest value, then the earlier bid, then the lower id.
MOVE = """
WITH ranked AS (
    SELECT m.id, m.offer_id, m.value,
           row_number() OVER (PARTITION BY m.offer_id
                              ORDER BY m.value DESC, b.priority_at, b.id) AS place,
           max(m.value) OVER (PARTITION BY m.offer_id) AS top
    FROM exchange_offerbidmatch m JOIN exchange_bid b ON b.id = m.bid_id
    WHERE m.offer_id = ANY(%s) OR m.offer_id = ANY(%s) OR m.offer_id = ANY(%s)
), raised AS (
    UPDATE exchange_offerbidmatch m SET value = r.top + 0.01 FROM ranked r
    WHERE m.id = r.id AND r.place = 2 AND r.offer_id = ANY(%s)
)
DELETE FROM exchange_offerbidmatch m USING ranked r
WHERE m.id = r.id AND ((r.place = 1 AND r.offer_id = ANY(%s)) OR r.offer_id = ANY(%s))
"""

# What a call wrote, ids relative to the first of the call (timestamps left out: they differ
# from run to run).
WRITTEN = """
SELECT json_build_object(
  'notes', (SELECT coalesce(json_agg(json_build_array(id - %s, recipient_id, market_id,
                offer_id, type, data, delivered_at IS NULL, created_at >= %s) ORDER BY id), '[]')
            FROM exchange_notification WHERE id > %s),
  'history', (SELECT coalesce(json_agg(json_build_array(id - %s, offer_id, bid_id, value,
                matching_bids, at = %s) ORDER BY id), '[]')
              FROM exchange_bestofferchange WHERE id > %s),
  'best', (SELECT coalesce(json_agg(json_build_array(offer_id, bid_id, value, matching_bids)
               ORDER BY offer_id), '[]')
           FROM exchange_bestoffer WHERE offer_id = ANY(%s)))::text
"""


def _last_ids() -> tuple[int, int]:
    # Django's: main() calls django.setup() first.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM exchange_notification),"
            " (SELECT coalesce(max(id), 0) FROM exchange_bestofferchange)"
        )
        notes, history = cursor.fetchone()
    return notes, history


def one_call(offers: list[int], digest: Any, profile: cProfile.Profile | None) -> tuple[float, int]:
    """Move the best bids of ``offers``, time ``best_offers_refresh`` over them, add what it
    wrote and returned to ``digest``, and roll it all back; returns (CPU s, notifications)."""
    # Django's: main() calls django.setup() first.
    from django.db import connection, transaction
    from django.utils import timezone

    from exchange.services.matching import best_offers_refresh

    thirds = [offers[0::3], offers[1::3], offers[2::3]]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(MOVE, [*thirds, thirds[1], thirds[0], thirds[2]])
        notes_before, history_before = _last_ids()
        started = timezone.now()
        if profile is not None:
            profile.enable()
        cpu = time.process_time()
        notes = best_offers_refresh(offer_ids=set(offers))
        cpu = time.process_time() - cpu
        if profile is not None:
            profile.disable()
        first = notes[0].pk - 1 if notes else notes_before
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT max(at) FROM exchange_bestofferchange WHERE id > %s", [history_before]
            )
            (at,) = cursor.fetchone()
            cursor.execute(
                "SELECT min(id) - 1 FROM exchange_bestofferchange WHERE id > %s", [history_before]
            )
            (first_history,) = cursor.fetchone()
            cursor.execute(
                WRITTEN,
                [first, started, notes_before, first_history, at, history_before, offers],
            )
            (written,) = cursor.fetchone()
        digest.update(written.encode())
        returned = [
            [n.pk - first, n.recipient_id, n.market.subject, n.offer_id, n.type, n.data]
            for n in notes
        ]
        digest.update(json.dumps(returned, sort_keys=True).encode())
        transaction.set_rollback(True)
    return cpu, len(notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--offers", type=int, default=600)
    parser.add_argument("--bids", type=int, default=12_000)
    parser.add_argument("--changed", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    url = provision._with_path(provision.SERVER_URL, DATABASE)
    if args.build:
        url = fresh_database(DATABASE)
        load_bench_book(url, offers=args.offers, bids=args.bids)
    os.environ.update(_env(url))
    django.setup()
    # Django's: after django.setup() above.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(CANDIDATES)
        candidates = [row[0] for row in cursor.fetchall()]
    rng = random.Random(args.seed)
    digest = hashlib.sha256()
    profile = cProfile.Profile(time.process_time) if args.profile else None
    cpus, notes = [], []
    for cycle in range(WARM + args.cycles):
        offers = sorted(rng.sample(candidates, args.changed))
        cpu, count = one_call(offers, digest, profile if cycle >= WARM else None)
        if cycle >= WARM:
            cpus.append(cpu * 1000)
            notes.append(count)
    if profile is not None:
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats(order).print_stats(args.profile)
            print(out.getvalue())
        return
    print(
        json.dumps(
            {
                "changed_offers": args.changed,
                "cycles": args.cycles,
                "cpu_ms": {
                    "median": round(statistics.median(cpus), 2),
                    "mean": round(statistics.fmean(cpus), 2),
                    "min": round(min(cpus), 2),
                },
                "notifications_per_call": round(statistics.fmean(notes), 1),
                "loadavg": os.getloadavg(),
                "digest": digest.hexdigest(),
            }
        )
    )


if __name__ == "__main__":
    main()
