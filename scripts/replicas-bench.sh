#!/usr/bin/env bash
# Measures Herald with several `herald serve --store postgres` replicas on
# one database (docs/performance.md, Several replicas):
#
#   - idle cost: transactions a second each idle replica makes the
#     database run (xact_commit + xact_rollback of pg_stat_database, read
#     from another database so that the reads do not count), over
#     IDLE_SECS seconds with 1 and with 3 replicas;
#   - cross-replica live reads: herald-bench live appends through one
#     replica and reads (long-poll, then SSE) through another.
#
# With KILL_AT=S it runs, instead, the no-lost-wake benchmark with a
# replica killed: herald-bench webhook (-streams/-c STREAMS, for
# WEBHOOK_SECS seconds) against REPLICAS (3) replicas, appending and
# calling back through the first, while the last is killed with -9 S
# seconds into the run. Every loop that waits more than WAKE_TIMEOUT
# (15s) for a wake counts as stalled.
#
# Needs HERALD_TEST_POSTGRES_URL (a server where it may create and drop
# the database herald_replicas): `source scripts/postgres.sh` first.
set -euo pipefail
: "${HERALD_TEST_POSTGRES_URL:?source scripts/postgres.sh first}"
IDLE_SECS=${IDLE_SECS:-30}
N=${N:-1000}
KILL_AT=${KILL_AT:-}
REPLICAS=${REPLICAS:-3}
STREAMS=${STREAMS:-200}
WEBHOOK_SECS=${WEBHOOK_SECS:-40}
WAKE_TIMEOUT=${WAKE_TIMEOUT:-15s}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/herald-replicas.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

admin=$HERALD_TEST_POSTGRES_URL
db_url=${admin/\/herald\?//herald_replicas?}
psql -qAt "$admin" -c 'DROP DATABASE IF EXISTS herald_replicas' -c 'CREATE DATABASE herald_replicas'
(cd "$root" && go build -o "$work/herald" ./cmd/herald && go build -o "$work/herald-bench" ./cmd/herald-bench)

port=$((21000 + RANDOM % 20000))
# start_replicas N [FLAG...]: starts N replicas sharing one key-encryption
# key, each with the flags given.
start_replicas() {
  local i n=$1
  shift
  for ((i = 0; i < n; i++)); do
    port=$((port + 1))
    mkdir -p "$work/r$port"
    "$work/herald" serve --store postgres --postgres-url "$db_url" --kek-file "$work/herald.kek" \
      --data-dir "$work/r$port" --addr "127.0.0.1:$port" --log-level warn "$@" >"$work/r$port/log" 2>&1 &
    pids+=($!)
    until curl -fs "http://127.0.0.1:$port/_herald/readyz" >/dev/null; do sleep 0.1; done
    bases+=("http://127.0.0.1:$port")
  done
}
stop_replicas() {
  local p
  for p in "${pids[@]}"; do kill "$p"; done
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
  bases=()
}
xacts() {
  psql -qAt "$admin" -c "SELECT pg_stat_clear_snapshot(); SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'herald_replicas'" | tail -1
}

bases=()
if [ -n "$KILL_AT" ]; then
  # Every replica names the first in its wakes' callback URL, as a load
  # balancer in front of them would: the consumer's callbacks must not
  # follow the replica that is killed.
  first=http://127.0.0.1:$((port + 1))
  start_replicas "$REPLICAS" --webhook-allow-cidrs 127.0.0.0/8 --public-url "$first"
  victim=${pids[$((REPLICAS - 1))]}
  "$work/herald-bench" webhook -base "${bases[0]}" -streams "$STREAMS" -c "$STREAMS" -lat 0 \
    -d "${WEBHOOK_SECS}s" -wake-timeout "$WAKE_TIMEOUT" -mode callback &
  bench=$!
  sleep "$KILL_AT"
  # How many wakes each replica had sent: the one killed was sending its
  # share.
  for b in "${bases[@]}"; do
    curl -fs "$b/_herald/metrics" | awk -v b="$b" '/^herald_subscription_webhook_deliveries_total/ { n += $NF }
      END { printf "%s had sent %d wakes\n", b, n }'
  done
  kill -9 "$victim"
  echo "killed replica ${bases[$((REPLICAS - 1))]} (pid $victim) with -9 at ${KILL_AT}s"
  wait "$bench"
  exit
fi
# The first start creates the tables; the measure with no replica then
# counts what the database does by itself (autovacuum visits), which the
# per-replica figures leave out.
start_replicas 1
stop_replicas
base=0
for n in 0 1 3; do
  start_replicas "$n"
  sleep 5 # start-up work done
  before=$(xacts)
  sleep "$IDLE_SECS"
  after=$(xacts)
  d=$((after - before))
  if [ "$n" = 0 ]; then
    base=$d
    awk -v d="$d" -v s="$IDLE_SECS" 'BEGIN { printf "idle, no replica: %.2f transactions/s (the database itself)\n", d / s }'
  else
    awk -v n="$n" -v d="$d" -v b="$base" -v s="$IDLE_SECS" \
      'BEGIN { printf "idle, %d replicas: %.2f transactions/s, %.2f per replica beyond the database itself\n", n, d / s, (d - b) / s / n }'
  fi
  stop_replicas
done

start_replicas 2
for mode in long-poll sse; do
  "$work/herald-bench" live -base "${bases[0]}" -read-base "${bases[1]}" -mode "$mode" -n "$N"
done
stop_replicas
