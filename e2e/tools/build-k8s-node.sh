#!/usr/bin/env bash
# Build the node side of Kubernetes from the Go module proxy, cached by version: kubelet,
# kube-proxy and kube-scheduler (the control plane of build-k8s.sh has no scheduler: the kubelet
# stand-in binds pods itself), plus a tiny static `pause` program for the sandbox image.
#
# Role: the real-kubelet e2e target (E2E_CLUSTER=local, docs/e2e.md). Same module set
# as build-k8s.sh (its go.mod pins every k8s.io staging module to the published v0.N.P), built in
# its own directory so the control plane's build and cache stay as they are. Idempotent; callers
# serialise on the same lock file as build-k8s.sh (one heavy Go build at a time).
#
# Output (stdout, last line): the directory holding kubelet, kube-proxy, kube-scheduler, pause.
# Env: K8S_VERSION (default v1.34.4), METAQUORUM_CACHE, GO_BUILD_P (go build -p, default 1).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/k8s-$K8S_VERSION"
BIN="$OUT/node-bin"
HERE="$(cd "$(dirname "$0")" && pwd)"

log() { echo "[build-k8s-node] $*" >&2; }
die() { echo "[build-k8s-node] ERROR: $*" >&2; exit 1; }
have_all() {
    [[ -x "$BIN/kubelet" && -x "$BIN/kube-proxy" && -x "$BIN/kube-scheduler" && -x "$BIN/pause" ]]
}

if have_all; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || die "go not found: install Go >= 1.24"
# the control plane's build writes the go.mod this build starts from
"$HERE/build-k8s.sh" >/dev/null || die "build-k8s.sh failed"
exec 9>"$OUT/.lock"
flock 9
if have_all; then echo "$BIN"; exit 0; fi

export GOFLAGS="-mod=mod -p=${GO_BUILD_P:-1}" GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$BIN"
work="$OUT/src-k8s-node"
mkdir -p "$work"
cp "$OUT/src-k8s/go.mod" "$OUT/src-k8s/go.sum" "$work/"
cat > "$work/tools.go" <<'GO'
//go:build tools

package k8sbuild

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
cd "$work"
t0=$SECONDS
go list -deps k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
    k8s.io/kubernetes/cmd/kube-scheduler >/dev/null
log "modules resolved in $((SECONDS - t0)) s; building kubelet, kube-proxy, kube-scheduler"
t0=$SECONDS
minor="${K8S_VERSION#v1.}"
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=${minor%%.*}"
    ld="$ld -X $p.gitTreeState=clean"
done
for cmd in kube-scheduler kube-proxy kubelet; do
    [[ -x "$BIN/$cmd" ]] && continue
    go build -trimpath -ldflags "$ld" -o "$BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
    mv "$BIN/$cmd.tmp" "$BIN/$cmd"
    log "$cmd built ($((SECONDS - t0)) s so far)"
done
# pause: the sandbox's init process; sleeps until SIGINT/SIGTERM, reaps children (as k8s' pause.c)
mkdir -p "$work/pause"
cat > "$work/pause/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
GO
(cd "$work/pause" && [[ -f go.mod ]] || go mod init metaquorum.local/pause >/dev/null 2>&1)
(cd "$work/pause" && GOFLAGS= go build -trimpath -ldflags "-s -w" -o "$BIN/pause" .)
have_all || die "build finished but binaries are missing in $BIN"
log "done in $((SECONDS - t0)) s"
echo "$BIN"
