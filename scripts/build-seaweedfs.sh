#!/usr/bin/env bash
# Build SeaweedFS's `weed` (Apache-2.0) from the Go module proxy, cached by version: the real
# S3-compatible server the backup tests write to (docs/backup.md). MinIO's server is AGPL and is
# not used.
#
# Idempotent: when $OUT/bin/weed exists it prints its path and exits at once. Concurrent callers
# serialise on a lock file. Output (stdout, last line): the path of the weed binary.
# Env: SEAWEEDFS_VERSION (a pseudo-version the proxy serves), METAQUORUM_CACHE.
set -euo pipefail

VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/seaweedfs-$VERSION"
BIN="$OUT/bin/weed"

log() { echo "[build-seaweedfs] $*" >&2; }
die() { echo "[build-seaweedfs] ERROR: $*" >&2; exit 1; }

if [[ -x "$BIN" ]]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || die "go not found: install Go (see scripts/apt-install.sh)"
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if [[ -x "$BIN" ]]; then echo "$BIN"; exit 0; fi

start=$(date +%s)
# `go install pkg@version` refuses a module whose go.mod has replace directives (seaweedfs has
# one), so build from a small wrapper module that requires it and repeats its replaces.
work="$OUT/src"
mkdir -p "$work" "$OUT/bin"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
( cd "$work"
  go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" > download.json \
      || die "cannot download seaweedfs@$VERSION from the Go module proxy"
  gomod=$(python3 -c 'import json,sys; print(json.load(open("download.json"))["GoMod"])')
  goline=$(grep -m1 '^go ' "$gomod")
  { echo "module metaquorum.local/seaweedfsbuild"; echo; echo "$goline"; echo
    echo "require github.com/seaweedfs/seaweedfs $VERSION"; echo
    grep -E '^replace [^ ]+ => [^ .][^ ]* v' "$gomod" || true
  } > go.mod
  # the wrapper's go.sum and the full requirement graph come from seaweedfs's own go.mod
  log "go build github.com/seaweedfs/seaweedfs/weed@$VERSION (a big module: minutes)"
  nice -n 10 go build -trimpath -ldflags="-s -w" -o "$OUT/bin/weed.tmp" \
      github.com/seaweedfs/seaweedfs/weed >&2 \
      || die "go build of seaweedfs@$VERSION failed (see above)"
  mv "$OUT/bin/weed.tmp" "$BIN" )
[[ -x "$BIN" ]] || die "go install finished but $BIN is missing"
log "built $BIN in $(( $(date +%s) - start ))s ($(du -h "$BIN" | cut -f1))"
echo "$BIN"
