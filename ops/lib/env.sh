# Shared by ops/run, ops/test and ops/services: where the project and its local services live.
# Ports and URLs here must agree with exchange/settings/base.py and exchange/settings/test.py.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

# INTERSECT_PROFILE=dev (ops/run) or test (ops/test): separate data directories and ports,
# so a test run never touches the services of a running ops/run.
INTERSECT_PROFILE="${INTERSECT_PROFILE:-dev}"
case "$INTERSECT_PROFILE" in
  dev)  PG_PORT=55432; REDIS_PORT=56379 ;;
  test) PG_PORT=55433; REDIS_PORT=56380 ;;
  *) echo "unknown INTERSECT_PROFILE=$INTERSECT_PROFILE (dev or test)" >&2; exit 2 ;;
esac
DATA_DIR="$ROOT/.data/$INTERSECT_PROFILE"
PG_DATA="$DATA_DIR/pg"
PG_RUN="$DATA_DIR/pg-run"
REDIS_DIR="$DATA_DIR/redis"
LOCAL_DATABASE_URL="postgres://intersect:intersect@127.0.0.1:$PG_PORT/intersect"
LOCAL_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"

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
