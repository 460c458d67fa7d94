"""Pure parts of the kubelet stand-in: $(VAR) expansion, env, mount paths, hosts entries.

Oracles: the expansion rules documented for Kubernetes container env/command, written out by
hand per case.
"""

from __future__ import annotations

from pathlib import Path

import hostsfile
import podspec
import pytest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("x$(A)y$(B)", "x1y2"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$A", "$A"),
        ("$(A", "$(A"),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert podspec.expand(text, {"A": "1", "B": "2"}) == expected


def test_env_order_field_refs_and_references() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {"nodeName": "n"},
        "status": {"podIP": "127.0.10.3"},
    }
    c = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "URL", "value": "http://$(IP):80"},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        ],
    }
    env = podspec.resolve_env(pod, c, {"cm": {"k": "v"}}, {})
    assert env == {
        "CM_k": "v",
        "IP": "127.0.10.3",
        "URL": "http://127.0.10.3:80",
        "APP": "x",
        "K": "v",
    }


def test_mount_paths_are_rewritten_as_path_prefixes_only() -> None:
    c = {
        "name": "c",
        "command": ["run", "--config=/etc/mq/a.properties"],
        "args": ["/var/lib/mq", "/var/lib/mqx", "/etc/mq", "$(D)/x"],
        "volumeMounts": [
            {"name": "a", "mountPath": "/var/lib/mq"},
            {"name": "b", "mountPath": "/etc/mq"},
        ],
    }
    mounts = podspec.mount_map(c, {"a": "/tmp/A", "b": "/tmp/B"})
    argv = podspec.process_argv(c, {"D": "/var/lib/mq"}, mounts)
    assert argv == [
        "run",
        "--config=/tmp/B/a.properties",
        "/tmp/A",
        "/var/lib/mqx",
        "/tmp/B",
        "/tmp/A/x",
    ]
    with pytest.raises(ValueError, match="no command"):
        podspec.process_argv({"name": "c"}, {}, [])


def test_hosts_entries_for_statefulset_pods_and_services() -> None:
    def pod(name: str, ip: str, ready: bool) -> dict:  # type: ignore[type-arg]
        return {
            "metadata": {"name": name, "namespace": "ns", "labels": {"app": "q"}},
            "spec": {"hostname": name, "subdomain": "h"},
            "status": {
                "podIP": ip,
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }

    pods = [pod("q-0", "127.0.10.1", True), pod("q-1", "127.0.10.2", False)]
    svcs = [
        {
            "metadata": {"name": "h", "namespace": "ns"},
            "spec": {"selector": {"app": "q"}, "publishNotReadyAddresses": True},
        },
        {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"selector": {"app": "q"}}},
    ]
    entries = set(hostsfile.entries(pods, svcs))
    assert ("127.0.10.2", "q-1.h.ns.svc.cluster.local") in entries
    assert ("127.0.10.2", "h.ns.svc") in entries  # publishNotReadyAddresses
    assert ("127.0.10.1", "c.ns.svc.cluster.local") in entries
    assert not any(ip == "127.0.10.2" and name.startswith("c.") for ip, name in entries)


def test_init_containers_become_stages_before_the_first_container(tmp_path: Path) -> None:
    import stages

    pod = {
        "metadata": {"name": "p-0", "namespace": "ns", "labels": {}},
        "spec": {
            "initContainers": [
                {
                    "name": "format",
                    "command": ["sh", "-c", "echo $(X)"],
                    "env": [{"name": "X", "value": "1"}],
                }
            ],
            "containers": [
                {
                    "name": "node",
                    "command": ["run"],
                    "args": ["/data/x"],
                    "volumeMounts": [{"name": "d", "mountPath": "/data"}],
                }
            ],
        },
        "status": {},
    }
    got = stages.build(pod, {"d": "/tmp/vol"}, {}, {}, base_env={"B": "2"}, pod_dir=tmp_path)
    assert [(s.container["name"], s.init) for s in got] == [("format", True), ("node", False)]
    assert got[0].argv == ["sh", "-c", "echo 1"] and got[0].env == {"B": "2", "X": "1"}
    assert got[1].argv == ["run", "/tmp/vol/x"]
    assert got[0].logfile == tmp_path / "format.log"
    # while the init container fails: Pending, Initialized False, the failure as lastState
    got[0].exit_code, got[0].message = 3, "metaquorum-refused: no"
    st = stages.pending_status("127.0.0.9", got, 0, alive=True)
    assert st["phase"] == "Pending"
    assert {c["type"]: c["status"] for c in st["conditions"]}["Initialized"] == "False"
    (init,) = st["initContainerStatuses"]
    assert "running" in init["state"]
    assert init["lastState"]["terminated"] == {
        "exitCode": 3,
        "reason": "Error",
        "message": "metaquorum-refused: no",
        "finishedAt": init["lastState"]["terminated"]["finishedAt"],
    }
    # once it succeeded the first container runs and the init container is Completed
    got[0].exit_code = 0
    st = stages.running_status(
        "127.0.0.9", got, got[1].container, alive=True, ready=True, exit_code=0, pid=7, restarts=0
    )
    assert st["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert st["containerStatuses"][0]["ready"] is True


def test_log_tail_is_this_runs_last_lines(tmp_path: Path) -> None:
    import stages

    log = tmp_path / "c.log"
    log.write_text("old run\n")
    offset = log.stat().st_size
    with open(log, "a") as f:
        f.write("".join(f"line {i}\n" for i in range(100)))
    tail = stages.log_tail(log, offset)
    assert "old run" not in tail and tail.splitlines()[-1] == "line 99"
    assert len(tail.splitlines()) == stages.MESSAGE_LINES
