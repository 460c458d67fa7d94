"""Init containers for the kubelet stand-in: a pod's containers as ordered stages.

Role: as a kubelet does, a pod's `initContainers` run one after another, each to completion,
before its first regular container starts; an init container that fails is restarted with
back-off (restartPolicy Always / OnFailure) and the pod stays Pending with Initialized False and
the failure in `initContainerStatuses` (exit code, and with terminationMessagePolicy
FallbackToLogsOnError the last lines of its log as the message, or /dev/termination-log's
equivalent: the stand-in has no such file, so the log tail is the message either way).

Invariants: no IO but reading a log tail (processes are the kubelet's); a stage is what
podspec.py resolved for one container; the regular container is always the last stage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import podspec

MESSAGE_LINES = 80  # the kubelet keeps at most 80 lines / 2048 bytes of a fallback log message
MESSAGE_BYTES = 2048


@dataclass
class Stage:
    container: dict[str, Any]
    argv: list[str]
    env: dict[str, str]
    cwd: str
    logfile: Path
    init: bool
    exit_code: int | None = None  # the last run's exit code (None while never finished)
    message: str = ""
    finished_at: str = ""


def build(
    pod: dict[str, Any],
    vol_dirs: dict[str, str],
    configmaps: dict[str, dict[str, str]],
    secrets: dict[str, dict[str, str]],
    *,
    base_env: dict[str, str],
    pod_dir: Path,
) -> list[Stage]:
    """The pod's init containers then its first container, resolved by podspec.py (ValueError
    for a container without a command)."""
    spec = pod["spec"]
    containers = [(c, True) for c in spec.get("initContainers") or []]
    containers.append((spec["containers"][0], False))
    out = []
    for c, init in containers:
        env = podspec.resolve_env(pod, c, configmaps, secrets)
        mounts = podspec.mount_map(c, vol_dirs)
        env = {k: podspec.rewrite_paths(v, mounts) for k, v in env.items()}
        argv = podspec.process_argv(c, env, mounts)
        workdir = podspec.rewrite_paths(c.get("workingDir") or "", mounts) or str(pod_dir)
        out.append(Stage(c, argv, {**base_env, **env}, workdir, pod_dir / f"{c['name']}.log", init))
    return out


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def log_tail(logfile: Path, offset: int = 0) -> str:
    """The last lines of a container's log written since `offset` (this run's output)."""
    try:
        with open(logfile, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return ""
    lines = data.decode(errors="replace").splitlines()[-MESSAGE_LINES:]
    return "\n".join(lines)[-MESSAGE_BYTES:]


def init_statuses(stages: list[Stage], current: int, running: bool) -> list[dict[str, Any]]:
    """initContainerStatuses: finished stages terminated (Completed or Error), the current one
    running (with the last failure as lastState) or waiting in back-off, later ones waiting."""
    out: list[dict[str, Any]] = []
    for i, s in enumerate(s for s in stages if s.init):
        c = s.container
        status: dict[str, Any] = {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": i < current,
            "restartCount": 0,
        }
        last = None
        if s.exit_code is not None:
            last = {
                "terminated": {
                    "exitCode": s.exit_code,
                    "reason": "Completed" if s.exit_code == 0 else "Error",
                    "message": s.message,
                    "finishedAt": s.finished_at,
                }
            }
        if i < current:
            status["state"] = last or {"terminated": {"exitCode": 0, "reason": "Completed"}}
        elif i == current and running:
            status["state"] = {"running": {"startedAt": now()}}
            if last:
                status["lastState"] = last
        elif i == current and last:
            status["state"] = last
            status["lastState"] = last
        else:
            status["state"] = {"waiting": {"reason": "PodInitializing"}}
        out.append(status)
    return out


def pending_status(ip: str, stages: list[Stage], current: int, alive: bool) -> dict[str, Any]:
    """A pod's status while its init containers run (phase Pending, Initialized False)."""
    t = now()
    return {
        "phase": "Pending",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "hostIP": "127.0.0.1",
        "startTime": t,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": t},
            {"type": "Initialized", "status": "False", "lastTransitionTime": t},
            {"type": "ContainersReady", "status": "False", "lastTransitionTime": t},
            {"type": "Ready", "status": "False", "lastTransitionTime": t},
        ],
        "initContainerStatuses": init_statuses(stages, current, alive),
    }


def running_status(
    ip: str,
    stages: list[Stage],
    c: dict[str, Any],
    *,
    alive: bool,
    ready: bool,
    exit_code: int,
    pid: int,
    restarts: int,
) -> dict[str, Any]:
    """A pod's status once its regular container runs (or has exited)."""
    t = now()
    flag = "True" if ready else "False"
    state: dict[str, Any] = (
        {"running": {"startedAt": t}}
        if alive
        else {"terminated": {"exitCode": exit_code, "reason": "Error", "finishedAt": t}}
    )
    return {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "startTime": t,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": t},
            {"type": "Initialized", "status": "True", "lastTransitionTime": t},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": t},
            {"type": "Ready", "status": flag, "lastTransitionTime": t},
        ],
        "initContainerStatuses": init_statuses(stages, len(stages) - 1, False),
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": f"standin://{pid}",
                "ready": ready,
                "started": alive,
                "restartCount": restarts,
                "state": state,
            }
        ],
    }
