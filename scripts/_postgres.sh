# A throw-away PostgreSQL for the test suite, sourced by scripts/test (after _bootstrap.sh).
# Installs Debian's postgresql when missing (as _bootstrap.sh does chromium), initdb's a cluster
# in a temporary directory, starts it on a unix socket and a loopback port, creates a database,
# exports APP_TEST_POSTGRES_URL and stops the server (and removes the directory) on exit.
# An APP_TEST_POSTGRES_URL already set (e.g. a CI service container) is used as it is.
if [ -z "${APP_TEST_POSTGRES_URL:-}" ]; then
  pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
  if [ -z "$(pg_bindir)" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing Debian's postgresql (store and share tests run on it too)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
  fi
  PG_BIN="$(pg_bindir)"
  if [ -z "$PG_BIN" ]; then
    echo "error: PostgreSQL is not installed and could not be installed" >&2
    exit 1
  fi
  PG_TMP="$(mktemp -d /tmp/stepscope-pg.XXXXXX)"
  # initdb refuses to run as root: run the server as Debian's postgres user then.
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$PG_TMP"
    as_pg() { runuser -u postgres -- "$@"; }
  else
    as_pg() { "$@"; }
  fi
  PG_PORT="$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  _stop_postgres() {
    as_pg "$PG_BIN/pg_ctl" -D "$PG_TMP/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_TMP"
  }
  trap _stop_postgres EXIT
  echo "==> starting a temporary PostgreSQL ($("$PG_BIN/postgres" --version | awk '{print $3}')) on 127.0.0.1:$PG_PORT"
  as_pg "$PG_BIN/initdb" -D "$PG_TMP/data" -A trust -U stepscope -E UTF8 --no-sync >/dev/null
  as_pg "$PG_BIN/pg_ctl" -D "$PG_TMP/data" -l "$PG_TMP/server.log" -w -t 30 \
    -o "-k $PG_TMP -p $PG_PORT -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null
  "$PG_BIN/createdb" -h "$PG_TMP" -p "$PG_PORT" -U stepscope stepscope_test
  export APP_TEST_POSTGRES_URL="postgresql+psycopg://stepscope@127.0.0.1:$PG_PORT/stepscope_test"
fi
# Tests that take a database fail (rather than skip) the PostgreSQL case when this is missing.
export APP_TEST_POSTGRES_REQUIRED=1
