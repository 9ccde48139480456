#!/usr/bin/env bash
# Measures Herald: the workloads of docs/performance.md. Builds herald,
# herald-bench (the load generator, cmd/herald-bench) and the delivery
# benchmarks (go test -bench BenchmarkDelivery ./delivery/dispatch/) from this
# repository, then takes every figure RUNS times (default 3), each run on
# fresh servers with empty data directories. Every JSON line goes to stdout
# and to bench-results.jsonl; the one-line summaries go to stderr.
# Usage: scripts/bench.sh [RUNS]   (HERALD_BENCH_PORT: the port, default 4437)
# HERALD_BENCH_QUICK=1 runs every workload briefly and small, to check that
# the script works; its figures are not the measurements.
# HERALD_PEER=PATH measures Herald side by side with another Durable Streams
# server instead (scripts/side-by-side.sh PATH [RUNS]).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${HERALD_PEER:-}" ]; then
  exec scripts/side-by-side.sh "$HERALD_PEER" "$@"
fi
runs=${1:-3}
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
# Herald is built as scripts/release.sh and the image build it (static,
# no cgo, no symbol tables): the binary users run, whose memory is measured.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/herald" ./cmd/herald
go build -o "$work/herald-bench" ./cmd/herald-bench
go test -c -o "$work/delivery.test" ./delivery/dispatch/
port=${HERALD_BENCH_PORT:-4437}
B="http://127.0.0.1:$port"
out=bench-results.jsonl
: > "$out"

# The sizes of the workloads: those of docs/performance.md, or tiny ones.
if [ "${HERALD_BENCH_QUICK:-}" = 1 ]; then
  streams=200 hold_n=50 hold=3s hold_wait=2 secs=1s big=100000 live_n=5 live_many=50
  hook_streams=50 hook_lat=20 hook_c=50 hook_secs=2s deliveries=200x latency_events=100x pull_loops=50
else
  streams=10000 hold_n=1000 hold=8s hold_wait=6 secs=5s big=10000000 live_n=200 live_many=1000
  hook_streams=1000 hook_lat=200 hook_c=1000 hook_secs=15s deliveries=10000x latency_events=5000x pull_loops=1000
fi

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

# delivery_bench runs one delivery benchmark (name, -benchtime, workload)
# and emits the metrics it reports: pairs of the benchmark's unit and the
# JSON name it gets.
delivery_bench() {
  local name=$1 times=$2 workload=$3; shift 3
  local line json="{\"test\":\"delivery\",\"workload\":\"$workload\",\"run\":$run"
  line=$("$work/delivery.test" -test.run '^$' -test.bench "^$name\$" -test.benchtime "$times" | grep "^$name")
  while [ $# -gt 0 ]; do
    json="$json,\"$2\":$(echo "$line" | awk -v unit="$1" '{for (i = 2; i <= NF; i++) if ($i == unit) print $(i-1)}')"
    shift 2
  done
  emit "$json}"
  echo "delivery $workload: $line" >&2
}

for run in $(seq "$runs"); do
  start
  sleep 1
  emit "{\"test\":\"rss\",\"state\":\"idle\",\"run\":$run,\"mb\":$(rss)}"
  bench create -n "$streams" -c 16 -prefix /mem/s
  emit "{\"test\":\"rss\",\"state\":\"10k-streams\",\"run\":$run,\"mb\":$(rss)}"
  "$work/herald-bench" hold -base "$B" -n "$hold_n" -hold "$hold" > "$work/hold.json" &
  holder=$!
  sleep "$hold_wait"
  emit "{\"test\":\"rss\",\"state\":\"1000-long-polls\",\"run\":$run,\"mb\":$(rss)}"
  wait "$holder"; tee -a "$out" < "$work/hold.json"
  for c in 1 16 64; do
    bench append -streams 1 -c "$c" -d "$secs"
  done
  bench append -streams 1000 -c 64 -d "$secs"
  bench seed -url "$B/bench/big" -bytes "$big" -msg 100 -batch 1000
  for c in 1 4; do
    bench read -url "$B/bench/big" -offset=-1 -c "$c" -d "$secs" -full
  done
  for mode in long-poll sse; do
    bench live -mode "$mode" -readers 1 -n "$live_n"
    bench live -mode "$mode" -readers "$live_many" -n 20
  done
  stop
  for mode in callback respond; do
    start
    bench webhook -mode "$mode" -streams "$hook_streams" -lat "$hook_lat" -c "$hook_c" -d "$hook_secs"
    stop
  done
  # Pull-wake (the reserved subscription API): closed loops of append,
  # wake event, claim, read, ack; a stalled loop is a lost wake.
  start
  bench pullwake -loops "$pull_loops"
  stop
  # Event delivery: in-process benchmarks (docs/performance.md, Event
  # delivery), each on its own fresh store.
  delivery_bench BenchmarkDeliveryThroughput "$deliveries" throughput deliveries/s deliveries_per_s
  delivery_bench BenchmarkDeliveryLatency "$latency_events" latency p50-ms p50_ms p99-ms p99_ms
done
echo "results in $out" >&2
