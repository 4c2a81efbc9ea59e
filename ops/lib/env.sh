# Shared by ops/run, ops/test and ops/services: where the project and its local services live.
# Their ports and URLs come from ops/lib/ports.env, which the settings read too.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

# INTERSECT_PROFILE=dev (ops/run) or test (ops/test): separate data directories and ports,
# so a test run never touches the services of a running ops/run.
INTERSECT_PROFILE="${INTERSECT_PROFILE:-dev}"
source "$ROOT/ops/lib/ports.env"
case "$INTERSECT_PROFILE" in
  dev)  PG_PORT=$DEV_POSTGRES_PORT; REDIS_PORT=$DEV_REDIS_PORT
        REPLICA_PORT=$DEV_POSTGRES_REPLICA_PORT
        LOCAL_DATABASE_URL=$DEV_DATABASE_URL; LOCAL_REDIS_URL=$DEV_REDIS_URL ;;
  test) PG_PORT=$TEST_POSTGRES_PORT; REDIS_PORT=$TEST_REDIS_PORT
        REPLICA_PORT=$TEST_POSTGRES_REPLICA_PORT
        LOCAL_DATABASE_URL=$TEST_DATABASE_URL; LOCAL_REDIS_URL=$TEST_REDIS_URL ;;
  *) echo "unknown INTERSECT_PROFILE=$INTERSECT_PROFILE (dev or test)" >&2; exit 2 ;;
esac
DATA_DIR="$ROOT/.data/$INTERSECT_PROFILE"
PG_DATA="$DATA_DIR/pg"
PG_RUN="$DATA_DIR/pg-run"
REDIS_DIR="$DATA_DIR/redis"
# The streaming replica (hot standby) of PG_DATA's cluster, on REPLICA_PORT.
REPLICA_DATA="$DATA_DIR/pg-replica"
REPLICA_RUN="$DATA_DIR/pg-replica-run"

say() { printf '\033[1m[intersect]\033[0m %s\n' "$*"; }

# Run a command as root (directly, or through sudo when we are not root).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}

# Run a command as the postgres system user.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -n -u postgres "$@"; fi
}

pg_bin() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$dir" ] || { echo "PostgreSQL server binaries not found under /usr/lib/postgresql" >&2; return 1; }
  echo "$dir"
}
