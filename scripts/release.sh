#!/usr/bin/env bash
# Builds Herald's release binaries: static (CGO_ENABLED=0: the embedded
# SQLite is pure Go), for linux and darwin on amd64 and arm64, into dist/
# (DIST), with their SHA-256 sums in dist/SHA256SUMS.
#
#   scripts/release.sh                  every platform
#   scripts/release.sh linux/amd64 ...  only those
#
# The version is `git describe` unless VERSION is set; the commit is HEAD
# (COMMIT); the build time is now, or SOURCE_DATE_EPOCH when set (for a
# build that can be repeated byte for byte). `herald version` prints them.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
fi
dist=${DIST:-dist}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
commit=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  built=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
else
  built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
fi
ldflags="-s -w -X main.version=$version -X main.commit=$commit -X main.buildTime=$built"

mkdir -p "$dist"
names=()
for target in "${targets[@]}"; do
  os=${target%/*}
  arch=${target#*/}
  name="herald-$version-$os-$arch"
  echo "== $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$dist/$name" ./cmd/herald
  names+=("$name")
done

# SHA256SUMS in the format `sha256sum -c` (and `shasum -a 256 -c`) reads.
(
  cd "$dist"
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "${names[@]}"
  else
    shasum -a 256 "${names[@]}"
  fi
) >"$dist/SHA256SUMS"
echo "== $dist/SHA256SUMS"
cat "$dist/SHA256SUMS"
