#!/usr/bin/env bash
# Build kind (sigs.k8s.io/kind) from the Go module proxy, cached by version, for `make cluster
# KIND=1` (e2e/userkind.py, docs/cluster.md).
#
# Role: kind is a single Go module with a small dependency set; `go install module@version`
# builds it from the proxy (no git, no registry). Idempotent; concurrent callers serialise on a
# lock file. kind itself still needs Docker or Podman and its node image (kindest/node) at run
# time: this script only provides the binary.
# Output (stdout, last line): the directory holding `kind`.
# Env: KIND_VERSION (default v0.30.0), METAQUORUM_CACHE, GO_BUILD_P (go build -p, default 1).
set -euo pipefail

VERSION="${KIND_VERSION:-v0.30.0}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/kind-$VERSION"
BIN="$OUT/bin"
log() { echo "[build-kind] $*" >&2; }
die() { echo "[build-kind] ERROR: $*" >&2; exit 1; }

if [[ -x "$BIN/kind" ]]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || die "go not found: install Go (Debian's golang-go, or go.dev)"
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if [[ -x "$BIN/kind" ]]; then echo "$BIN"; exit 0; fi
export GOFLAGS="-p=${GO_BUILD_P:-1}" GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$BIN.tmp"
t0=$SECONDS
go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$VERSION" || die "go install sigs.k8s.io/kind@$VERSION failed"
mkdir -p "$BIN"
mv "$BIN.tmp/kind" "$BIN/kind"
rmdir "$BIN.tmp"
log "kind $VERSION built in $((SECONDS - t0)) s"
echo "$BIN"
