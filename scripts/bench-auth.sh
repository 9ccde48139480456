#!/usr/bin/env bash
# Measures what access control costs the append path: two fresh servers
# side by side, one with access control off and one with an admin key
# (appending with a stream-scoped key), and herald-bench's append workload
# (1 stream, c=64, 100-byte bodies) run against them in turn, PAIRS times,
# so both see the same machine. Prints one JSON line a run, prefixed with
# off or on. Usage: scripts/bench-auth.sh [PAIRS]   (default 6)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-6}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
go build -o "$work/herald" ./cmd/herald
go build -o "$work/herald-bench" ./cmd/herald-bench
off=${HERALD_BENCH_PORT:-4437}
on=$((off + 1))
admin=$(head -c 32 /dev/urandom | base64)

"$work/herald" serve --addr "127.0.0.1:$off" --data-dir "$work/off" --log-level warn --access-log=false &
pids+=($!)
HERALD_ADMIN_KEY="$admin" "$work/herald" serve --addr "127.0.0.1:$on" --data-dir "$work/on" --log-level warn --access-log=false &
pids+=($!)
for port in "$off" "$on"; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/_herald/readyz" >/dev/null && break; sleep 0.1; done
done
key=$(curl -fs -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  -d '{"scopes":["streams:read","streams:write"],"description":"bench"}' "http://127.0.0.1:$on/_herald/v1/keys" |
  sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
[ -n "$key" ] || { echo "bench-auth.sh: could not make a key" >&2; exit 1; }

# Pairs alternate which server goes first, so neither gains from its place.
i=0
for _ in $(seq "$pairs"); do
  i=$((i + 1))
  if [ $((i % 2)) -eq 0 ]; then
    "$work/herald-bench" append -base "http://127.0.0.1:$on" -key "$key" -streams 1 -c 64 -d 5s 2>/dev/null | sed "s/^/on  /"
    "$work/herald-bench" append -base "http://127.0.0.1:$off" -streams 1 -c 64 -d 5s 2>/dev/null | sed "s/^/off /"
    continue
  fi
  "$work/herald-bench" append -base "http://127.0.0.1:$off" -streams 1 -c 64 -d 5s 2>/dev/null | sed 's/^/off /'
  "$work/herald-bench" append -base "http://127.0.0.1:$on" -key "$key" -streams 1 -c 64 -d 5s 2>/dev/null | sed 's/^/on  /'
done
