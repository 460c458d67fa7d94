"""The Kubernetes nemesis's hands on the real-kubelet target: faults in pods and the control plane.

Role: `PodFaults` applies k8s_nemesis's fault kinds to a StatefulSet's pods (`quorum-N`) and
heals them:
- partitions: iptables rules in the pod's own network namespace (entered with `nsenter --net`
  through its node container's pid, containerd's task), `DROP` to / from a peer pod's IP; healed
  by flushing that namespace's filter chains (the pods' namespaces hold no other rules:
  kube-proxy's are in the node's namespace); `cut_operator`: the same in the operator's pod,
  `DROP` to / from every quorum pod's IP (the API server, reached through the service IP and
  kube-proxy's rules in the node's namespace, stays reachable);
- freeze / thaw: `ctr tasks pause / resume` of the node container's task (containerd freezes
  its cgroup: the cgroup freezer), the pause asked again when runc gave up on it under load;
- kill: SIGKILL to the container's process (`Cluster.kill_container`);
- agents stopped / started: kube-apiserver, the kubelet or containerd SIGTERMed by its pid
  file, and started again later with the same command line, log and pid file (the cluster's
  state dir; controlplane.stop_dir stops the new one at the end);
- a power cut: every containerd task (containers and sandboxes) SIGKILLed at once.
Only on the real-kubelet target (`Cluster.containerd`): the stand-in runs pods as host
processes with no network namespace of their own.

Invariants: every fault applied is recorded with its wall-clock window (`log`, the porcupine
visualisation's annotations); `heal_all` leaves no rule (the operator's pod's too), frozen task
or stopped API server behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from harness import OPERATOR_NS, Cluster, wait_for
from procs import stop_pid

APISERVER = "kube-apiserver"
FREEZE_S = 30.0  # runc's cgroup v1 freeze gives up under load: asked again this long


class PodFaults:
    def __init__(self, cluster: Cluster, ns: str, statefulset: str = "quorum") -> None:
        if cluster.containerd is None or cluster.pod_logs is None:
            raise RuntimeError("the Kubernetes nemesis needs the real-kubelet target")
        self.cluster, self.ns, self.sts = cluster, ns, statefulset
        self.state = cluster.pod_logs.parent  # the cluster's state dir (pid files, logs)
        self.cut: set[int] = set()  # pods whose namespace holds rules
        self.frozen: set[int] = set()
        self.stopped: dict[str, list[str]] = {}  # agent -> its command line, while stopped
        self.operator_cut: int | None = None  # the operator's task pid, while cut
        self.log: list[dict[str, Any]] = []

    # --- pods --------------------------------------------------------------------------------
    def _pod(self, o: int) -> Any:
        return self.cluster.core.read_namespaced_pod(f"{self.sts}-{o}", self.ns)

    def ip(self, o: int) -> str:
        return str(self._pod(o).status.pod_ip)

    def container_id(self, o: int) -> str:
        """The node container's id once the pod's status names one with a live task: the
        kubelet reports a restarted container late under load (the status still naming the
        killed one, `ctr tasks pause` failed with "not found" in the campaign)."""

        def running() -> str | None:
            statuses = self._pod(o).status.container_statuses or []
            (cid,) = [c.container_id for c in statuses if c.name == "node"]
            if not cid:
                return None
            cid = str(cid).split("://", 1)[1]
            rows = self.cluster.containerd.ctr("tasks", "ls").stdout.splitlines()[1:]
            live = ("RUNNING", "PAUSED", "PAUSING")  # a frozen one is thawed by this id
            ok = any(r.split()[0] == cid and r.split()[-1] in live for r in rows if r.split())
            return cid if ok else None

        return str(wait_for(running, 120, f"{self.sts}-{o}'s node container running"))

    def pid(self, o: int) -> int:
        return self.task_pid(self.container_id(o), f"{self.sts}-{o}")

    def restarts(self, o: int) -> int:
        return self.cluster.restarts(self.ns, f"{self.sts}-{o}", "node")

    def restarted(self, o: int, before: int) -> None:
        """Wait until the kubelet restarted the node container (its restartCount above
        `before`): a heal is judged from then, not from the kill, since a fetch the killed
        process sent before dying can still reach the leader after the kill."""
        wait_for(lambda: self.restarts(o) > before, 120, f"{self.sts}-{o} restarted")

    def task_pid(self, cid: str, pod: str) -> int:
        rows = self.cluster.containerd.ctr("tasks", "ls").stdout.splitlines()[1:]
        (pid,) = [int(r.split()[1]) for r in rows if r.split()[0] == cid]
        if pid <= 1:
            raise RuntimeError(f"{pod}'s container {cid[:12]} has no running task")
        return pid

    def _iptables(self, o: int, *args: str) -> None:
        self._iptables_pid(self.pid(o), *args)

    @staticmethod
    def _iptables_pid(pid: int, *args: str) -> None:
        subprocess.run(
            ["nsenter", f"--net=/proc/{pid}/ns/net", "iptables", "-w", *args],
            check=True,
            capture_output=True,
            timeout=30,
        )

    def operator_pid(self) -> int:
        """The operator container's task pid (the chart's Deployment, one pod running)."""
        pods = self.cluster.core.list_namespaced_pod(
            OPERATOR_NS, label_selector="app.kubernetes.io/name=metaquorum-operator"
        ).items
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        (pod,) = live
        statuses = pod.status.container_statuses or []
        (cid,) = [c.container_id for c in statuses if c.name == "operator"]
        return self.task_pid(str(cid).split("://", 1)[1], pod.metadata.name)

    def cut_operator(self, members: int = 3) -> None:
        """The operator's pod cut from the quorum's pods `0..members-1`, both ways."""
        pid = self.operator_pid()
        for o in range(members):
            peer = self.ip(o)
            self._iptables_pid(pid, "-I", "OUTPUT", "-d", peer, "-j", "DROP")
            self._iptables_pid(pid, "-I", "INPUT", "-s", peer, "-j", "DROP")
        self.operator_cut = pid

    def heal_operator(self) -> None:
        pid, self.operator_cut = self.operator_cut, None
        if pid is not None and Path(f"/proc/{pid}").exists():  # else: its pod is gone
            self._iptables_pid(pid, "-F", "INPUT")
            self._iptables_pid(pid, "-F", "OUTPUT")

    def drop(self, src: int, dst: int, both_ways: bool = True) -> None:
        """Packets from pod `src` to pod `dst` dropped (in src's namespace); `both_ways`: and
        dst's packets to src dropped as they arrive there."""
        peer = self.ip(dst)
        self._iptables(src, "-I", "OUTPUT", "-d", peer, "-j", "DROP")
        if both_ways:
            self._iptables(src, "-I", "INPUT", "-s", peer, "-j", "DROP")
        self.cut.add(src)

    def heal_net(self) -> None:
        for o in sorted(self.cut):
            self._iptables(o, "-F", "INPUT")
            self._iptables(o, "-F", "OUTPUT")
        self.cut.clear()

    def freeze(self, o: int) -> None:
        """Pause the node container's task. runc gives up ("unable to freeze") when the
        cgroup does not reach FROZEN in its time, as happens under load while the node is in
        an fsync (uninterruptible): it thaws the cgroup back and the freeze is asked again."""
        cid = self.container_id(o)
        deadline = time.monotonic() + FREEZE_S
        while True:
            done = self.cluster.containerd.ctr("tasks", "pause", cid, check=False)
            if done.returncode == 0:
                break
            if time.monotonic() > deadline or "unable to freeze" not in done.stderr:
                raise RuntimeError(f"ctr tasks pause {cid[:12]}: {done.stderr.strip()}")
            time.sleep(0.2)
        self.frozen.add(o)

    def thaw(self, o: int) -> None:
        self.cluster.containerd.ctr("tasks", "resume", self.container_id(o))
        self.frozen.discard(o)

    def kill(self, o: int) -> int:
        return self.cluster.kill_container(self.ns, f"{self.sts}-{o}", "node")

    # --- the node agents and the control plane ----------------------------------------------
    def _files(self, agent: str) -> tuple[Path, Path]:
        base = self.state / "containerd" if agent == "containerd" else self.state
        return base / f"{agent}.pid", base / f"{agent}.log"

    def agent_stop(self, agent: str) -> None:
        """SIGTERM an agent (kube-apiserver, kubelet, containerd) by its pid file, keeping its
        command line to start it again (containerd's shims, in process groups of their own,
        and so the containers, keep running)."""
        pidfile, _ = self._files(agent)
        pid = int(pidfile.read_text())
        self.stopped[agent] = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        stop_pid(pid)

    def agent_start(self, agent: str) -> None:
        argv = self.stopped.pop(agent, None)
        if argv is None:
            return
        pidfile, logfile = self._files(agent)
        deadline = time.monotonic() + 90
        while True:
            with logfile.open("ab") as log:
                proc = subprocess.Popen(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            pidfile.write_text(str(proc.pid))
            # the kubelet exits at once while containerd's CRI is still initialising ("server
            # is not initialized"): start it again until it stays up
            try:
                proc.wait(5 if agent == "kubelet" else 0.5)
            except subprocess.TimeoutExpired:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{agent} keeps exiting ({proc.returncode}): see {logfile}")
            time.sleep(1)
        if agent == APISERVER:
            wait_for(self.cluster.core.list_namespace, 120, "kube-apiserver back")
        elif agent == "containerd":
            wait_for(
                lambda: self.cluster.containerd.ctr("version", check=False).returncode == 0,
                60,
                "containerd back",
            )

    def kill_every_task(self) -> int:
        """SIGKILL every container of the node (sandboxes too), as a power cut does."""
        rows = self.cluster.containerd.ctr("tasks", "ls").stdout.splitlines()[1:]
        pids = [int(r.split()[1]) for r in rows if len(r.split()) > 1 and r.split()[1].isdigit()]
        pids = [p for p in pids if p > 1]  # a stopped task shows pid 0: never kill(0, ...)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)

    # --- bookkeeping -------------------------------------------------------------------------
    def record(self, what: str, start_ns: int) -> None:
        self.log.append({"start": start_ns, "end": time.time_ns(), "what": what})

    def heal_all(self) -> None:
        """Whatever is still applied (a failed step): the agents first (the others need
        them to find their pods), the API server first of all."""
        for agent in (APISERVER, "containerd", "kubelet"):
            self.agent_start(agent)
        for o in sorted(self.frozen):
            self.thaw(o)
        self.heal_net()
        self.heal_operator()
