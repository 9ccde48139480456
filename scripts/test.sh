#!/usr/bin/env bash
# Runs Herald's whole test suite: formatting, vet, the Go tests with the race
# detector (unit, storage suite on SQLite and on a throwaway PostgreSQL,
# end-to-end with the real binary, and the tests built only with
# `-tags browser,brokers`: the dashboard in Chromium, and the NATS and
# Kafka publishers against brokers run in process), the shell blocks of the README's Try it
# and docs/getting-started.md (scripts/doctest.sh), the container image
# build (scripts/image.sh) and the official Durable Streams conformance
# suite against `herald serve`, once in the development mode and once with
# access control on.
# Needs Go, Node.js 18 or later, npm, Chromium (the dashboard's browser
# tests), curl and jq (the docs' commands), buildah with busybox-static (as
# root) and systemd-analyze; says which is missing before it starts.
set -euo pipefail
cd "$(dirname "$0")/.."

# missing prints what to install and stops.
missing() {
  echo "scripts/test.sh: $1 (needed by $2); install it and run again" >&2
  exit 1
}
command -v go >/dev/null 2>&1 || missing "Go is not on PATH" "the Go tests"
command -v node >/dev/null 2>&1 || missing "Node.js 18 or later is not on PATH" "the conformance suite"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || true)
case $node_major in '' | *[!0-9]*) node_major=0 ;; esac
if [ "$node_major" -lt 18 ]; then
  missing "Node.js 18 or later is required, $(node --version 2>/dev/null || echo 'an unknown version') is installed" "the conformance suite"
fi
command -v npm >/dev/null 2>&1 || missing "npm is not on PATH" "the conformance suite"
command -v jq >/dev/null 2>&1 || missing "jq is not on PATH (Debian: apt-get install -y jq)" "the documentation's commands (scripts/doctest.sh)"
command -v curl >/dev/null 2>&1 || missing "curl is not on PATH" "the documentation's commands (scripts/doctest.sh)"
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
  missing "Chromium is not on PATH (Debian: apt-get install -y chromium)" "the dashboard's browser tests"
command -v buildah >/dev/null 2>&1 ||
  missing "buildah is not on PATH (Debian: apt-get install -y buildah busybox-static)" "the container image build"
command -v systemd-analyze >/dev/null 2>&1 ||
  missing "systemd-analyze is not on PATH (Debian: apt-get install -y systemd)" "the check of the example systemd unit"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './conformance/node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet -tags browser,brokers ./...

echo "== postgres"
# A throwaway PostgreSQL for the Postgres backend's tests, stopped at exit.
source scripts/postgres.sh
trap herald_postgres_stop EXIT
echo "HERALD_TEST_POSTGRES_URL=$HERALD_TEST_POSTGRES_URL"

echo "== go test -race"
go test -race -count=1 -timeout 15m -tags browser,brokers ./...

echo "== docs: the README's Try it and docs/getting-started.md, block by block"
scripts/doctest.sh
echo "== container image (Dockerfile, built with buildah)"
scripts/image.sh

echo "== conformance (development mode: access control off)"
scripts/conformance.sh

echo "== conformance (access control on: a key with the stream and subscription scopes on every request)"
scripts/conformance.sh --auth
