#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for Herald's tests: a fresh data
# directory under a temporary folder, owned by the postgres user (the
# server refuses to run as root), listening on 127.0.0.1 on a free port,
# with one database "herald".
#
# Sourced, it exports HERALD_TEST_POSTGRES_URL and defines
# herald_postgres_stop, which stops the cluster and removes its folder:
#
#   source scripts/postgres.sh && trap herald_postgres_stop EXIT
#
# Run, it starts the cluster, prints the export line and leaves the
# cluster running; `scripts/postgres.sh stop DIR` stops one started so,
# and `scripts/postgres.sh restart DIR fast|immediate` restarts it (the
# replica chaos test restarts its own cluster so).
set -euo pipefail

herald_postgres_bindir() {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir=$(pg_config --bindir)
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  echo "postgres.sh: no PostgreSQL server binaries (initdb) found; install them with: apt-get install -y postgresql" >&2
  return 1
}

# herald_postgres_run runs a server binary as the postgres user when root.
herald_postgres_run() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

herald_postgres_start() {
  local bindir port
  bindir=$(herald_postgres_bindir)
  HERALD_POSTGRES_DIR=$(mktemp -d /tmp/herald-postgres.XXXXXX)
  chmod 755 "$HERALD_POSTGRES_DIR"
  mkdir -p "$HERALD_POSTGRES_DIR/data" "$HERALD_POSTGRES_DIR/sock"
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$HERALD_POSTGRES_DIR/data" "$HERALD_POSTGRES_DIR/sock"
  fi
  herald_postgres_run "$bindir/initdb" -D "$HERALD_POSTGRES_DIR/data" -U postgres -A trust --no-sync >"$HERALD_POSTGRES_DIR/initdb.log" 2>&1 ||
    { cat "$HERALD_POSTGRES_DIR/initdb.log" >&2; return 1; }
  # A random high port; another is tried when it is taken. Tests run many
  # stores at once, each with a small pool and a listener connection.
  local try
  for try in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    if herald_postgres_run "$bindir/pg_ctl" -D "$HERALD_POSTGRES_DIR/data" -w -l "$HERALD_POSTGRES_DIR/sock/server.log" \
      -o "-p $port -k $HERALD_POSTGRES_DIR/sock -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off" start >/dev/null; then
      break
    fi
    if [ "$try" = 5 ]; then cat "$HERALD_POSTGRES_DIR/sock/server.log" >&2; return 1; fi
  done
  herald_postgres_run "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres herald
  export HERALD_POSTGRES_DIR
  export HERALD_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/herald?sslmode=disable"
}

herald_postgres_stop() {
  local dir=${1:-${HERALD_POSTGRES_DIR:-}}
  [ -n "$dir" ] && [ -d "$dir/data" ] || return 0
  herald_postgres_run "$(herald_postgres_bindir)/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

# herald_postgres_restart restarts the cluster in DIR with the shutdown
# mode MODE (fast: connections are ended and the server stops cleanly;
# immediate: it stops at once, as in a crash, and recovers at start), on
# the same port, and waits until it takes connections again.
herald_postgres_restart() {
  local dir=${1:?usage: postgres.sh restart DIR fast|immediate} mode=${2:?usage: postgres.sh restart DIR fast|immediate}
  herald_postgres_run "$(herald_postgres_bindir)/pg_ctl" -D "$dir/data" -m "$mode" -w -l "$dir/sock/server.log" restart >/dev/null
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  if [ "${1:-}" = stop ]; then
    herald_postgres_stop "${2:?usage: postgres.sh stop DIR}"
    exit 0
  fi
  if [ "${1:-}" = restart ]; then
    herald_postgres_restart "${2:-}" "${3:-}"
    exit 0
  fi
  herald_postgres_start
  echo "export HERALD_TEST_POSTGRES_URL='$HERALD_TEST_POSTGRES_URL'"
  echo "# stop with: scripts/postgres.sh stop $HERALD_POSTGRES_DIR"
else
  herald_postgres_start
fi
