#!/usr/bin/env bash
# Measures Herald with the shared load generator (../shared/bench/loadgen),
# the same commands the peer figures were taken with. Each figure is taken
# RUNS times (default 3) on a fresh server; the JSON lines go to stdout and
# bench-results.jsonl. Usage: scripts/bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
loadgen_dir=../shared/bench/loadgen
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/herald" ./cmd/herald
(cd "$loadgen_dir" && go build -o "$work/loadgen" .)
port=${HERALD_BENCH_PORT:-4437}
B="http://127.0.0.1:$port"
out=bench-results.jsonl
: > "$out"

start() {
  rm -rf "$work/data"
  "$work/herald" serve --addr "127.0.0.1:$port" --data-dir "$work/data" --log-level warn &
  pid=$!
  for _ in $(seq 100); do curl -fs "$B/_herald/readyz" >/dev/null && return; sleep 0.1; done
  echo "herald did not start" >&2; exit 1
}
stop() { kill "$pid"; wait "$pid" || true; }
rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$pid/status"; }
emit() { echo "$1" | tee -a "$out"; }

for run in $(seq "$runs"); do
  start
  sleep 1
  emit "{\"test\":\"rss\",\"state\":\"idle\",\"run\":$run,\"mb\":$(rss)}"
  "$work/loadgen" create -base "$B" -n 10000 -c 16 -prefix /mem/s | tee -a "$out"
  emit "{\"test\":\"rss\",\"state\":\"10k-streams\",\"run\":$run,\"mb\":$(rss)}"
  "$work/loadgen" hold -base "$B" -n 1000 -hold 8s > "$work/hold.json" &
  hold=$!
  sleep 6
  emit "{\"test\":\"rss\",\"state\":\"1000-long-polls\",\"run\":$run,\"mb\":$(rss)}"
  wait "$hold"; cat "$work/hold.json" >> "$out"
  for c in 1 16 64; do
    "$work/loadgen" append -base "$B" -streams 1 -c "$c" -d 5s | tee -a "$out"
  done
  "$work/loadgen" append -base "$B" -streams 1000 -c 64 -d 5s | tee -a "$out"
  "$work/loadgen" seed -url "$B/bench/big" -bytes 10000000 -msg 100 -batch 1000 | tee -a "$out"
  for c in 1 4; do
    "$work/loadgen" read -url "$B/bench/big" -offset=-1 -c "$c" -d 5s -full | tee -a "$out"
  done
  for mode in long-poll sse; do
    "$work/loadgen" live -base "$B" -mode "$mode" -readers 1 -n 200 | tee -a "$out"
    "$work/loadgen" live -base "$B" -mode "$mode" -readers 1000 -n 20 | tee -a "$out"
  done
  stop
done
echo "results in $out"
