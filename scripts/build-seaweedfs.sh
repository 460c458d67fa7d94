#!/usr/bin/env bash
# Build SeaweedFS's `weed` (Apache-2.0) from the Go module proxy, cached by version: the real
# S3-compatible server the backup tests write to (docs/backup.md). MinIO's server is AGPL and is
# not used.
#
# Idempotent: when the cached weed exists it prints its path and exits at once. Concurrent
# callers serialise on a lock file (scripts/go-build-cached.sh). Output (stdout, last line): the
# path of the weed binary.
# Env: SEAWEEDFS_VERSION (a pseudo-version the proxy serves), METAQUORUM_CACHE, GO_BUILD_P
# (default: go's own, one job per CPU).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/go-build-cached.sh"

VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
GO_BUILD_P="${GO_BUILD_P:-$(nproc)}" go_cached_begin seaweedfs "$VERSION" weed path
# `go install pkg@version` refuses a module whose go.mod has replace directives (seaweedfs has
# one), so build from a small wrapper module that requires it and repeats its replaces.
mkdir -p "$OUT/src"
cd "$OUT/src"
GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" > download.json \
    || die "cannot download seaweedfs@$VERSION from the Go module proxy"
gomod=$(python3 -c 'import json,sys; print(json.load(open("download.json"))["GoMod"])')
goline=$(grep -m1 '^go ' "$gomod")
{ echo "module metaquorum.local/seaweedfsbuild"; echo; echo "$goline"; echo
  echo "require github.com/seaweedfs/seaweedfs $VERSION"; echo
  grep -E '^replace [^ ]+ => [^ .][^ ]* v' "$gomod" || true
} > go.mod
# the wrapper's go.sum and the full requirement graph come from seaweedfs's own go.mod
log "go build github.com/seaweedfs/seaweedfs/weed@$VERSION (a big module: minutes)"
go_cached_build github.com/seaweedfs/seaweedfs/weed 10
