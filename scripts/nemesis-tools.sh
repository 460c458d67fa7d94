#!/usr/bin/env bash
# What the nemesis tier (tests/nemesis) needs on the machine besides Go and Python: nftables
# (Debian's `nftables`, the faults inside each node's network namespace), iptables (its NFQUEUE
# target, for the delay and reorder faults), iproute2 (`ip netns`,
# veth, bridge, `tc`) and libfiu (scripts/libfiu.sh: fsync EIO in a running node). Installed
# from Debian's archive like every other test dependency. Idempotent; needs root (network
# namespaces). Prints the directory holding fiu-run and fiu-ctrl.
set -euo pipefail
need=()
command -v nft >/dev/null || need+=(nftables)
command -v iptables >/dev/null || need+=(iptables)  # NFQUEUE (delay, reorder): the xtables target
{ command -v ip >/dev/null && command -v tc >/dev/null; } || need+=(iproute2)
if ((${#need[@]})); then
    echo "nemesis: installing ${need[*]} (apt-get)" >&2
    "$(dirname "$0")/apt-install.sh" "${need[@]}" \
        || { echo "nemesis: could not install ${need[*]} with apt-get" >&2; exit 1; }
fi
command -v go >/dev/null || { echo "nemesis: go not found (the machine's Go builds the client)" >&2; exit 1; }
exec "$(dirname "$0")/libfiu.sh"
