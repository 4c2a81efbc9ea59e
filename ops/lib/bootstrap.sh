# Installs what is missing: apt packages, the virtualenv and the project (editable, dev extras).
# Idempotent and quick when everything is there. Sourced after ops/lib/env.sh.

APT_PACKAGES=(postgresql postgresql-contrib redis-server default-jre-headless libpostgresql-jdbc-java)
BROWSER_PACKAGES=(chromium chromium-driver)

missing_apt_packages() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

bootstrap_apt() {
  local missing
  missing="$(missing_apt_packages "$@")"
  if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing="$missing python3-venv"
  fi
  [ -z "${missing// /}" ] && return 0
  say "installing system packages:" $missing
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  # shellcheck disable=SC2086
  as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

bootstrap_venv() {
  local stamp want
  if [ ! -x "$PY" ]; then
    say "creating the virtualenv in .venv"
    python3 -m venv "$VENV"
  fi
  want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
  stamp="$VENV/.intersect-installed"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing Python packages (pyproject.toml changed or first run)"
    "$PY" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    mkdir -p "$ROOT/.data"
    if ! (cd "$ROOT" && "$PY" -m pip install --disable-pip-version-check -e ".[dev]") \
        >"$ROOT/.data/pip-install.log" 2>&1; then
      tail -n 30 "$ROOT/.data/pip-install.log" >&2
      echo "pip install failed; the whole log is in .data/pip-install.log" >&2
      return 1
    fi
    echo "$want" > "$stamp"
  fi
}

# bootstrap [--browser]: everything ops/run needs, plus the browser for ops/test.
bootstrap() {
  local packages=("${APT_PACKAGES[@]}")
  [ "${1:-}" = "--browser" ] && packages+=("${BROWSER_PACKAGES[@]}")
  bootstrap_apt "${packages[@]}"
  bootstrap_venv
}
