#!/usr/bin/env bash
# Build CoreDNS from the Go module proxy with only the plugins the e2e cluster uses (errors, log,
# health, ready, reload, loadbalance, cache, kubernetes), cached by version.
#
# Role: cluster DNS for the real-kubelet e2e target (docs/e2e.md): pods resolve Services and
# StatefulSet pods' stable names (`hostname.subdomain.ns.svc.cluster.local`) through it. A main
# package of our own imports coremain and the chosen plugins (CoreDNS's documented way to pick
# plugins without its generator), so the cloud-provider plugins' modules are never built.
# Cache and lock: scripts/go-build-cached.sh.
# Output (stdout, last line): the directory holding `coredns`.
# Env: COREDNS_VERSION (default v1.14.7), METAQUORUM_CACHE, GO_BUILD_P (default 1).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/go-build-cached.sh"

VERSION="${COREDNS_VERSION:-v1.14.7}"
go_cached_begin coredns "$VERSION" coredns
mkdir -p "$OUT/src"
cd "$OUT/src"
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
GOFLAGS="-mod=mod $GOFLAGS" go mod tidy >&2 || die "go mod tidy of the coredns $VERSION wrapper failed"
log "modules resolved in $((SECONDS - GC_T0)) s"
go_cached_build .
