#!/usr/bin/env bash
# Builds Herald's container image from the Dockerfile with buildah, and
# checks it: the binary runs in it and prints the version given, as a
# user that is not root, with /data a volume that user owns and a health
# check. Fails when any of it fails.
#
# Where no registry can be reached, no builder image can be pulled: this
# script makes one from what is on the machine, the Go toolchain (go env
# GOROOT), a static busybox for the shell (Debian: busybox-static), the
# CA certificates and the module cache (filled from the local cache, else
# the Go module proxy), and builds the Dockerfile with it
# (BUILDER_IMAGE). Needs root, buildah (Debian: apt-get install -y
# buildah) and busybox-static. Container storage is kept in a temporary
# directory, removed at exit.
#
#   scripts/image.sh [TAG]   (default localhost/herald:dev)
set -euo pipefail
cd "$(dirname "$0")/.."

missing() {
  echo "scripts/image.sh: $1; install it and run again" >&2
  exit 1
}
command -v buildah >/dev/null 2>&1 || missing "buildah is not on PATH (Debian: apt-get install -y buildah)"
# Debian's busybox-static; the builder image has no C library for a
# dynamically linked one.
busybox=${BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || missing "$busybox is not there (Debian: apt-get install -y busybox-static)"
ldd "$busybox" >/dev/null 2>&1 && missing "$busybox is linked dynamically (Debian: apt-get install -y busybox-static)"

tag=${1:-localhost/herald:dev}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
commit=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)

work=$(mktemp -d)
store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  buildah "${store[@]}" rm --all >/dev/null 2>&1 || true
  buildah "${store[@]}" rmi --all --force >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== builder image (Go $(go env GOVERSION) from $(go env GOROOT))"
ctr=$(buildah "${store[@]}" from scratch)
mnt=$(buildah "${store[@]}" mount "$ctr")
mkdir -p "$mnt/usr/local" "$mnt/bin" "$mnt/etc/ssl/certs" "$mnt/root" "$mnt/tmp" "$mnt/go/pkg/mod"
chmod 1777 "$mnt/tmp"
cp -a "$(go env GOROOT)" "$mnt/usr/local/go"
cp "$busybox" "$mnt/bin/busybox"
for tool in sh mkdir cp echo cat ls rm mv ln chmod; do
  ln -s busybox "$mnt/bin/$tool"
done
cp /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/"
# The modules of go.mod, from the local cache when it has them.
GOFLAGS=-mod=mod GOMODCACHE="$mnt/go/pkg/mod" \
  GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" go mod download
chmod -R u+w "$mnt/go/pkg/mod"
buildah "${store[@]}" umount "$ctr" >/dev/null
buildah "${store[@]}" config \
  --env PATH=/usr/local/go/bin:/bin --env HOME=/root --env GOTOOLCHAIN=local \
  --env GOPROXY=off --env GOFLAGS=-mod=mod --env GOMODCACHE=/go/pkg/mod --env GOCACHE=/tmp/go-build "$ctr"
buildah "${store[@]}" commit --quiet "$ctr" localhost/herald-builder >/dev/null

echo "== image $tag"
# Docker's format: OCI images have no HEALTHCHECK.
buildah "${store[@]}" bud --isolation chroot --format docker --layers=false \
  --build-arg BUILDER_IMAGE=localhost/herald-builder \
  --build-arg VERSION="$version" --build-arg COMMIT="$commit" --build-arg BUILD_TIME="$built" \
  -t "$tag" .

echo "== checks"
fail() {
  echo "scripts/image.sh: the image $1" >&2
  exit 1
}
config=$(buildah "${store[@]}" inspect --type image "$tag")
echo "$config" | grep -q '"User": "65532:65532"' || fail "does not run as user 65532"
echo "$config" | grep -q '"/data": {}' || fail "has no /data volume"
echo "$config" | grep -q '"/herald",' || fail "has no health check running /herald healthcheck"
run=$(buildah "${store[@]}" from "$tag")
out=$(buildah "${store[@]}" run --isolation chroot "$run" -- /herald version)
echo "$out"
echo "$out" | grep -q "^herald $version\$" || fail "prints another version"
echo "$out" | grep -q "^commit: $commit\$" || fail "prints another commit"
rmnt=$(buildah "${store[@]}" mount "$run")
[ "$(stat -c %u:%g "$rmnt/data")" = "65532:65532" ] || fail "has /data owned by $(stat -c %u:%g "$rmnt/data")"
[ -z "$(ls -A "$rmnt/data")" ] || fail "has files in /data"
buildah "${store[@]}" umount "$run" >/dev/null
echo "image $tag: ok"
