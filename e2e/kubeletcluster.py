"""A real single-node Kubernetes (E2E_CLUSTER=local): the control plane, kube-scheduler,
a real kubelet with containerd + runc, CNI bridge networking, kube-proxy and CoreDNS.

Role: the e2e target where pods are real containers running the images built from the
Dockerfiles (e2e/tools/build-images.sh), imported into containerd, never pulled. Binaries:
control plane (build-k8s.sh), kubelet/kube-proxy/kube-scheduler/pause (build-k8s-node.sh),
CoreDNS (build-coredns.sh), all from the Go module proxy; containerd, runc and the CNI plugins
(bridge, host-local, loopback, portmap) from Debian's packages.

Invariants:
- it runs inside a network namespace of its own (e2e/run.sh makes one and runs pytest in it
  with `nsenter --net`; `start` refuses the host's): the bridge, the pods' addresses, the
  apiserver's address and kube-proxy's iptables rules exist only there and go with it;
- every process is started in its own session with a pid file under the state dir and stopped
  by PID (controlplane.stop_dir: node side, containerd and its pods, then the control plane);
  containerd's files are all under STATE/containerd (see containerd.py for its few exceptions).
Network: bridge `mqbr0` 10.244.0.1/24 is the node's address; the apiserver binds it (pods reach
the `kubernetes` Service through kube-proxy), CoreDNS serves on it (the kubelet's clusterDNS),
pods get 10.244.0.x from host-local. The kubelet's API allows anonymous requests (so the
apiserver's logs/exec reach it without a client certificate): it is reachable only inside the
namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from containerd import Containerd  # noqa: E402
from controlplane import ControlPlane  # noqa: E402
from harness import wait_for  # noqa: E402
from kubernetes import client  # noqa: E402

NODE = "mq-node"
BRIDGE = "mqbr0"
SUBNET = "10.244.0.0/24"
GATEWAY = "10.244.0.1"
STORAGE_CLASS = "local-dirs"
PAUSE = "registry.k8s.io/pause:3.10"
USERS = {
    f"system:node:{NODE}": "system:nodes",
    "system:kube-scheduler": "system:kube-scheduler",
    "system:kube-proxy": "system:kube-proxy",
}


def _tool(script: str, *args: str) -> list[str]:
    out = subprocess.run(
        [str(HERE / "tools" / script), *args], check=True, stdout=subprocess.PIPE, text=True
    )
    return out.stdout.strip().splitlines()


def check_own_netns() -> None:
    """Refuse to run unless inside the named network namespace e2e/run.sh made (E2E_NETNS)."""
    name = os.environ.get("E2E_NETNS", "")
    ours = Path("/run/netns") / name
    if not name or not ours.exists() or os.stat("/proc/self/ns/net").st_ino != ours.stat().st_ino:
        raise RuntimeError(
            "E2E_CLUSTER=local runs in a network namespace of its own "
            "(its bridge, addresses and iptables rules): start it through e2e/run.sh"
        )


def setup_network() -> None:
    def ip(*args: str, check: bool = True) -> None:
        subprocess.run(["ip", *args], check=check, capture_output=True)

    ip("link", "set", "lo", "up")
    ip("link", "add", BRIDGE, "type", "bridge", check=False)  # exists after a restart
    ip("addr", "replace", f"{GATEWAY}/24", "dev", BRIDGE)
    ip("link", "set", BRIDGE, "up")


def cni_config(state: Path) -> dict[str, object]:
    return {
        "cniVersion": "0.4.0",
        "name": "mq-e2e",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": SUBNET, "gateway": GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(state / "cni-ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(root: Path, endpoint: Path) -> str:
    return json.dumps(
        {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": GATEWAY,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "failSwapOn": False,
            "failCgroupV1": False,
            "clusterDNS": [GATEWAY],
            "clusterDomain": "cluster.local",
            "resolvConf": str(root / "resolv.conf"),
            "containerRuntimeEndpoint": f"unix://{endpoint}",
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "podLogsDir": str(root / "pod-logs"),
            "syncFrequency": "5s",
            "fileCheckFrequency": "5s",
            "nodeStatusUpdateFrequency": "5s",
            "serializeImagePulls": False,
            "rotateCertificates": False,
            "protectKernelDefaults": False,
            "localStorageCapacityIsolation": False,
            # crashed containers restart after 1, 2, 4 ... 10 s (the default 10 s ... 5 min
            # would make each kill -9 of the fault tests wait longer and longer); the
            # stand-in's back-off is the same
            "featureGates": {
                "ReduceDefaultCrashLoopBackOffDecay": True,
                "KubeletCrashLoopBackOffMax": True,
            },
            "crashLoopBackOff": {"maxContainerRestartPeriod": "10s"},
        }
    )


def proxy_config(kubeconfig: Path) -> str:
    return json.dumps(
        {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "mode": "iptables",
            "clusterCIDR": SUBNET,
            "hostnameOverride": NODE,
            "bindAddress": GATEWAY,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # pods on one bridge reach each other through a Service without br_netfilter
            "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
            "conntrack": {"maxPerCore": 0, "min": 0},
        }
    )


def corefile(kubeconfig: Path) -> str:
    return f""".:53 {{
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} e2e
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
    loadbalance
}}
"""


class KubeletNode:
    """Start order: network, control plane, containerd (+ images), CoreDNS, scheduler,
    kube-proxy, the provisioner, kubelet. `timings` records each step's seconds."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cp = ControlPlane(
            root,
            bind_address=GATEWAY,
            endpoint_reconciler="lease",
            users=dict(USERS),
            apiserver_args=["--kubelet-preferred-address-types=InternalIP"],
        )
        self.containerd = Containerd(root / "containerd")
        self.timings: dict[str, float] = {}

    def _step(self, what: str, t0: float) -> float:
        now = time.monotonic()
        self.timings[what] = now - t0
        return now

    def start(self) -> None:
        check_own_netns()
        t = t0 = time.monotonic()
        node_bin = Path(_tool("build-k8s-node.sh")[-1])
        coredns_bin = Path(_tool("build-coredns.sh")[-1])
        images = {}
        names = ("node", "operator", "node-next", "node-broken")  # variants: the upgrade e2e's
        for line in _tool("build-images.sh", *names, "--static", f"{node_bin / 'pause'}={PAUSE}"):
            name, ref, archive = line.split("\t")
            images[name] = (ref, Path(archive))
        t = self._step("binaries and images (cached) (s)", t)
        setup_network()
        self.cp.start()
        t = self._step("control plane to /readyz (s)", t)
        self.containerd.start()
        (self.containerd.cni_conf_dir / "10-mq-e2e.conflist").write_text(
            json.dumps(cni_config(self.root))
        )
        for name, (ref, archive) in images.items():
            self.containerd.import_image(archive)
            # the tags the e2e manifests name (as on kind); node-next / node-broken: the
            # upgrade e2e's second image (another version) and bad image (exits at start)
            suffix = {"node": "e2e", "operator": "e2e", "node-next": "e2e-next"}
            suffix["node-broken"] = "e2e-broken"
            if name in suffix:
                e2e_ref = ref.rsplit(":", 1)[0] + ":" + suffix[name]
                self.containerd.ctr("images", "tag", "--force", ref, e2e_ref)
        t = self._step("containerd started, images imported (s)", t)
        spawn = self.cp._spawn
        admin = self.cp.kubeconfig
        (self.root / "Corefile").write_text(corefile(admin))
        spawn("coredns", [str(coredns_bin / "coredns"), "-conf", str(self.root / "Corefile")])
        spawn(
            "kube-scheduler",
            [
                str(node_bin / "kube-scheduler"),
                f"--kubeconfig={self.cp.user_kubeconfig('system:kube-scheduler')}",
                "--leader-elect=false",
                "--secure-port=0",
                # A pod the scheduler parked as unschedulable waits for an event it thinks may
                # help, or this long (default 5 min). A StatefulSet pod created as its
                # deleted-on-scale-down PVC is replaced can miss the new PVC's binding (the
                # nemesis saw quorum-4 Pending, its PVC Bound, no retry for 4 min: the step's
                # 240 s ran out). Deprecated in 1.34 but still read; check on a K8S_VERSION move.
                "--pod-max-in-unschedulable-pods-duration=10s",
                "-v=1",
            ],
        )
        (self.root / "kube-proxy.json").write_text(
            proxy_config(self.cp.user_kubeconfig("system:kube-proxy"))
        )
        spawn(
            "kube-proxy",
            [str(node_bin / "kube-proxy"), f"--config={self.root / 'kube-proxy.json'}", "-v=1"],
        )
        spawn(
            "provisioner",
            [
                sys.executable,
                str(HERE / "provisioner.py"),
                "--kubeconfig",
                str(admin),
                "--state",
                str(self.root / "pv"),
                "--node",
                NODE,
                "--storage-class",
                STORAGE_CLASS,
            ],
        )
        (self.root / "resolv.conf").write_text(f"nameserver {GATEWAY}\n")
        (self.root / "kubelet.json").write_text(kubelet_config(self.root, self.containerd.address))
        spawn(
            "kubelet",
            [
                str(node_bin / "kubelet"),
                f"--config={self.root / 'kubelet.json'}",
                f"--kubeconfig={self.cp.user_kubeconfig(f'system:node:{NODE}')}",
                f"--root-dir={self.root / 'kubelet'}",
                f"--cert-dir={self.root / 'kubelet-pki'}",
                f"--hostname-override={NODE}",
                f"--node-ip={GATEWAY}",
                "-v=1",
            ],
        )
        self._step("node side spawned (s)", t)
        self.timings["start total (s)"] = time.monotonic() - t0

    def wait_usable(self, api: client.ApiClient) -> None:
        """Block until the cluster is usable: node Ready, the default ServiceAccount (the
        controller-manager's service-account and root-CA controllers run), CoreDNS ready. The
        e2e fixture (clusters.kubelet_cluster) and `make cluster` (usercluster.py) both wait so."""
        core = client.CoreV1Api(api)

        def node_ready() -> bool:
            n = core.read_node(NODE)
            return any(x.type == "Ready" and x.status == "True" for x in n.status.conditions)

        wait_for(node_ready, 90, f"node {NODE} Ready")
        wait_for(
            lambda: core.read_namespaced_service_account("default", "default"),
            60,
            "the default ServiceAccount (controller-manager running)",
        )

        def coredns_ready() -> bool:
            with urllib.request.urlopen("http://127.0.0.1:18181/ready", timeout=2) as r:
                return r.status == 200

        wait_for(coredns_ready, 30, "CoreDNS ready")

    def stop(self) -> None:
        self.cp.stop()  # stop_dir: node side, containerd (its pods), then the control plane
        subprocess.run(["ip", "link", "del", BRIDGE], check=False, capture_output=True)
