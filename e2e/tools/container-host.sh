#!/usr/bin/env bash
# Whether this machine can run the real-kubelet e2e target, and its container runtime from
# Debian's packages. Used by e2e/run.sh (which target `make e2e` runs) and
# e2e/tools/prebuild.sh (what `make test` builds ahead).
#   container-host.sh check    exit 0 when real containers can run here; else exit 1 with the
#                              reason on stdout (not root, no cgroups, no overlayfs, no netns)
#   container-host.sh install  containerd, runc, CNI plugins, iptables, xfsprogs from apt when missing
# Touches nothing but a probe network namespace it deletes again, and apt's packages.
set -uo pipefail

check() {
    [[ $(id -u) -eq 0 ]] || { echo "not root (containerd, runc and the network namespace need it)"; return 1; }
    [[ -d /sys/fs/cgroup ]] || { echo "no cgroup filesystem at /sys/fs/cgroup"; return 1; }
    grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null \
        || { echo "no overlayfs (containerd's snapshotter)"; return 1; }
    command -v ip >/dev/null || { echo "no ip command (iproute2)"; return 1; }
    local probe="mq-e2e-probe-$$"
    ip netns add "$probe" 2>/dev/null || { echo "cannot create a network namespace (ip netns add)"; return 1; }
    ip netns del "$probe"
}

install() {
    local tool
    # mkfs.xfs/xfs_growfs: the provisioner's expandable class (e2e/expansion.py)
    for tool in containerd runc ctr ip nsenter iptables /usr/lib/cni/bridge mkfs.xfs xfs_growfs; do
        command -v "$tool" >/dev/null && continue
        echo "[container-host] installing containerd runc containernetworking-plugins iptables (apt-get)" >&2
        "$(dirname "$0")/../../scripts/apt-install.sh" containerd runc \
            containernetworking-plugins iptables iproute2 util-linux xfsprogs \
            || { echo "[container-host] ERROR: apt-get install of the container runtime failed" >&2; return 1; }
        return 0
    done
}

case "${1:-}" in
    check) check ;;
    install) install ;;
    *) echo "usage: $0 check|install" >&2; exit 2 ;;
esac
