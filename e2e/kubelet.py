"""Kubelet stand-in: runs a real cluster's pods as local processes (no container runtime).

Role (docs/e2e.md): registers one Node and keeps its status and Lease fresh; binds pending pods
to it (there is no scheduler); provisions a PV (a local directory) for every pending PVC of its
StorageClass and deletes Released ones; runs each bound pod's first container's command + args as
a local process with its env (downward API included), its own pod IP in 127.0.0.0/8 and its
volumes mapped to local directories (podspec.py); reports Running/Ready from the readiness probe
(HTTP and TCP probes really called, exec probes run); restarts exited processes
(restartPolicy Always); on deletion stops the process (SIGTERM, grace period, SIGKILL) and
finalises the pod; keeps a hosts file of pods' stable DNS names (hostname.subdomain.ns.svc...)
and Services' names that pod processes resolve through e2e/standin_site/sitecustomize.py.

Node registration and heartbeats are in nodelease.py; the fault-injection port for tests
(kill -9 a pod's process, lose a disk) in control.py.

Invariants: one loop thread owns all pod state (the control thread takes the same lock);
processes are stopped by PID only; everything it writes is under STATE.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import control
import hostsfile
import nodelease
import podrun
import probes
import stages
import volumes
from kubernetes import client, config
from kubernetes.client.rest import ApiException

HERE = Path(__file__).resolve().parent
log = logging.getLogger("kubelet")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Kubelet:
    def __init__(self, kubeconfig: Path, state: Path) -> None:
        self.state = state
        self.api_client = config.new_client_from_config(str(kubeconfig))
        self.core = client.CoreV1Api(self.api_client)
        self.coord = client.CoordinationV1Api(self.api_client)
        self.storage = client.StorageV1Api(self.api_client)
        self.server = self.api_client.configuration.host
        self.ca_file = self.api_client.configuration.ssl_ca_cert
        self.runs: dict[str, podrun.PodRun] = {}
        self.lock = threading.RLock()
        self.next_ip = 0
        self.hosts_path = state / "hosts"
        self.last_heartbeat = 0.0
        self.stop_event = threading.Event()

    def heartbeat(self, force: bool = False) -> None:
        if force or time.monotonic() - self.last_heartbeat >= 10:
            self.last_heartbeat = time.monotonic()
            nodelease.heartbeat(self.core, self.coord)

    # ---- the loop -------------------------------------------------------------------------
    def run(self) -> None:
        nodelease.register(self.core, self.storage)
        self.heartbeat(force=True)
        while not self.stop_event.is_set():
            try:
                self.heartbeat()
                volumes.provision(self.core, self.state, nodelease.STORAGE_CLASS)
                pods = self.core.list_pod_for_all_namespaces().items
                with self.lock:
                    self.sync(pods)
                services = self.core.list_service_for_all_namespaces().items
                hostsfile.write(
                    self.hosts_path,
                    self.api_client.sanitize_for_serialization(pods),
                    self.api_client.sanitize_for_serialization(services),
                )
            except Exception:
                log.exception("sync failed")
            self.stop_event.wait(0.5)
        with self.lock:
            for run in self.runs.values():
                podrun.kill(run, signal.SIGTERM)
            for run in self.runs.values():
                podrun.reap(run, 5.0)

    def sync(self, pod_objs: list[Any]) -> None:
        seen: set[str] = set()
        for obj in pod_objs:
            pod = self.api_client.sanitize_for_serialization(obj)
            meta, spec = pod["metadata"], pod["spec"]
            uid = meta["uid"]
            if not spec.get("nodeName"):
                if not meta.get("deletionTimestamp"):
                    self.bind(meta)
                continue
            if spec["nodeName"] != nodelease.NODE:
                continue
            seen.add(uid)
            run = self.runs.get(uid)
            if meta.get("deletionTimestamp"):
                self.terminate(pod, run)
                continue
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            if run is None:
                self.start(pod)
            else:
                self.supervise(pod, run)
        for uid in list(self.runs):
            if uid not in seen:  # force-deleted: nobody to report to
                run = self.runs.pop(uid)
                podrun.kill(run, signal.SIGKILL)
                podrun.reap(run, 2.0)

    def bind(self, meta: dict[str, Any]) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "uid": meta["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": nodelease.NODE},
        }
        try:
            self.core.create_namespaced_binding(meta["namespace"], body, _preload_content=False)
        except ApiException as e:
            log.info("bind %s/%s: %s", meta["namespace"], meta["name"], e.reason)

    def alloc_ip(self) -> str:
        """127.N.x.y: N is per stand-in process, so two clusters on one machine never hand out
        the same pod IP."""
        in_use = {r.ip for r in self.runs.values()}
        net = 10 + os.getpid() % 240
        while True:
            self.next_ip += 1
            ip = f"127.{net}.{self.next_ip // 250 % 250}.{1 + self.next_ip % 250}"
            if ip not in in_use:
                return ip

    def start(self, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        pod_dir = self.state / "pods" / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
        prepared = volumes.prepare(self.core, pod, pod_dir, self.server, self.ca_file)
        if prepared is None:
            return  # a volume is not ready yet (PVC unbound, ConfigMap missing): next loop
        vol_dirs, cms, secrets, pv_dirs = prepared
        ip = self.alloc_ip()
        pod.setdefault("status", {}).update(
            {"podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.0.0.1"}
        )
        venv_bin = str(Path(sys.executable).parent)
        base = {
            "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(pod_dir),
            "HOSTNAME": spec.get("hostname") or meta["name"],
            "PYTHONPATH": str(HERE / "standin_site"),
            "METAQUORUM_E2E_HOSTS": str(self.hosts_path),
            "PYTHONUNBUFFERED": "1",
        }
        kubeconfig = pod_dir / "kubeconfig"
        if kubeconfig.exists():
            base["KUBECONFIG"] = str(kubeconfig)
        try:
            pod_stages = stages.build(pod, vol_dirs, cms, secrets, base_env=base, pod_dir=pod_dir)
        except ValueError as e:
            self.patch_status(meta, {"phase": "Failed", "reason": "NoCommand", "message": str(e)})
            return
        main = pod_stages[-1]
        c = main.container
        run = podrun.PodRun(
            uid=meta["uid"],
            namespace=meta["namespace"],
            name=meta["name"],
            ip=ip,
            argv=main.argv,
            env=main.env,
            cwd=main.cwd,
            logfile=main.logfile,
            probe=c.get("readinessProbe"),
            liveness=c.get("livenessProbe"),
            grace=float(spec.get("terminationGracePeriodSeconds") or 30),
            pv_dirs=pv_dirs,
            stages=pod_stages,
        )
        self.runs[run.uid] = run
        podrun.launch(run)
        self.report(meta, run, c)

    def supervise(self, pod: dict[str, Any], run: podrun.PodRun) -> None:
        c = pod["spec"]["containers"][0]
        if run.initializing:
            self.supervise_init(pod, run, c)
            return
        if run.proc is None or run.proc.poll() is not None:
            code = run.proc.returncode if run.proc is not None else 127
            if not run.reported_exit:
                run.exited_at = run.exited_at or time.monotonic()
                run.reported_exit = True
                run.ready = False
                log.info("%s/%s exited %s", run.namespace, run.name, code)
                self.report(pod["metadata"], run, c)
            policy = pod["spec"].get("restartPolicy", "Always")
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                phase = "Succeeded" if code == 0 else "Failed"
                self.patch_status(pod["metadata"], {"phase": phase})
            elif time.monotonic() - run.exited_at >= min(10.0, 1.0 * 2**run.restarts):
                run.restarts += 1
                run.reported_exit = False
                podrun.launch(run)
                self.report(pod["metadata"], run, c)
            return
        now_s = time.monotonic()
        if run.liveness and now_s >= run.next_liveness and run.started_at is not None:
            run.next_liveness = now_s + min(float(run.liveness.get("periodSeconds", 10)), 1.0)
            delay = float(run.liveness.get("initialDelaySeconds", 0))
            if now_s - run.started_at >= delay:
                run.live_failures = probes.step(
                    probes.check(run.liveness, run.ip, c, run.env), run.live_failures
                )
                if run.live_failures >= int(run.liveness.get("failureThreshold", 3)):
                    log.info("%s/%s failed its liveness probe: killing", run.namespace, run.name)
                    run.live_failures = 0
                    podrun.kill(run, signal.SIGKILL)
                    return
        if now_s < run.next_probe:
            return
        period = float((run.probe or {}).get("periodSeconds", 10))
        run.next_probe = now_s + min(period, 1.0)
        ok = probes.check(run.probe, run.ip, c, run.env)
        run.ready_streak = run.ready_streak + 1 if ok else 0
        run.ready_failures = 0 if ok else run.ready_failures + 1
        probe = run.probe or {}
        if not run.ready and run.ready_streak >= int(probe.get("successThreshold", 1)):
            run.ready = True
            self.report(pod["metadata"], run, c)
        elif run.ready and run.ready_failures >= int(probe.get("failureThreshold", 3)):
            run.ready = False
            self.report(pod["metadata"], run, c)

    def supervise_init(self, pod: dict[str, Any], run: podrun.PodRun, c: dict[str, Any]) -> None:
        """An init container: on success the next stage starts; on failure it is reported
        (exit code, log tail as the message) and restarted after a back-off."""
        if run.proc is not None and run.proc.poll() is None:
            return
        code = run.proc.returncode if run.proc is not None else 127
        st = run.stages[run.stage]
        if not run.reported_exit:
            st.exit_code, st.finished_at = code, stages.now()
            st.message = stages.log_tail(st.logfile, run.log_offset)
            run.exited_at, run.reported_exit = time.monotonic(), True
            if code == 0:
                run.stage += 1
                run.reported_exit = False
                podrun.launch(run)
            else:
                log.info(
                    "%s/%s init container %s exited %s",
                    run.namespace,
                    run.name,
                    st.container["name"],
                    code,
                )
            self.report(pod["metadata"], run, c)
            return
        if pod["spec"].get("restartPolicy", "Always") == "Never":
            self.patch_status(pod["metadata"], {"phase": "Failed", "reason": "InitError"})
        elif time.monotonic() - (run.exited_at or 0) >= min(10.0, 1.0 * 2**run.restarts):
            run.restarts += 1
            run.reported_exit = False
            podrun.launch(run)
            self.report(pod["metadata"], run, c)

    def report(self, meta: dict[str, Any], run: podrun.PodRun, c: dict[str, Any]) -> None:
        alive = run.proc is not None and run.proc.poll() is None
        code = run.proc.returncode if run.proc is not None else 127
        pid = run.proc.pid if run.proc is not None else 0
        if run.initializing:
            status = stages.pending_status(run.ip, run.stages, run.stage, alive)
        else:
            status = stages.running_status(
                run.ip,
                run.stages,
                c,
                alive=alive,
                ready=alive and run.ready,
                exit_code=code,
                pid=pid,
                restarts=run.restarts,
            )
        self.patch_status(meta, status)

    def patch_status(self, meta: dict[str, Any], status: dict[str, Any]) -> None:
        try:
            self.core.patch_namespaced_pod_status(
                meta["name"], meta["namespace"], {"status": status}
            )
        except ApiException as e:
            log.info("status %s/%s: %s", meta["namespace"], meta["name"], e.reason)

    # ---- stopping -------------------------------------------------------------------------
    def terminate(self, pod: dict[str, Any], run: podrun.PodRun | None) -> None:
        meta = pod["metadata"]
        if run is not None and run.proc is not None and run.proc.poll() is None:
            if run.stopping_since is None:
                run.stopping_since = time.monotonic()
                run.grace = float(meta.get("deletionGracePeriodSeconds") or run.grace)
                podrun.kill(run, signal.SIGTERM)
                return
            if time.monotonic() - run.stopping_since < run.grace:
                return
            podrun.kill(run, signal.SIGKILL)
            podrun.reap(run, 5.0)
        try:
            self.core.delete_namespaced_pod(
                meta["name"],
                meta["namespace"],
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}},
            )
        except ApiException as e:
            if e.status not in (404, 409):
                raise
        if run is not None:
            self.runs.pop(run.uid, None)


def main() -> int:
    ap = argparse.ArgumentParser(description="kubelet stand-in: pods as local processes")
    ap.add_argument("--kubeconfig", type=Path, required=True)
    ap.add_argument("--state", type=Path, required=True)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args.state.mkdir(parents=True, exist_ok=True)
    k = Kubelet(args.kubeconfig, args.state.resolve())
    signal.signal(signal.SIGTERM, lambda *_: k.stop_event.set())
    srv = control.serve(k)
    try:
        k.run()
    finally:
        srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
