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

# The interpreter the virtualenv is made from: Debian's own Python 3.11 wherever there is one,
# whatever `python3` names first on the PATH (on these machines, pyenv's 3.11.7). Debian builds
# its interpreter with profile-guided and link-time optimization, which pyenv's default build
# leaves out: pure Python takes a fifth to a quarter less CPU on it, and a bid's server CPU,
# much of it in C extensions and the kernel, 6.5% less (docs/benchmarks.md, *The interpreter*).
base_python() {
  if [ -x /usr/bin/python3.11 ]; then echo /usr/bin/python3.11; else command -v python3; fi
}

# That interpreter's own file, as `venv` records it in pyvenv.cfg (`executable`): a pyenv or
# asdf shim is a script that runs it, not a link that `readlink` could follow.
base_interpreter() {
  "$(base_python)" -c 'import os, sys; print(os.path.realpath(sys.executable))'
}

bootstrap_apt() {
  local missing python
  missing="$(missing_apt_packages "$@")"
  python="$(base_python)"
  if ! "$python" -c "import ensurepip, venv" >/dev/null 2>&1; then
    # Debian's python3.11 has its own package; python3-venv is the default python3's, which
    # on another release may not be 3.11.
    if [ "$python" = /usr/bin/python3.11 ]; then
      missing="$missing python3.11-venv"
    else
      missing="$missing python3-venv"
    fi
  fi
  [ -z "${missing// /}" ] && return 0
  say "installing system packages:" $missing
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  # shellcheck disable=SC2086
  as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# The interpreter a virtualenv was made from (its pyvenv.cfg), or nothing.
venv_base() {
  sed -n 's/^executable = //p' "$VENV/pyvenv.cfg" 2>/dev/null || true
}

bootstrap_venv() {
  local stamp want base made
  base="$(base_interpreter)"
  made="$(venv_base)"
  if [ -x "$PY" ] && [ "$made" != "$base" ]; then
    say "making the virtualenv again from $base (it was made from ${made:-an older venv})"
    rm -rf "$VENV"  # a link (a worktree's .venv) goes, not what it points to
  fi
  # A link to a virtualenv that is not there (another checkout's, being made again): this
  # checkout makes its own, where `venv` would refuse the dangling link.
  if [ -L "$VENV" ] && [ ! -e "$VENV" ]; then
    rm -f "$VENV"
  fi
  if [ ! -x "$PY" ]; then
    say "creating the virtualenv in .venv from $base"
    "$base" -m venv "$VENV"
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

# Front-end libraries of the web UI, served by the app itself (never from a CDN). `npm ci` runs
# only when frontend/package-lock.json (or the list below) changed or a copied file is missing;
# then just the files the pages load are copied to frontend/static/vendor/ (gitignored).
VENDOR_FILES=(
  "htmx.org/dist/htmx.min.js:htmx.min.js"
  "htmx.org/LICENSE:htmx.LICENSE.txt"
  "lightweight-charts/dist/lightweight-charts.standalone.production.mjs:lightweight-charts.mjs"
  "lightweight-charts/LICENSE:lightweight-charts.LICENSE.txt"
)
# What only the browser tests load (axe-core's accessibility checks, injected by Playwright):
# copied to frontend/test-vendor/ (gitignored), outside static/, so the app never serves it.
TEST_VENDOR_FILES=(
  "axe-core/axe.min.js:axe.min.js"
  "axe-core/LICENSE:axe-core.LICENSE.txt"
)

vendor_current() {  # vendor_current STAMP WANT: installed from this lock file, nothing missing
  local item
  [ "$(cat "$1" 2>/dev/null)" = "$2" ] || return 1
  for item in "${VENDOR_FILES[@]}"; do
    [ -f "$ROOT/frontend/static/vendor/${item##*:}" ] || return 1
  done
  for item in "${TEST_VENDOR_FILES[@]}"; do
    [ -f "$ROOT/frontend/test-vendor/${item##*:}" ] || return 1
  done
}

bootstrap_frontend() {
  local dir="$ROOT/frontend" vendor="$ROOT/frontend/static/vendor" stamp want item
  want="$( { cat "$dir/package-lock.json"; printf '%s\n' "${VENDOR_FILES[@]}" "${TEST_VENDOR_FILES[@]}"; } \
    | sha256sum | cut -c1-16)"
  stamp="$dir/node_modules/.intersect-vendor"
  vendor_current "$stamp" "$want" && return 0
  command -v npm >/dev/null 2>&1 || bootstrap_apt nodejs npm
  say "installing front-end libraries (frontend/package-lock.json changed or first run)"
  mkdir -p "$ROOT/.data"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$ROOT/.data/npm-ci.log" 2>&1; then
    tail -n 30 "$ROOT/.data/npm-ci.log" >&2
    echo "npm ci failed; the whole log is in .data/npm-ci.log" >&2
    return 1
  fi
  mkdir -p "$vendor" "$dir/test-vendor"
  for item in "${VENDOR_FILES[@]}"; do
    cp "$dir/node_modules/${item%%:*}" "$vendor/${item##*:}"
  done
  for item in "${TEST_VENDOR_FILES[@]}"; do
    cp "$dir/node_modules/${item%%:*}" "$dir/test-vendor/${item##*:}"
  done
  echo "$want" > "$stamp"
}

# bootstrap [--browser]: everything ops/run needs, plus the browser for ops/test.
bootstrap() {
  local packages=("${APT_PACKAGES[@]}")
  [ "${1:-}" = "--browser" ] && packages+=("${BROWSER_PACKAGES[@]}")
  bootstrap_apt "${packages[@]}"
  bootstrap_venv
  bootstrap_frontend
}
