#!/usr/bin/env bash
# Measures Herald and another Durable Streams server side by side with the
# same load generator (cmd/herald-bench): builds herald and herald-bench from
# this repository, then, RUNS times (default 3), runs every workload below on
# Herald and on the peer in turn, each on a freshly started server with an
# empty data directory. The order alternates from run to run (Herald first in
# odd runs, the peer first in even ones), so a burst of load on a shared
# machine does not always fall on the same server.
#
# Usage: scripts/side-by-side.sh PEER_BINARY [RUNS]
#
# The peer is started as `PEER_BINARY --host 127.0.0.1 --port PORT
# --data-dir DIR $PEER_ARGS`; PEER_ARGS passes more arguments (for example
# `PEER_ARGS='--http-engine raw'`). HERALD_ARGS passes more arguments to
# `herald serve`. HERALD_BENCH_PORT (default 4437) is Herald's port and
# PEER_PORT (default HERALD_BENCH_PORT+1) the peer's.
# SIDE_BY_SIDE_ONLY, an extended regular expression, runs only the workloads
# whose names it matches (for example 'append_1_c64|rss').
# HERALD_BENCH_QUICK=1 runs every workload briefly and small, to check the
# script; its figures are not measurements.
#
# Each run prints, per figure, Herald's value, the peer's and the ratio
# Herald / peer (stderr), and one JSON line (stdout and
# side-by-side-results.jsonl, or the file SIDE_BY_SIDE_RESULTS names). At the end, a markdown table of the medians
# over the runs goes to stdout. Needs Go, curl, awk, sed and grep.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: scripts/side-by-side.sh PEER_BINARY [RUNS]   (PEER_BINARY: an executable Durable Streams server)" >&2
  exit 2
fi
peer_bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
runs=${2:-3}
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
# Herald is built as scripts/release.sh and the image build it (static,
# no cgo, no symbol tables): the binary users run, whose memory is measured.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/herald" ./cmd/herald
go build -o "$work/herald-bench" ./cmd/herald-bench
herald_port=${HERALD_BENCH_PORT:-4437}
peer_port=${PEER_PORT:-$((herald_port + 1))}
out=${SIDE_BY_SIDE_RESULTS:-side-by-side-results.jsonl}
: > "$out"
# Clock ticks a second, the unit of utime and stime in /proc/PID/stat.
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)

# The sizes of the workloads: those of docs/performance.md (Side by side),
# or tiny ones.
if [ "${HERALD_BENCH_QUICK:-}" = 1 ]; then
  secs=300ms streams=200 big=100000 readers=20 live_n=3 idle_wait=0.2
else
  secs=5s streams=10000 big=10000000 readers=1000 live_n=50 idle_wait=2
fi

# start SIDE starts Herald or the peer on an empty data directory and waits
# until it answers HTTP; it sets pid and B (the base URL).
start() {
  rm -rf "$work/data"
  if [ "$1" = herald ]; then
    B="http://127.0.0.1:$herald_port"
    # shellcheck disable=SC2086 # HERALD_ARGS is a list of arguments
    "$work/herald" serve --addr "127.0.0.1:$herald_port" --data-dir "$work/data" --log-level warn \
      ${HERALD_ARGS:-} > "$work/server.log" 2>&1 &
  else
    B="http://127.0.0.1:$peer_port"
    # shellcheck disable=SC2086 # PEER_ARGS is a list of arguments
    "$peer_bin" --host 127.0.0.1 --port "$peer_port" --data-dir "$work/data" \
      ${PEER_ARGS:-} > "$work/server.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 200); do
    # Any HTTP answer (a 404 at /) says the server listens.
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$B/" || true)" != 000 ]; then return; fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.05
  done
  echo "side-by-side: $1 did not start:" >&2
  cat "$work/server.log" >&2
  exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
# rss_mb FIELD: a memory figure of the server from /proc/PID/status, in MB:
# VmRSS (all resident memory), RssAnon (the process's own: heap, stacks;
# not the pages of its executable mapped from the page cache).
rss_mb() { awk -v f="$1:" '$1 == f {printf "%.2f", $2/1024}' "/proc/$pid/status"; }
# cpu_ticks: the server's user and system CPU so far, in clock ticks (the
# fields after the command name, which may hold spaces, are counted from
# its closing parenthesis).
cpu_ticks() { sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}'; }
# field KEY reads a number from herald-bench's JSON line on stdin.
field() { sed -n "s/.*\"$1\":\\(-\\{0,1\\}[0-9.e+-]*\\).*/\\1/p"; }
bench() { "$work/herald-bench" "$@" 2>/dev/null; }

# Each workload runs on a started server and prints "metric value" lines.
# The metrics, their units and which way is better are in the table below.
wl_rss() {
  sleep "$idle_wait"
  local idle anon full anon_full
  idle=$(rss_mb VmRSS) anon=$(rss_mb RssAnon)
  bench create -base "$B" -n "$streams" -c 16 -prefix /mem/s > /dev/null
  sleep "$idle_wait"
  full=$(rss_mb VmRSS) anon_full=$(rss_mb RssAnon)
  echo "rss_idle_mb $idle"
  echo "anon_idle_mb $anon"
  echo "rss_streams_mb $full"
  echo "anon_streams_mb $anon_full"
  awk -v a="$idle" -v b="$full" -v n="$streams" 'BEGIN {printf "kb_per_stream %.3f\n", (b - a) * 1024 / n}'
}
# wl_append STREAMS C: appends/s and the server's CPU per append.
wl_append() {
  local t0 t1 line
  t0=$(cpu_ticks)
  line=$(bench append -base "$B" -streams "$1" -c "$2" -d "$secs")
  t1=$(cpu_ticks)
  echo "rps $(echo "$line" | field rps)"
  awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$(echo "$line" | field n)" \
    'BEGIN {printf "cpu_us_per_append %.2f\n", (n > 0 ? t * 1e6 / hz / n : 0)}'
}
# wl_read C: catch-up reads of a seeded stream from its start to its tail.
wl_read() {
  bench seed -url "$B/bench/big" -bytes "$big" -msg 100 -batch 1000 > /dev/null
  echo "MBps $(bench read -url "$B/bench/big" -offset=-1 -c "$1" -d "$secs" -full | field MBps)"
}
# wl_live MODE: append start → receipt latency of many live readers.
wl_live() {
  local line
  line=$(bench live -base "$B" -mode "$1" -readers "$readers" -n "$live_n")
  echo "p99_ms $(echo "$line" | field send2recv_p99)"
  echo "p50_ms $(echo "$line" | field send2recv_p50)"
  echo "missing $(echo "$line" | field missing)"
}

# workload name, function and arguments.
workloads=(
  "append_1_c1|wl_append 1 1"
  "append_1_c16|wl_append 1 16"
  "append_1_c64|wl_append 1 64"
  "append_1000_c64|wl_append 1000 64"
  "read_c1|wl_read 1"
  "read_c4|wl_read 4"
  "long_poll_readers|wl_live long-poll"
  "sse_readers|wl_live sse"
  "rss|wl_rss"
)
# round VALUE: a figure as people read it (whole above 100).
round() { awk -v v="$1" 'BEGIN {if (v == "") print "-"; else if (v >= 100 || v <= -100) printf "%.0f\n", v; else printf "%.2f\n", v}'; }
# better METRIC: which way is better for a metric ("higher" or "lower"),
# to read the ratio by.
better() {
  case $1 in rps | MBps) echo higher ;; *) echo lower ;; esac
}

for run in $(seq "$runs"); do
  if [ $((run % 2)) = 1 ]; then order="herald peer"; else order="peer herald"; fi
  for w in "${workloads[@]}"; do
    name=${w%%|*}
    if [ -n "${SIDE_BY_SIDE_ONLY:-}" ] && ! echo "$name" | grep -Eqx "$SIDE_BY_SIDE_ONLY"; then continue; fi
    for side in $order; do
      start "$side"
      # shellcheck disable=SC2086 # the function and its arguments
      ${w#*|} > "$work/$side.out"
      stop
    done
    while read -r metric h; do
      p=$(awk -v m="$metric" '$1 == m {print $2}' "$work/peer.out")
      ratio=$(awk -v h="$h" -v p="$p" 'BEGIN {if (p + 0 != 0) printf "%.3f", h / p; else print "null"}')
      echo "{\"test\":\"side-by-side\",\"run\":$run,\"workload\":\"$name\",\"metric\":\"$metric\",\"better\":\"$(better "$metric")\",\"herald\":${h:-null},\"peer\":${p:-null},\"ratio\":$ratio}" | tee -a "$out"
      echo "run $run $name $metric: herald $(round "$h"), peer $(round "$p"), herald/peer $ratio" >&2
    done < "$work/herald.out"
  done
done

# The medians over the runs, per figure, in the order first measured.
echo
echo "| workload | metric | better | Herald | peer | Herald / peer (median of the runs' ratios) | each run's ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
awk '
  function num(key,   v) { v = $0; sub(".*\"" key "\":", "", v); sub("[,}].*", "", v); return v }
  function round(v) { return (v == "-") ? v : (v >= 100 || v <= -100) ? sprintf("%.0f", v) : sprintf("%.2f", v) }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j > 0 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (n == 0) return "-"
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    w = $0; sub(".*\"workload\":\"", "", w); sub("\".*", "", w)
    m = $0; sub(".*\"metric\":\"", "", m); sub("\".*", "", m)
    b = $0; sub(".*\"better\":\"", "", b); sub("\".*", "", b)
    k = w " " m
    if (!(k in seen)) { seen[k] = 1; order[++n] = k; wl[k] = w; me[k] = m; be[k] = b }
    hv[k] = hv[k] " " num("herald"); pv[k] = pv[k] " " num("peer"); r = num("ratio")
    if (r != "null") rv[k] = rv[k] " " r
    each[k] = each[k] (each[k] == "" ? "" : " · ") r
  }
  END {
    for (i = 1; i <= n; i++) {
      k = order[i]
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", wl[k], me[k], be[k], round(median(hv[k])), round(median(pv[k])), median(rv[k]), each[k]
    }
  }' "$out"
echo "results in $out" >&2
