#!/usr/bin/env bash
# Runs Herald's whole test suite: formatting, vet, the Go tests with the race
# detector (unit, storage suite on SQLite and on a throwaway PostgreSQL,
# end-to-end with the real binary) and the
# official Durable Streams conformance suite against `herald serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './conformance/node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== postgres"
# A throwaway PostgreSQL for the Postgres backend's tests, stopped at exit.
source scripts/postgres.sh
trap herald_postgres_stop EXIT
echo "HERALD_TEST_POSTGRES_URL=$HERALD_TEST_POSTGRES_URL"

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

echo "== conformance"
scripts/conformance.sh
