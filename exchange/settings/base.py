"""Settings shared by every environment.

Everything that differs between machines comes from environment variables; the defaults
point at the project-local services that ``ops/services start`` runs, so a developer
needs no variables at all.
"""

from __future__ import annotations

import os
import socket
from decimal import Decimal
from pathlib import Path
from typing import Any, overload
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from . import ports
from .proxies import NAME as PROXIES_VARIABLE
from .proxies import ProxySettingError, trusted_proxies
from .web_tier import SOCKET_WORKERS as SOCKET_WORKERS_VARIABLE
from .web_tier import WEB_WORKERS as WEB_WORKERS_VARIABLE
from .web_tier import WorkerCountError, worker_count

BASE_DIR = Path(__file__).resolve().parent.parent.parent


@overload
def env(name: str) -> str | None: ...
@overload
def env(name: str, default: str) -> str: ...
def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_bool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str, default: list[str]) -> list[str]:
    value = env(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


SECRET_KEY = env("DJANGO_SECRET_KEY", "development-only-secret-key-not-for-production")
DEBUG = False
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])

# The reverse proxies whose X-Forwarded-For and X-Forwarded-Proto count (exchange/settings/
# proxies.py): uvicorn is started with flags derived from the same variable, and rewrites the
# client address and scheme that Django, the throttles and the WebSocket origin check read.
# None by default; production refuses to start without the variable.
try:
    TRUSTED_PROXIES = trusted_proxies(env(PROXIES_VARIABLE))
except ProxySettingError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
if env("DJANGO_NUM_PROXIES") is not None:
    raise ImproperlyConfigured(
        f"DJANGO_NUM_PROXIES is replaced by {PROXIES_VARIABLE}: the addresses of the trusted "
        "reverse proxies, comma-separated, or none (docs/reliability.md, Security)."
    )

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "exchange",
    "frontend",
    # After exchange, whose admin/ templates (the console's header and index, the offer page's
    # Close and Cancel buttons) must be found before the admin's own.
    "django.contrib.admin",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "exchange.middleware.RejectNulMiddleware",
    "exchange.middleware.RefusedBodyMiddleware",
    "exchange.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "exchange.middleware.PageMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "exchange.urls"
ASGI_APPLICATION = "exchange.asgi.application"
WSGI_APPLICATION = "exchange.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The defaults: the development services of ops/services (ops/lib/ports.env).
DATABASE_URL: str = env("DATABASE_URL") or ports.DEV_DATABASE_URL
DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 5
# A pool per process (psycopg_pool through Django): under ASGI every request runs in a thread
# of its own, so per-thread persistent connections would pile up and fresh ones cost a
# PostgreSQL backend each. ``timeout``: how long a request waits for a free connection.
DATABASES["default"]["OPTIONS"]["pool"] = {
    "min_size": 2,
    "max_size": int(env("DATABASE_POOL_SIZE", "12")),
    "timeout": 10,
}
# A connection taken from the pool is checked first (an empty statement): one that died with
# a server restart is replaced instead of failing the request or task that took it. Workers
# keep their pool for many tasks (CELERY_DB_REUSE_MAX below), so this is their only check.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# How many HTTP requests one server process lets into Django at once (exchange/admission.py);
# the rest wait on the event loop. Below the pool's size, so a request inside never waits
# for a connection, and small: the request threads share the GIL with the event loop that
# carries every socket's frames. On the live benchmark (50 bids/s, 2 workers, docs/
# benchmarks.md) 6 gave the fastest 201s but frames 15-29 s late with a third never seen; 2
# gave frames 0.3 s after their 201, every one seen.
WEB_IN_FLIGHT = int(env("WEB_IN_FLIGHT", "2"))
# Event-log exports (``GET /api/v1/events/?format=jsonl|csv``) streaming at once per server
# process; one more is answered 429 ``too_many_exports``. Each holds a pooled connection
# until its client has read it all, so this stays well below DATABASE_POOL_SIZE: with three
# clients that never read and a pool of 3, every other request failed (exchange/api/events.py).
EVENT_EXPORTS_PER_PROCESS = int(env("EVENT_EXPORTS_PER_PROCESS", "3"))
# And of those, how many one client (an account, or an address without a login) may hold, so
# that one slow reader cannot keep everyone else's exports out.
EVENT_EXPORTS_PER_CLIENT = int(env("EVENT_EXPORTS_PER_CLIENT", "1"))
# A streamed response is ended when one of its sends (at most 64 KiB) waits this long for
# its client to take bytes, and with it its read: its database connection goes back to the
# pool and its transaction ends (exchange/handler.py). A send waits until the server's
# buffer has drained to its low mark, so a client reading slower than about 1.6 KB/s is
# cut too.
STREAM_STALL_SECONDS = float(env("STREAM_STALL_SECONDS", "30"))
# The web tier's processes (exchange/server.py, started by ops/run): WEB_WORKERS (2) serve
# HTTP; SOCKET_WORKERS (1) serve the WebSockets the HTTP processes hand over, so that no frame
# waits behind a request thread (issue 36; 0: the HTTP processes carry them, as before).
try:
    WEB_WORKERS = worker_count(WEB_WORKERS_VARIABLE)
    SOCKET_WORKERS = worker_count(SOCKET_WORKERS_VARIABLE)
except WorkerCountError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
# Statements prepared on the server: PostgreSQL binds every statement's parameters
# (Django's ``server_side_binding``; by default its psycopg backend quotes them into the
# text), so psycopg prepares a statement on a connection at its fifth run and PostgreSQL
# stops planning it anew. Planning was 29% of PostgreSQL's statement time on the live
# benchmark (pg_stat_statements with track_planning: 0.1-0.5 ms for each of a matching
# cycle's statements, each run in 0.02-0.1 ms). DATABASE_PREPARED_STATEMENTS=0 turns both
# off, as a pooler in transaction mode (PgBouncer before 1.21) needs.
if env("DATABASE_PREPARED_STATEMENTS", "1") != "0":
    DATABASES["default"]["OPTIONS"]["server_side_binding"] = True
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = 5
# No JIT compilation: the exchange's statements are short, and one whose estimate crosses
# jit_above_cost pays the compilation on every run (counting a market's 100,000 bids took
# 160-210 ms with JIT and 48-73 ms without on the live benchmark's book; issue 17).
DATABASES["default"]["OPTIONS"]["options"] = "-c jit=off"


def _answers(url: str) -> bool:
    """Whether something listens at ``url``'s host and port (a refused port answers at once)."""
    parts = dj_database_url.parse(url)
    try:
        socket.create_connection((parts["HOST"], int(parts["PORT"])), timeout=0.5).close()
    except OSError:
        return False
    return True


# Historic reads of the event log (SPEC 8.1) go to HISTORY_DATABASE_URL, by default the
# streaming replica ops/services runs beside the local cluster when it is up; without one,
# to the primary. selectors/history.py decides per read whether the replica has the events
# yet (docs/events.md).
_LOCAL_REPLICAS = {
    ports.DEV_DATABASE_URL: ports.DEV_HISTORY_DATABASE_URL,
    ports.TEST_DATABASE_URL: ports.TEST_HISTORY_DATABASE_URL,
}
HISTORY_DATABASE_URL: str | None = env("HISTORY_DATABASE_URL") or (
    _LOCAL_REPLICAS[DATABASE_URL]
    if DATABASE_URL in _LOCAL_REPLICAS and _answers(_LOCAL_REPLICAS[DATABASE_URL])
    else None
)
HISTORY_DATABASE = "default"
if HISTORY_DATABASE_URL and HISTORY_DATABASE_URL != DATABASE_URL:
    HISTORY_DATABASE = "history"
    DATABASES["history"] = dj_database_url.parse(HISTORY_DATABASE_URL)
    DATABASES["history"]["OPTIONS"] = dict(DATABASES["default"]["OPTIONS"])

REDIS_URL: str = env("REDIS_URL") or ports.DEV_REDIS_URL

# The cache (throttle counters) lives in Redis so that a limit holds across worker processes,
# in a database of its own (1 unless CACHE_REDIS_URL says otherwise): clearing the cache then
# never touches the queues and channels in REDIS_URL's database.
CACHE_REDIS_URL = env("CACHE_REDIS_URL", urlunsplit(urlsplit(REDIS_URL)._replace(path="/1")))
CACHES: dict[str, dict[str, Any]] = {
    "default": {
        # Django's Redis backend with one client object per process (exchange/cache.py).
        "BACKEND": "exchange.cache.RedisCache",
        "LOCATION": CACHE_REDIS_URL,
        "KEY_PREFIX": "intersect",
        "OPTIONS": {
            "socket_timeout": 2,
            "socket_connect_timeout": 2,
            # One pool per process, not one per request thread (exchange/cache.py).
            "pool_class": "exchange.cache.SharedConnectionPool",
        },
    }
}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# A task is acknowledged only after it ran, so a worker killed mid-cycle leaves it queued.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A web request that enqueues a task must not hang while Redis is away: try briefly, then
# leave the work to the sweep (the change is already committed).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}
CELERY_REDIS_SOCKET_TIMEOUT = 5
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 5, "socket_connect_timeout": 2}
# Celery's Django fixup closes a worker's database connections before and after every task,
# and in a prefork worker with a connection pool the whole pool: every task then opened new
# PostgreSQL sessions (841 in 30 s of the live benchmark at 20 bids/s, two per task, each a
# server process forked and a connection configured on the path from a bid to its frame).
# With this the fixup recycles the pool only every so many tasks; between tasks the
# connection goes back to the pool (``exchange.celery.connection_give_back``).
CELERY_DB_REUSE_MAX = 1000
# The matching cycle has queues of its own, consumed by workers that run nothing else
# (``celery worker --role matching``, exchange/celery.py): cycles never wait behind other
# tasks. Markets are partitioned across them (SPEC 9, "Scale-out"): market ``m``'s cycles go
# to queue ``f"{MATCHING_QUEUE}.{m % MATCHING_PARTITIONS}"`` (exchange/tasks.py); a worker
# consumes the partitions it is given (``--partitions``, or all). Every process of one
# exchange must have the same MATCHING_PARTITIONS (each market's lock keeps its cycles apart
# even when they differ for a while).
CELERY_TASK_DEFAULT_QUEUE = "celery"
MATCHING_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}.matching"
MATCHING_PARTITIONS = int(env("MATCHING_PARTITIONS", "1"))
CELERY_TASK_ROUTES = {"exchange.matching_cycle": {"queue": f"{MATCHING_QUEUE}.0"}}
# A live subscription whose first unread event is older than this many seconds is lagging:
# the staff dashboard lists it and its ``sub:<id>`` stream is told (issue 39).
SUBSCRIPTION_LAG_SECONDS = float(env("SUBSCRIPTION_LAG_SECONDS", "5"))
# How often beat's sweep looks for what a crash left behind (exchange/tasks.py: the changes
# and notifications waiting longer than its SWEEP_AGE, 5 s, whatever this says).
SWEEP_SECONDS = float(env("SWEEP_SECONDS", "5"))
CELERY_BEAT_SCHEDULE: dict[str, dict] = {
    "sweep": {"task": "exchange.sweep", "schedule": SWEEP_SECONDS},
    "close-due-offers": {"task": "exchange.close_due_offers", "schedule": 10.0},
    # The day before's market analytics (SPEC 7), after the day's last matching cycles.
    "spark-analytics": {"task": "exchange.spark_analytics", "schedule": crontab(minute=30, hour=0)},
    # The event log's daily partitions, a week ahead (SPEC 8.1); hourly, so a missed run
    # costs nothing.
    "event-partitions": {"task": "exchange.event_partitions", "schedule": crontab(minute=5)},
    # The subscriptions lagging behind the log are told so on their streams
    # (exchange/services/subscription_lag.py), at most once per SUBSCRIPTION_LAG_SECONDS.
    "subscriptions-lag": {
        "task": "exchange.subscriptions_lag",
        "schedule": SUBSCRIPTION_LAG_SECONDS,
    },
    # Subscription webhooks read the outbox (exchange/webhook_tasks.py): each round leases
    # the webhooks with a notification due and queues one delivery task for each.
    "webhooks-round": {
        "task": "exchange.webhooks_round",
        "schedule": float(env("WEBHOOK_ROUND_SECONDS", "2")),
    },
}

# Subscription webhooks (exchange/services/webhooks.py, docs/api.md "Webhooks"). Private,
# link-local and reserved addresses are always refused; loopback only when this is set (the
# development and test settings set it: a receiver on 127.0.0.1).
WEBHOOK_ALLOW_LOOPBACK = env_bool("WEBHOOK_ALLOW_LOOPBACK", False)
# Seconds the connection and each read of the answer may wait before the POST counts as a
# failure (a timeout). It bounds each wait, not the whole answer: see the deadline below.
WEBHOOK_TIMEOUT_SECONDS = float(env("WEBHOOK_TIMEOUT_SECONDS", "3"))
# Seconds one POST may take in all (connecting, TLS, sending, the answer's status line and
# headers), after which its socket is shut down and it counts as a failure like a timeout:
# without it a receiver that sends its answer a byte at a time, each within the timeout above,
# holds a delivery task, and so a worker of the default queue, for ever. 10 lets a receiver
# that takes the whole timeout to connect and again to answer through.
WEBHOOK_DEADLINE_SECONDS = float(env("WEBHOOK_DEADLINE_SECONDS", "10"))
# Seconds one delivery task sends for before it leaves the rest to the next round. It is
# checked before each POST, so a task holds its webhook for at most this plus one deadline.
WEBHOOK_RUN_SECONDS = float(env("WEBHOOK_RUN_SECONDS", "10"))
# Seconds a round's claim leases a webhook to the task it queues; a lost task's webhook is
# claimed again after it. It must outlast what a live task can hold the webhook for (the run
# budget plus one POST's deadline, 20 s by default), or the next round would queue a second
# task for the same webhook while the first still sends, and the receiver's stalls would
# take two workers; the 40 s left cover the database writes and a wait in the queue.
WEBHOOK_LEASE_SECONDS = float(env("WEBHOOK_LEASE_SECONDS", "60"))
if not WEBHOOK_LEASE_SECONDS > WEBHOOK_RUN_SECONDS + WEBHOOK_DEADLINE_SECONDS:
    raise ImproperlyConfigured(
        f"WEBHOOK_LEASE_SECONDS is {WEBHOOK_LEASE_SECONDS:g}: give more than "
        f"WEBHOOK_RUN_SECONDS + WEBHOOK_DEADLINE_SECONDS ({WEBHOOK_RUN_SECONDS:g} + "
        f"{WEBHOOK_DEADLINE_SECONDS:g}), the longest a delivery task holds its webhook."
    )
# Failures of one notification in a row after which the webhook stops (set the URL again).
WEBHOOK_MAX_ATTEMPTS = int(env("WEBHOOK_MAX_ATTEMPTS", "10"))

# A buyer's spending limit unless staff set one in the admin (exchange/services/limits.py):
# what the buyer's active bids could cost together, in the price unit of the markets.
# A number from 0 to below 10^20, what a limit staff set can hold (SpendingLimit.amount): a
# bid's placement refuses an award at or past that bound before it could reach its column.
try:
    SPENDING_LIMIT_DEFAULT = Decimal(env("SPENDING_LIMIT_DEFAULT", "100000"))
    _limit_ok = SPENDING_LIMIT_DEFAULT.is_finite() and 0 <= SPENDING_LIMIT_DEFAULT < 10**20
except ArithmeticError:
    _limit_ok = False
if not _limit_ok:
    raise ImproperlyConfigured(
        f"SPENDING_LIMIT_DEFAULT is {env('SPENDING_LIMIT_DEFAULT')!r}: give a number from 0 to "
        "below 10^20 (what a spending limit can hold)."
    )

# The subscription engine (exchange/subscription_engine, issue 35): long-lived processes that
# follow the log with every live subscription in memory; the only way live subscriptions
# advance.
# Partitions the live subscriptions fall into (``id % N``), each leased to one process.
SUBSCRIPTION_ENGINE_PARTITIONS = int(env("SUBSCRIPTION_ENGINE_PARTITIONS", "16"))
# Engine processes ops/run and ops/stack.py start.
SUBSCRIPTION_ENGINE_PROCESSES = int(env("SUBSCRIPTION_ENGINE_PROCESSES", "1"))
# Seconds a lease lasts unless renewed (renewed every third of it): a dead process's
# partitions are taken over after at most this long.
SUBSCRIPTION_ENGINE_LEASE_SECONDS = float(env("SUBSCRIPTION_ENGINE_LEASE_SECONDS", "5"))
# A process that stopped beating this long ago (killed: a clean stop deletes its row at once)
# has its heartbeat row deleted by a live one's upkeep; until then the staff dashboard lists
# it as stopped.
SUBSCRIPTION_ENGINE_PROCESS_RETENTION_SECONDS = float(
    env("SUBSCRIPTION_ENGINE_PROCESS_RETENTION_SECONDS", "3600")
)
# The CPU priority the engine processes run at, a nice value from 0 (the others') to 19 (the
# least): at 19 they take what the order path leaves of the cores, for a host where the
# engines share a few cores with the order path (issue 35 item 7: the bid path beside 10,000
# subscriptions x1.2-1.3 slower at p50 instead of x1.4-1.7), at a cost to the alerts' tail at 100,000
# (p99 over SPEC 9's 250 ms in 3 of 4 runs at 10 or 19, against none of 4 at 0; docs/benchmarks.md).
# Applied to the process and, when it leads its own session as ops/stack.py starts it, to
# the session's autogroup, which is what Linux weighs against the other processes' groups.
SUBSCRIPTION_ENGINE_NICE = int(env("SUBSCRIPTION_ENGINE_NICE", "0"))
if not 0 <= SUBSCRIPTION_ENGINE_NICE <= 19:
    raise ImproperlyConfigured(
        f"SUBSCRIPTION_ENGINE_NICE is {SUBSCRIPTION_ENGINE_NICE}: give a nice value from 0 to 19."
    )
# The evaluators are stored (a checkpoint) every this many events or seconds.
SUBSCRIPTION_ENGINE_CHECKPOINT_EVENTS = int(env("SUBSCRIPTION_ENGINE_CHECKPOINT_EVENTS", "20000"))
SUBSCRIPTION_ENGINE_CHECKPOINT_SECONDS = float(env("SUBSCRIPTION_ENGINE_CHECKPOINT_SECONDS", "60"))

# The constraint store strategy the exchange matches with (SPEC 4): "range" or "paper".
MATCHING_STRATEGY = env("MATCHING_STRATEGY", "range")

CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # capacity: messages waiting for one socket before channels-redis drops some (the
        # oldest, in the process's buffer; the newest, in Redis). Its default of 100 lost
        # frames on a market socket that fell a few seconds behind at 50 bids/s (the live
        # benchmark saw 421 of 2,000); 1,000 covers 20 s of that stream, about 300 kB.
        "CONFIG": {"hosts": [REDIS_URL], "prefix": "intersect", "capacity": 1000},
    }
}

# Every JSON body (API, the UI's JSON endpoints) and WebSocket frame is checked against these
# before it is parsed: a larger body gets a 413, deeper nesting a 400 (exchange/http.py).
JSON_MAX_BYTES = int(env("JSON_MAX_BYTES", str(256 * 1024)))
JSON_MAX_DEPTH = 32

# An adapter import over the API (POST /api/v1/markets/<subject>/import/, docs/adapters.md):
# a larger body gets a 413, more rows a 413 naming the first row over (exchange/api/imports.py).
IMPORT_MAX_BYTES = int(env("IMPORT_MAX_BYTES", str(1024 * 1024)))
IMPORT_MAX_ROWS = int(env("IMPORT_MAX_ROWS", "1000"))
# A form's body (the UI's and the admin's), which Django checks by its declared length: no
# larger than an import, the largest body the exchange takes (Django's default is 2.5 MB).
DATA_UPLOAD_MAX_MEMORY_SIZE = IMPORT_MAX_BYTES
# The largest body any request may have: the web tier's door reads no more of one and
# answers 413 (exchange/admission.py), so no upload fills a process's memory or disk.
BODY_MAX_BYTES = max(JSON_MAX_BYTES, IMPORT_MAX_BYTES, DATA_UPLOAD_MAX_MEMORY_SIZE)

# Frames a WebSocket connection may send: a burst, then a steady rate. Frames past it are
# dropped with one error a second; dropping frames in this many seconds in a row closes the
# connection (4029; exchange/realtime/limits.py).
WS_FRAMES_PER_SECOND = float(env("WS_FRAMES_PER_SECOND", "20"))
WS_FRAME_BURST = int(env("WS_FRAME_BURST", "40"))
WS_FLOOD_WINDOWS = int(env("WS_FLOOD_WINDOWS", "10"))
# Per user (per client address without a login), over every server process: open WebSocket
# connections (one more is closed with 4013) and streams followed over all of them (one
# more gets a too_many_streams error). They bound what one user adds to a presence read.
WS_MAX_CONNECTIONS_PER_USER = int(env("WS_MAX_CONNECTIONS_PER_USER", "10"))
WS_MAX_STREAMS_PER_USER = int(env("WS_MAX_STREAMS_PER_USER", "400"))

# Redis key prefix of the WebSocket presence (who watches what, announced names).
PRESENCE_PREFIX = "intersect:presence"
# A server process's presence entries live this long unless its heartbeat renews them, so
# those of a killed server vanish within it (SPEC 8.2 asks for 60 s at most).
PRESENCE_TTL_SECONDS = int(env("PRESENCE_TTL_SECONDS", "30"))
PRESENCE_HEARTBEAT_SECONDS = float(env("PRESENCE_HEARTBEAT_SECONDS", "10"))
CYCLE_PENDING_KEY = "intersect:cycle-pending"
# Each Celery worker records its last beat here (exchange/celery.py); /healthz counts a worker
# as up if it beat within the last WORKER_HEARTBEAT_STALE_SECONDS.
WORKER_HEARTBEAT_KEY = "intersect:worker-heartbeat"
# The workers that consume the matching queue beat here as well (``exchange.celery``).
MATCHING_HEARTBEAT_KEY = "intersect:matching-heartbeat"
# The subscription engine's processes beat here too (exchange/subscription_engine/engine.py).
SUBSCRIPTION_ENGINE_HEARTBEAT_KEY = "intersect:subscription-engine-heartbeat"
WORKER_HEARTBEAT_SECONDS = 5.0
WORKER_HEARTBEAT_STALE_SECONDS = 20.0

SPARK_MASTER = env("SPARK_MASTER", "local[2]")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / ".data" / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

LOGIN_URL = "frontend:login"
# The UI's Content-Security-Policy (exchange/middleware.py): everything from the site itself;
# ``{nonce}`` is the request's, for the import map. 'self' covers the same-origin WebSocket.
CONTENT_SECURITY_POLICY = "; ".join(  # noqa: FLY002 - one directive a line reads better
    [
        "default-src 'self'",
        "script-src 'self' 'nonce-{nonce}'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
CSP_EXEMPT_PREFIXES = ("/admin/", "/staff/", "/api/")
CSRF_FAILURE_VIEW = "exchange.views.errors.csrf_failure"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REST_FRAMEWORK = {
    # drf-spectacular's, plus the error responses and headers of every operation.
    "DEFAULT_SCHEMA_CLASS": "exchange.api.schema.ExchangeSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # DRF's, with its lookup as one statement (exchange/api/authentication.py).
        "exchange.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PAGINATION_CLASS": "exchange.api.pagination.Pagination",
    "PAGE_SIZE": 100,
    "DEFAULT_FILTER_BACKENDS": [],
    # DRF's throttles, let through while Redis is unreachable (exchange/throttling.py).
    "DEFAULT_THROTTLE_CLASSES": [
        "exchange.throttling.AnonRateThrottle",
        "exchange.throttling.UserRateThrottle",
        "exchange.throttling.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env("THROTTLE_ANON", "120/min"),
        "user": env("THROTTLE_USER", "6000/min"),
        "auth": env("THROTTLE_AUTH", "30/min"),
        # Login, admin login, registration and token creation (exchange/throttling.py): every
        # attempt per client address; failed attempts per account name from one client.
        "login_client": env("THROTTLE_LOGIN_CLIENT", "30/min"),
        "login_account": env("THROTTLE_LOGIN_ACCOUNT", "10/min"),
        # The UI's constraint check as you type, per client.
        "check": env("THROTTLE_CHECK", "120/min"),
        # Adapter imports over the API, per user (each request may hold IMPORT_MAX_ROWS orders).
        "import": env("THROTTLE_IMPORT", "10/min"),
        # Subscription backtests, per user (each reads up to 100,000 events).
        "backtest": env("THROTTLE_BACKTEST", "30/min"),
    },
    # X-Forwarded-For is never read here: uvicorn resolves it from TRUSTED_PROXIES (below)
    # into the peer address, which the throttles key on. Reading it again would take an
    # entry that a client sent past the proxy, or straight to the server.
    "NUM_PROXIES": 0,
    "EXCEPTION_HANDLER": "exchange.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON only, read with its size and nesting checked first (exchange/http.py).
    "DEFAULT_PARSER_CLASSES": ["exchange.api.parsers.BoundedJSONParser"],
    "COERCE_DECIMAL_TO_STRING": True,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Intersect API",
    "DESCRIPTION": (
        "Symmetric publish/subscribe exchange: offers and bids as constraints. "
        "The guide for bots (authentication, the WebSocket and resuming it, errors, "
        "idempotency, rate limits, the constraint language) is at [/docs/api/](/docs/api/)."
    ),
    "VERSION": "1.0.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A subscription's state is one enum, whichever serializer shows it (the detail's has
    # ``behind_events`` too): without this the schema names it after a hash.
    "ENUM_NAME_OVERRIDES": {"SubscriptionStateEnum": "exchange.models.Subscription.State"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",  # the default
        "exchange.api.schema.shared_error_responses",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
}
