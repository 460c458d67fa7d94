"""k8s_faults.PodFaults without a cluster (a fake containerd and pod status): a freeze that
runc gives up on under load ("unable to freeze": cgroup v1's freezer stuck in FREEZING while
the node is in an fsync) is asked again, as CI's failed run needed (its k8s nemesis test
stopped on `ctr tasks pause` raising); any other pause error still fails at once."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from k8s_faults import PodFaults

CID = "c0ffee"
BUSY = "ctr: OCI runtime pause failed: unable to freeze: unknown"


class FakeContainerd:
    def __init__(self, pause_errors: list[str]) -> None:
        self.pause_errors = pause_errors
        self.pauses = 0

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if args[:2] == ("tasks", "ls"):
            return subprocess.CompletedProcess(args, 0, f"TASK PID STATUS\n{CID} 42 RUNNING\n", "")
        assert args[:2] == ("tasks", "pause")
        self.pauses += 1
        err = self.pause_errors.pop(0) if self.pause_errors else ""
        if err and check:  # as containerd.Containerd.ctr does
            raise RuntimeError(f"ctr {' '.join(args)}: {err}")
        return subprocess.CompletedProcess(args, 1 if err else 0, "", err)


def faults(tmp_path: Path, containerd: FakeContainerd) -> PodFaults:
    cluster: Any = SimpleNamespace(containerd=containerd, pod_logs=tmp_path / "pod-logs")
    fx = PodFaults(cluster, "ns")
    status = SimpleNamespace(
        container_statuses=[SimpleNamespace(name="node", container_id=f"containerd://{CID}")]
    )
    fx._pod = lambda o: SimpleNamespace(status=status)  # type: ignore[method-assign]
    return fx


def test_a_freeze_runc_gave_up_on_is_asked_again(tmp_path: Path) -> None:
    ctrd = FakeContainerd([BUSY, BUSY])
    fx = faults(tmp_path, ctrd)
    fx.freeze(1)
    assert ctrd.pauses == 3 and fx.frozen == {1}


def test_another_pause_error_fails_at_once(tmp_path: Path) -> None:
    ctrd = FakeContainerd(["ctr: task not found"])
    fx = faults(tmp_path, ctrd)
    with pytest.raises(RuntimeError, match="task not found"):
        fx.freeze(1)
    assert ctrd.pauses == 1 and fx.frozen == set()
