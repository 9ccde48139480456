#!/usr/bin/env bash
# Measures Herald with its load generator, cmd/herald-bench: the workloads
# of docs/performance.md. Builds herald and herald-bench from this
# repository, then takes every figure RUNS times (default 3), each run on
# fresh servers with empty data directories. Every JSON line goes to stdout
# and to bench-results.jsonl; the one-line summaries go to stderr.
# Usage: scripts/bench.sh [RUNS]   (HERALD_BENCH_PORT: the port, default 4437)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
go build -o "$work/herald" ./cmd/herald
go build -o "$work/herald-bench" ./cmd/herald-bench
port=${HERALD_BENCH_PORT:-4437}
B="http://127.0.0.1:$port"
out=bench-results.jsonl
: > "$out"

# start runs herald on an empty data directory and waits until it is ready.
start() {
  rm -rf "$work/data"
  "$work/herald" serve --addr "127.0.0.1:$port" --data-dir "$work/data" --log-level warn \
    --webhook-allow-cidrs 127.0.0.0/8 &
  pid=$!
  for _ in $(seq 100); do curl -fs "$B/_herald/readyz" >/dev/null && return; sleep 0.1; done
  echo "herald did not start" >&2; exit 1
}
stop() { kill "$pid"; wait "$pid" || true; pid=; }
rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$pid/status"; }
emit() { echo "$1" | tee -a "$out"; }
bench() { "$work/herald-bench" "$@" -base "$B" | tee -a "$out"; }

for run in $(seq "$runs"); do
  start
  sleep 1
  emit "{\"test\":\"rss\",\"state\":\"idle\",\"run\":$run,\"mb\":$(rss)}"
  bench create -n 10000 -c 16 -prefix /mem/s
  emit "{\"test\":\"rss\",\"state\":\"10k-streams\",\"run\":$run,\"mb\":$(rss)}"
  "$work/herald-bench" hold -base "$B" -n 1000 -hold 8s > "$work/hold.json" &
  hold=$!
  sleep 6
  emit "{\"test\":\"rss\",\"state\":\"1000-long-polls\",\"run\":$run,\"mb\":$(rss)}"
  wait "$hold"; tee -a "$out" < "$work/hold.json"
  for c in 1 16 64; do
    bench append -streams 1 -c "$c" -d 5s
  done
  bench append -streams 1000 -c 64 -d 5s
  bench seed -url "$B/bench/big" -bytes 10000000 -msg 100 -batch 1000
  for c in 1 4; do
    bench read -url "$B/bench/big" -offset=-1 -c "$c" -d 5s -full
  done
  for mode in long-poll sse; do
    bench live -mode "$mode" -readers 1 -n 200
    bench live -mode "$mode" -readers 1000 -n 20
  done
  stop
  for mode in callback respond; do
    start
    bench webhook -mode "$mode" -streams 1000 -lat 200 -c 1000 -d 15s
    stop
  done
done
echo "results in $out" >&2
