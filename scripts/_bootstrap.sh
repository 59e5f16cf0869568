# Shared by scripts/serve and scripts/test: a local venv with the project installed, and the
# front-end packages from the npm registry. Sourced, not run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
extras="${1:-}"
stamp=".venv/.installed${extras:+-$extras}"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $PY"
  if ! "$PY" -m venv .venv 2>/dev/null; then
    # Debian's python3.11 ships venv/ensurepip separately.
    rm -rf .venv
    echo "==> installing Debian's python3-venv"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-venv >/dev/null
    "$PY" -m venv .venv
  fi
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "==> installing Python packages"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".${extras:+[$extras]}"
  touch "$stamp"
fi
if [ ! -d node_modules/htmx.org ] || [ package.json -nt node_modules/.package-lock.json ]; then
  echo "==> installing front-end packages from npm"
  npm install --no-audit --no-fund --loglevel=error
fi
if { [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/opentype/noto ]; } && command -v apt-get >/dev/null 2>&1; then
  # PNG export (and the browser tests) draw pages in Debian's chromium; Chinese pages need CJK
  # fonts (Noto CJK) or their text draws as empty boxes.
  echo "==> installing Debian's chromium and Noto CJK fonts (PNG export, browser tests)"
  { as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; } \
    || echo "warning: chromium or fonts not installed; PNG export may answer 503"
fi
# gettext catalogs: .po files are committed, the .mo files the app reads are built here.
.venv/bin/pybabel compile -d app/locale --use-fuzzy >/dev/null
# The simulations' hot modules compiled by mypyc into .native/ (skipped when current; without a
# compiler it warns and the pure-Python modules run): scripts/build_native.py, app/sim/native.py.
# scripts/test sets NATIVE_LATER=1 and builds them itself, beside its type check.
[ "${NATIVE_LATER:-0}" = 1 ] || .venv/bin/python scripts/build_native.py
mkdir -p data
