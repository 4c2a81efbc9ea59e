"""The bench database and its book: a database of its own on the development cluster, the
product's migrations, and ``manage.py bench_book`` (the market rules and the store's bulk
rebuild), so that nothing here re-states how an order is made.

``BENCH_DATABASE_URL`` (any database of another cluster, as for ``ops/bench``) and
``BENCH_REDIS_URL`` point the bench at other services than those of ``ops/services start``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from exchange.settings.ports import DEV_DATABASE_URL, DEV_REDIS_URL
from ops.stack import ROOT

# ``BENCH_LIVE_DATABASE`` names another (``alerts.py --bid-path`` keeps its book apart).
DATABASE = os.environ.get("BENCH_LIVE_DATABASE") or "intersect_bench"
# Nothing mixes with a running ops/run, whose queues use database 0 and its cache database 1.
REDIS_DATABASE = 2
CACHE_DATABASE = 3


def _with_path(url: str, path: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{path}"


SERVER_URL = os.environ.get("BENCH_DATABASE_URL") or DEV_DATABASE_URL
DATABASE_URL = _with_path(SERVER_URL, DATABASE)
REDIS_URL = _with_path(os.environ.get("BENCH_REDIS_URL") or DEV_REDIS_URL, str(REDIS_DATABASE))
CACHE_REDIS_URL = _with_path(REDIS_URL, str(CACHE_DATABASE))


def env() -> dict[str, str]:
    """The environment of every process of the bench: the development settings pointed at
    the bench database, quiet logs, and throttles far above any rate the bench offers."""
    out = dict(os.environ)
    out.update(
        DJANGO_SETTINGS_MODULE="exchange.settings.development",
        DJANGO_DEBUG="0",
        DATABASE_URL=DATABASE_URL,
        REDIS_URL=REDIS_URL,
        CACHE_REDIS_URL=CACHE_REDIS_URL,
        LOG_LEVEL="WARNING",
        THROTTLE_USER="100000/min",
        THROTTLE_ANON="100000/min",
        THROTTLE_AUTH="100000/min",
        PYTHONUNBUFFERED="1",
    )
    return out


def manage(*args: str, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``manage.py`` with the bench's environment; a failure stops the bench unless
    ``check`` is false."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env(), check=check, text=True, **kwargs
    )


def foreign_cluster(url: str, root: Path = ROOT) -> str | None:
    """Why the bench may not drop and create databases on the development cluster at
    ``url``, or None when it may: this checkout's ``ops/services`` started it (its socket
    is in ``.data/dev/pg-run``, or under the directory ``.data/dev/pg.link`` names).
    ``ops/services start`` uses a cluster another checkout started on the same port, or
    that checkout's replica; two checkouts' benches there would drop each other's
    databases."""
    port = urlsplit(url).port
    data = root / ".data" / "dev"
    link = data / "pg.link"
    run = Path(os.readlink(link)) / "pg-run" if link.is_symlink() else data / "pg-run"
    if (run / f".s.PGSQL.{port}").exists():
        return None
    return (
        f"the PostgreSQL on 127.0.0.1:{port} is not this checkout's (no socket in {run}): "
        "another checkout's benches may use its bench databases. Start this checkout's "
        "(ops/services start, with its own ports in ops/lib/ports.env) or name a cluster "
        "with BENCH_DATABASE_URL"
    )


def cluster_check() -> None:
    """Stop the bench before it drops a database on another checkout's cluster (unless
    ``BENCH_DATABASE_URL`` names the cluster: then it is the caller's choice)."""
    if os.environ.get("BENCH_DATABASE_URL"):
        return
    problem = foreign_cluster(SERVER_URL)
    if problem:
        raise SystemExit(problem)


def database_recreate() -> None:
    """Drop the bench database (whatever holds it open) and create it empty."""
    cluster_check()
    with psycopg.connect(SERVER_URL, autocommit=True) as conn:
        name = sql.Identifier(DATABASE)
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(name))


def book_build(*, offers: int, bids: int, seed: int) -> None:
    """A fresh bench database holding ``offers`` open offers and ``bids`` active bids."""
    database_recreate()
    manage("migrate", "-v", "0")
    manage("bench_book", "--offers", str(offers), "--bids", str(bids), "--seed", str(seed))


def book_settle() -> None:
    """Leave a just-built book as a running exchange leaves a bulk import before anyone trades
    on it: the markets' count rows folded (the sweep's ``market_counts_compact``), then every
    table vacuumed and analyzed. ``bench_book``'s bulk insert leaves one count row per order
    (110,000 on SPEC 9's book), which every ``GET /api/v1/markets/`` summed with two
    sequential scans, 1,404 buffers and 50 to 150 ms, and still did after the first sweep
    folded them until autovacuum and autoanalyze came round; and the buyers' commitments
    (``bid_buyer_active_award``, every placement) are read from the index alone only on
    pages the visibility map marks all-visible, which a bulk insert leaves unmarked until
    autovacuum gets to the table. Either way the first run's figures depended on when
    autovacuum ran, not on the product (issue 36)."""
    manage(
        "shell",
        "-c",
        "from exchange.services.market_counts import market_counts_compact\n"
        "market_counts_compact()\n",
    )
    with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
        # The catalogs are the superuser's: PostgreSQL skips them with a warning.
        conn.execute("VACUUM (ANALYZE)")


def tokens(usernames: list[str]) -> list[str]:
    """The API tokens of ``usernames`` (created if missing), read through the product's token
    service rather than by logging in: each login is a PBKDF2 check of about half a second
    of CPU, and 50 of them on a busy machine took longer than the load they prepare."""
    script = (
        "import json, sys\n"
        "from django.contrib.auth.models import User\n"
        "from exchange.services.tokens import token_issue\n"
        f"names = {usernames!r}\n"
        "users = {u.username: u for u in User.objects.filter(username__in=names)}\n"
        "print(json.dumps([token_issue(user=users[n]).key for n in names]))\n"
    )
    done = manage("shell", "-c", script, capture_output=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def book_refresh(*, rebuild: bool = True) -> None:
    """Bring a book (new or reused) to the current code: migrations, then the store rebuilt,
    since its layout may have changed since the book was built (``rebuild=False`` keeps a
    store known to be current, as when runs follow each other on the same code)."""
    manage("migrate", "-v", "0")
    # A book built before spending limits existed: its buyers get the bench's own (bench_book
    # gives them to the buyers of a new book), so the load is never refused for exposure.
    manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User\n"
        "from exchange.management.commands.bench_book import BENCH_SPENDING_LIMIT\n"
        "from exchange.models import SpendingLimit\n"
        "buyers = User.objects.filter(username__startswith='buyer', spending_limit=None)\n"
        "SpendingLimit.objects.bulk_create(\n"
        "    [SpendingLimit(user=u, amount=BENCH_SPENDING_LIMIT) for u in buyers]\n"
        ")\n",
    )
    if rebuild:
        manage("engine_rebuild")
