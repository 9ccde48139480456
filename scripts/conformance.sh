#!/usr/bin/env bash
# Runs the official Durable Streams server conformance suite
# (@durable-streams/server-conformance-tests, pinned in conformance/) against
# a freshly built Herald with an empty data directory, its subscription
# tests included: the suite's streams live under /v1/stream, so Herald
# runs with --stream-root /v1/stream (the reserved subscription API is
# then at /v1/stream/__ds/), and its webhook receiver listens on
# 127.0.0.1, which --webhook-allow-cidrs 127.0.0.0/8 lets Herald call.
#
# Usage: scripts/conformance.sh [--auth] [vitest arguments, e.g. -t "SSE Mode"]
# --auth runs the server with access control on (an admin key in
# HERALD_ADMIN_KEY) and the suite with a key limited to the stream and
# subscription scopes, sent as a bearer header on every request (the
# callbacks, acks and releases carry their wake's token instead); the run first checks that a
# request without the key is refused.
# Needs Go, Node.js (>= 18) and npm. Exits with vitest's status.
# CONFORMANCE_RACE=1 builds the server with the race detector, which then
# fails the run on any data race.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
long_poll_ms="${HERALD_LONG_POLL_TIMEOUT_MS:-2000}"
work="$(mktemp -d)"
server_pid=""
auth=""
if [[ "${1:-}" == "--auth" ]]; then
	auth=1
	shift
fi

cleanup() {
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "conformance: building herald" >&2
build_flags=()
if [[ "${CONFORMANCE_RACE:-}" == 1 ]]; then
	build_flags+=(-race)
fi
(cd "$root" && go build ${build_flags[@]+"${build_flags[@]}"} -o "$work/herald" ./cmd/herald)

admin_key=""
if [[ -n "$auth" ]]; then
	admin_key="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
fi

# Port 0: the kernel picks a free port, which the server logs.
HERALD_ADMIN_KEY="$admin_key" "$work/herald" serve --addr 127.0.0.1:0 --data-dir "$work/data" \
	--long-poll-timeout "${long_poll_ms}ms" --log-level info --stream-root /v1/stream \
	--webhook-allow-cidrs 127.0.0.0/8 >"$work/server.log" 2>&1 &
server_pid=$!

addr=""
for _ in $(seq 1 200); do
	if ! kill -0 "$server_pid" 2>/dev/null; then
		echo "conformance: herald exited early:" >&2
		cat "$work/server.log" >&2
		exit 1
	fi
	addr="$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$work/server.log" | head -n1 | cut -d= -f2 || true)"
	[[ -n "$addr" ]] && break
	sleep 0.05
done
if [[ -z "$addr" ]]; then
	echo "conformance: herald did not report its address:" >&2
	cat "$work/server.log" >&2
	exit 1
fi
url="http://$addr"

ready=""
for _ in $(seq 1 100); do
	if node -e 'fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$url/_herald/healthz"; then
		ready=1
		break
	fi
	sleep 0.1
done
if [[ -z "$ready" ]]; then
	echo "conformance: $url/_herald/healthz never answered 200" >&2
	cat "$work/server.log" >&2
	exit 1
fi
echo "conformance: herald is serving at $url" >&2

key=""
if [[ -n "$auth" ]]; then
	# A key with the stream and subscription scopes only, made with the
	# admin key; the suite must pass with it, and a request without it
	# must be refused.
	key="$(node -e '
		const [url, admin] = process.argv.slice(1);
		(async () => {
			const anon = await fetch(url + "/v1/stream/conformance-auth-probe");
			if (anon.status !== 401) throw new Error("a request without a key got " + anon.status + ", want 401");
			const res = await fetch(url + "/_herald/v1/keys", {
				method: "POST",
				headers: { Authorization: "Bearer " + admin, "Content-Type": "application/json" },
				body: JSON.stringify({ scopes: ["streams:read", "streams:write", "subscriptions:read", "subscriptions:write"], description: "conformance" }),
			});
			if (res.status !== 201) throw new Error("creating a key: " + res.status + " " + await res.text());
			process.stdout.write((await res.json()).key);
		})().catch((e) => { console.error("conformance: " + e.message); process.exit(1); });
	' "$url" "$admin_key")"
	echo "conformance: access control is on; the suite sends a key with scopes streams:read, streams:write, subscriptions:read, subscriptions:write" >&2
fi

cd "$root/conformance"
if [[ ! -d node_modules ]]; then
	npm ci --no-audit --no-fund >&2
fi
status=0
HERALD_KEY="$key" HERALD_URL="$url" HERALD_LONG_POLL_TIMEOUT_MS="$long_poll_ms" npx vitest run "$@" || status=$?
if grep -q "WARNING: DATA RACE" "$work/server.log"; then
	echo "conformance: the server reported a data race" >&2
	status=1
fi
if [[ $status -ne 0 ]]; then
	echo "conformance: server log:" >&2
	tail -n 50 "$work/server.log" >&2
fi
exit "$status"
