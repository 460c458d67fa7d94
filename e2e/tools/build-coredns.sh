#!/usr/bin/env bash
# Build CoreDNS from the Go module proxy with only the plugins the e2e cluster uses (errors, log,
# health, ready, reload, loadbalance, cache, kubernetes), cached by version.
#
# Role: cluster DNS for the real-kubelet e2e target (docs/e2e.md): pods resolve Services and
# StatefulSet pods' stable names (`hostname.subdomain.ns.svc.cluster.local`) through it. A main
# package of our own imports coremain and the chosen plugins (CoreDNS's documented way to pick
# plugins without its generator), so the cloud-provider plugins' modules are never built.
# Output (stdout, last line): the directory holding `coredns`.
# Env: COREDNS_VERSION (default v1.14.7), METAQUORUM_CACHE, GO_BUILD_P (default 1).
set -euo pipefail

VERSION="${COREDNS_VERSION:-v1.14.7}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/coredns-$VERSION"
BIN="$OUT/bin"
log() { echo "[build-coredns] $*" >&2; }
die() { echo "[build-coredns] ERROR: $*" >&2; exit 1; }

if [[ -x "$BIN/coredns" ]]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || die "go not found"
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if [[ -x "$BIN/coredns" ]]; then echo "$BIN"; exit 0; fi
export GOFLAGS="-mod=mod -p=${GO_BUILD_P:-1}" GOTOOLCHAIN=local CGO_ENABLED=0
work="$OUT/src"
mkdir -p "$work" "$BIN"
cd "$work"
cat > go.mod <<MOD
module metaquorum.local/coredns

go 1.24

require github.com/coredns/coredns $VERSION
MOD
# Directive order follows CoreDNS's plugin.cfg (the order plugins see a query).
cat > main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	dnsserver.Directives = []string{
		"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes",
	}
}

func main() { coremain.Run() }
GO
t0=$SECONDS
go mod tidy >&2
log "modules resolved in $((SECONDS - t0)) s"
go build -trimpath -ldflags "-s -w" -o "$BIN/coredns.tmp" .
mv "$BIN/coredns.tmp" "$BIN/coredns"
log "coredns $VERSION built in $((SECONDS - t0)) s"
echo "$BIN"
