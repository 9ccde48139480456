#!/usr/bin/env bash
# Measures how long Herald takes to serve after a restart (readyz 200),
# how much CPU and memory it uses while idle, and appends to a random
# stream of all of them against appends to 1,000 of them, over a data
# directory holding many streams. The first run fills the directory (-n
# empty streams /idle/s0, /idle/s1, ... written straight into the store
# by herald-bench fill, and with -e an endpoint sourcing from the given
# stream pattern); later runs on the same directory reuse it.
#
#   scripts/bench-idle.sh -n 1000000 -d /tmp/herald-idle
#   scripts/bench-idle.sh -n 1000000 -d /tmp/herald-idle-ep -e '/**'
#
# Options: -n streams (default 100000), -d data directory (default
# /tmp/herald-idle), -s seconds of idle measured (default 60), -w seconds
# waited after readyz before measuring (default 10), -e endpoint pattern.
# HERALD_BIN_DIR=dir uses the herald and herald-bench binaries in dir
# instead of building them (to compare two builds on one directory).
set -euo pipefail

n=100000 dir=/tmp/herald-idle secs=60 settle=10 pattern=""
while getopts "n:d:s:w:e:" opt; do
	case $opt in
	n) n=$OPTARG ;;
	d) dir=$OPTARG ;;
	s) secs=$OPTARG ;;
	w) settle=$OPTARG ;;
	e) pattern=$OPTARG ;;
	*) exit 2 ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
if [ -n "${HERALD_BIN_DIR:-}" ]; then
	cp "$HERALD_BIN_DIR/herald" "$HERALD_BIN_DIR/herald-bench" "$bin/"
else
	(cd "$root" && go build -o "$bin/herald" ./cmd/herald && go build -o "$bin/herald-bench" ./cmd/herald-bench)
fi
addr=127.0.0.1:4599
base=http://$addr

start() {
	"$bin/herald" serve --data-dir "$dir" --addr "$addr" --insecure-no-auth --access-log=false \
		--webhook-allow-cidrs 127.0.0.0/8 >"$bin/serve.log" 2>&1 &
	pid=$!
	t0=$(date +%s%N)
	until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/_herald/readyz" || true)" = 200 ]; do
		kill -0 "$pid" 2>/dev/null || { cat "$bin/serve.log"; exit 1; }
		sleep 0.01
	done
	ready_ms=$((($(date +%s%N) - t0) / 1000000))
}

stop() {
	kill -TERM "$pid"
	wait "$pid" || true
}

if [ ! -e "$dir/.bench-idle-filled" ]; then
	mkdir -p "$dir"
	"$bin/herald-bench" fill -dir "$dir" -n "$n" -c 64 -prefix /idle
	if [ -n "$pattern" ]; then
		start
		curl -sf -X POST "$base/_herald/v1/endpoints" -H 'Content-Type: application/json' \
			-d "{\"url\":\"http://127.0.0.1:9/hook\",\"streams\":[\"$pattern\"],\"event_types\":[\"*\"]}" >/dev/null
		stop
	fi
	touch "$dir/.bench-idle-filled"
fi

start
echo "ready after ${ready_ms} ms"
sleep "$settle"
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
a=$(ticks)
sleep "$secs"
b=$(ticks)
rss=$(awk '/VmRSS/ {print $2 / 1024 " MiB"}' "/proc/$pid/status")
awk -v d=$((b - a)) -v hz="$hz" -v s="$secs" 'BEGIN { printf "idle CPU over %d s: %.3f %% of a core\n", s, 100 * d / hz / s }'
echo "resident memory: $rss"
# Appends of 100 bytes from 64 connections for 5 s, to a random stream of
# the first 1,000 and of all of them, twice, alternated.
for _ in 1 2; do
	for streams in 1000 "$n"; do
		"$bin/herald-bench" append -base "$base" -existing -prefix /idle -streams "$streams" -c 64 -d 5s
	done
done
stop
