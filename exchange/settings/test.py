"""Test runs: the separate test services that ops/test starts (their own ports and data)."""

import os

from . import ports

# ops/test exports these; the defaults are the test services of ops/lib/ports.env, so pytest
# also works by hand once `ops/services --test start` has run.
os.environ.setdefault("DATABASE_URL", ports.TEST_DATABASE_URL)
os.environ.setdefault("REDIS_URL", ports.TEST_REDIS_URL)
# The throttle counters live in Redis and outlast a test: generous rates here so that logging
# in many times across a run is never refused; tests of the throttles set their own rates.
for _scope in ("ANON", "AUTH", "LOGIN_CLIENT", "LOGIN_ACCOUNT", "CHECK"):
    os.environ.setdefault(f"THROTTLE_{_scope}", "100000/min")
# The sweep looks every second rather than every 5 s: the tests of a killed worker or an
# outage waited up to a whole period after a change became old enough to be swept (its age
# threshold, 5 s, stays: a younger change or notification is still on its way).
os.environ.setdefault("SWEEP_SECONDS", "1")

from .base import *  # noqa: E402,F403 - base's settings, read after the variables above
from .base import CACHES, CHANNEL_LAYERS, DATABASES, env  # noqa: E402 - the ones amended below

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# Connections opened by worker threads (database_sync_to_async) close after each use, so no
# session lingers on the test database when the run ends.
DATABASES["default"]["CONN_MAX_AGE"] = 0
DATABASES["default"]["OPTIONS"].pop("pool", None)  # nor are they pooled

# Several test runs may share the test services (two terminals, parallel helpers): each run
# gets its own test database, Celery queue and channel-layer prefix. The processes a run starts
# (uvicorn, the Celery worker, beat) inherit the run id through the environment.
TEST_RUN = os.environ.setdefault("INTERSECT_TEST_RUN", str(os.getpid()))
DATABASES["default"]["TEST"] = {"NAME": f"test_intersect_{TEST_RUN}"}
# The replica copies the run's database from the primary, so it only takes its name; tests
# read history from the primary (their rows are not committed) unless they ask for the
# replica (tests/history/test_replica.py).
HISTORY_DATABASE = "default"
if "history" in DATABASES:
    DATABASES["history"]["TEST"] = {"MIRROR": "default"}
    DATABASES["history"]["CONN_MAX_AGE"] = 0
    DATABASES["history"]["OPTIONS"].pop("pool", None)
CELERY_TASK_DEFAULT_QUEUE = f"intersect-{TEST_RUN}"
MATCHING_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}.matching"
CELERY_TASK_ROUTES = {"exchange.matching_cycle": {"queue": f"{MATCHING_QUEUE}.0"}}
# Two matching partitions, so that every test runs the partitioned cycles (the stack's one
# matching worker consumes both, as ``ops/run``'s does); the children inherit it.
MATCHING_PARTITIONS = int(env("MATCHING_PARTITIONS", "2"))
CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = f"intersect-{TEST_RUN}"
PRESENCE_PREFIX = f"intersect-{TEST_RUN}:presence"
# A killed server's announcements lapse after 10 s rather than 30 (tests/stack/test_presence.py
# waited the 30 out); the live servers renew every 2.5 s, so a stall of several seconds on a
# loaded machine still leaves theirs in place.
PRESENCE_TTL_SECONDS = int(env("PRESENCE_TTL_SECONDS", "10"))
PRESENCE_HEARTBEAT_SECONDS = float(env("PRESENCE_HEARTBEAT_SECONDS", "2.5"))
# Tests share one server id (the test process) and many leave sockets open: the per-user
# caps are out of the way except where a test sets them (tests/realtime/test_caps.py).
WS_MAX_CONNECTIONS_PER_USER = int(env("WS_MAX_CONNECTIONS_PER_USER", "100000"))
WS_MAX_STREAMS_PER_USER = int(env("WS_MAX_STREAMS_PER_USER", "100000"))
# Likewise the event-log exports streaming at once (tests/events/test_export_limits.py sets
# its own): a test that reads a streamed response only in part keeps its slot.
EVENT_EXPORTS_PER_PROCESS = int(env("EVENT_EXPORTS_PER_PROCESS", "100000"))
EVENT_EXPORTS_PER_CLIENT = int(env("EVENT_EXPORTS_PER_CLIENT", "100000"))
CYCLE_PENDING_KEY = f"intersect-{TEST_RUN}:cycle-pending"
WORKER_HEARTBEAT_KEY = f"intersect-{TEST_RUN}:worker-heartbeat"
MATCHING_HEARTBEAT_KEY = f"intersect-{TEST_RUN}:matching-heartbeat"
CACHES["default"]["KEY_PREFIX"] = f"intersect-{TEST_RUN}"

# The webhook tests run their receiver on 127.0.0.1.
WEBHOOK_ALLOW_LOOPBACK = True
