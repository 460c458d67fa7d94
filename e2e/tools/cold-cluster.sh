#!/usr/bin/env bash
# A cold `make cluster`, timed part by part: every cache the cluster's build reads starts empty.
#
# Role: the measurement behind README's and docs/cluster.md's "make cluster, cold" figure. The
# caches (METAQUORUM_CACHE, Go's GOCACHE and GOMODCACHE, pip's and uv's) all point under DIR,
# so nothing from ~/.cache/metaquorum or ~/go is reused and nothing there is touched; the
# cluster gets a state dir (DIR/state) and network namespace (mq-cold-<pid>) of its own.
#   1. what `make cluster` builds before it starts anything (the same scripts, in the same
#      order as e2e/usercluster.py's `up`), each timed; run in a private mount namespace, so
#      the image build's chroot mounts never show in the host's mount table;
#   2. `make cluster` itself (now finding its builds cached: it starts the cluster), then
#      `make cluster-down`; both under the lock file COLD_LOCK when set (e.g. /work/e2e.lock on
#      a machine where other runs compare the host before and after).
# Cold = the sum of 1 and `make cluster` in 2. Times go to DIR/times.tsv (part<TAB>seconds).
# Usage (root): nice -n 19 e2e/tools/cold-cluster.sh DIR     DIR must not hold a cache yet.
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "[cold-cluster] ERROR: $*" >&2; exit 1; }
[[ $# -eq 1 ]] || die "usage: $0 DIR (an empty or new directory for the caches)"
[[ $(id -u) -eq 0 ]] || die "needs root (as make cluster does)"
dir="$(realpath -m "$1")"
[[ ! -e "$dir/cache" ]] || die "$dir/cache exists: a cold run needs a new directory"
mkdir -p "$dir"
export METAQUORUM_CACHE="$dir/cache" GOCACHE="$dir/go-build" GOMODCACHE="$dir/go-mod" \
    PIP_CACHE_DIR="$dir/pip" UV_CACHE_DIR="$dir/uv" \
    MQ_CLUSTER_STATE="$dir/state" MQ_CLUSTER_NETNS="mq-cold-$$"
times="$dir/times.tsv"
: > "$times"

timed() {  # timed PART CMD...: run CMD, append PART<TAB>seconds, fail as CMD fails
    local part="$1" t0 t1
    shift
    t0=$(date +%s.%N)
    echo "[cold-cluster] $part: $*" >&2
    "$@"
    t1=$(date +%s.%N)
    awk -v p="$part" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s\t%.1f\n", p, b - a }' \
        | tee -a "$times" >&2
}

tools=e2e/tools
builds() {
    timed "container runtime (apt, when missing)" "$tools/container-host.sh" install
    timed "kubectl + helm (pip)" "$tools/install-clients.sh" >/dev/null
    timed "etcd, kube-apiserver, kube-controller-manager (Go)" "$tools/build-k8s.sh" >/dev/null
    timed "kubelet, kube-proxy, kube-scheduler, pause (Go)" "$tools/build-k8s-node.sh" >/dev/null
    timed "CoreDNS (Go)" "$tools/build-coredns.sh" >/dev/null
    timed "node + operator images (mmdebstrap, wheels)" "$tools/build-images.sh" >/dev/null
}
start_stop() {
    local status=0
    timed "make cluster (builds cached: the start)" make cluster || status=$?
    timed "make cluster-down" make cluster-down
    return "$status"
}
export -f timed builds start_stop
export times tools
timed "builds, total" unshare --mount --propagation private bash -c builds
status=0
if [[ -n "${COLD_LOCK:-}" ]]; then
    flock "$COLD_LOCK" bash -c start_stop || status=$?
else
    start_stop || status=$?
fi
echo "[cold-cluster] times in $times:" >&2
cat "$times"
exit "$status"
