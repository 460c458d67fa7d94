#!/usr/bin/env bash
# Build kube-apiserver + kube-controller-manager (and etcd) from the Go module proxy, cached by version.
#
# Role: the only way this project gets a real Kubernetes control plane on machines without a
# container runtime (see docs/e2e.md). Idempotent: when the binaries for the pinned versions are
# already in $CACHE, it prints their directory and exits at once. Concurrent callers serialise on
# a lock file, so two shells never build the same thing twice.
#
# Output (stdout, last line): the directory holding kube-apiserver, kube-controller-manager, etcd.
# Env: K8S_VERSION (default v1.34.4), ETCD_VERSION (default v3.6.16), METAQUORUM_CACHE.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/k8s-$K8S_VERSION"
BIN="$OUT/bin"
# The machine's own Go module proxy (the first entry of `go env GOPROXY`), overridable.
PROXY="${GOPROXY_URL:-$(go env GOPROXY | cut -d, -f1)}"
[[ "$PROXY" == http* ]] || { echo "[build-k8s] ERROR: go env GOPROXY names no proxy ($PROXY); set GOPROXY_URL" >&2; exit 1; }

log() { echo "[build-k8s] $*" >&2; }
die() { echo "[build-k8s] ERROR: $*" >&2; exit 1; }

have_all() {
    [[ -x "$BIN/kube-apiserver" && -x "$BIN/kube-controller-manager" && -x "$BIN/etcd" ]]
}

if have_all; then echo "$BIN"; exit 0; fi

command -v go >/dev/null || die "go not found: install Go >= 1.24 (etcd 3.6 needs >= 1.26)"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if have_all; then echo "$BIN"; exit 0; fi

export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$BIN"

build_k8s() {
    local work="$OUT/src-k8s" minor="${K8S_VERSION#v1.}"
    local staging="v0.${minor}"
    mkdir -p "$work"
    log "fetching k8s.io/kubernetes $K8S_VERSION go.mod for its staging list"
    curl -fsSL "$PROXY/k8s.io/kubernetes/@v/$K8S_VERSION.mod" -o "$work/upstream.mod" \
        || die "cannot fetch k8s.io/kubernetes@$K8S_VERSION from $PROXY"
    {
        echo "module metaquorum.local/k8sbuild"
        echo
        echo "go 1.24.0"
        echo
        echo "godebug default=go1.24"
        echo
        echo "require k8s.io/kubernetes $K8S_VERSION"
        echo
        echo "replace ("
        # upstream: k8s.io/X => ./staging/src/k8s.io/X ; we pin each to its published v0.N.P.
        sed -n '/^replace (/,/^)/p' "$work/upstream.mod" \
            | awk '$2 == "=>" {print $1}' \
            | grep -v -e sample-cli-plugin -e sample-controller \
            | while read -r m; do echo "	$m => $m $staging"; done
        echo ")"
    } > "$work/go.mod"
    cat > "$work/tools.go" <<'GO'
//go:build tools

package k8sbuild

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
    cd "$work"
    log "resolving modules (about 1 min, ~540 MB into the Go module cache)"
    local t0=$SECONDS
    go list -deps k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager >/dev/null
    log "modules resolved in $((SECONDS - t0)) s; building (about 9 min cold on 2 cores)"
    t0=$SECONDS
    local pkg=k8s.io/component-base/version pkg2=k8s.io/client-go/pkg/version
    local ld="-s -w"
    for p in $pkg $pkg2; do
        ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=${minor%%.*}"
        ld="$ld -X $p.gitTreeState=clean"
    done
    go build -trimpath -ldflags "$ld" -o "$BIN.tmp/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
    mv "$BIN.tmp/kube-apiserver" "$BIN.tmp/kube-controller-manager" "$BIN/"
    rmdir "$BIN.tmp"
    log "kube-apiserver + kube-controller-manager built in $((SECONDS - t0)) s"
}

build_etcd() {
    local work="$OUT/src-etcd"
    mkdir -p "$work"
    log "fetching go.etcd.io/etcd/server/v3 $ETCD_VERSION go.mod"
    curl -fsSL "$PROXY/go.etcd.io/etcd/server/v3/@v/$ETCD_VERSION.mod" -o "$work/upstream.mod" \
        || die "cannot fetch etcd server $ETCD_VERSION"
    cat > "$work/go.mod" <<MOD
module metaquorum.local/etcdbuild

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
    # etcd's own replace directives point at local dirs; pin its sibling modules instead.
    {
        echo "replace ("
        for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do
            echo "	go.etcd.io/etcd/$m => go.etcd.io/etcd/$m $ETCD_VERSION"
        done
        echo ")"
    } >> "$work/go.mod"
    cat > "$work/tools.go" <<'GO'
//go:build tools

package etcdbuild

import _ "go.etcd.io/etcd/server/v3"
GO
    cd "$work"
    local t0=$SECONDS
    go list -deps go.etcd.io/etcd/server/v3 >/dev/null
    go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
    log "etcd $ETCD_VERSION built in $((SECONDS - t0)) s"
}

[[ -x "$BIN/kube-apiserver" && -x "$BIN/kube-controller-manager" ]] || build_k8s
[[ -x "$BIN/etcd" ]] || build_etcd
have_all || die "build finished but binaries are missing in $BIN"
echo "$BIN"
