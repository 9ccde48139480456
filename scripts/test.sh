#!/usr/bin/env bash
# Runs Herald's whole test suite: formatting, vet, the Go tests with the race
# detector (unit, storage suite, end-to-end with the real binary) and the
# official Durable Streams conformance suite against `herald serve`, once
# in the development mode and once with access control on.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './conformance/node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

echo "== conformance (development mode: access control off)"
scripts/conformance.sh

echo "== conformance (access control on: a stream-scoped key on every request)"
scripts/conformance.sh --auth
